// Learned control of a search: an adversarial bandit over its choices (which kind of move to
// propose), learned online on the instance as the search runs. Exp3 (Auer et al. 2002) with a
// floor: arm a is drawn with probability (1 - floor) · w_a / Σ w + floor · prior_a, and a reward r
// of the arm drawn with probability p raises its weight by exp(rate · r / p) (importance-weighted,
// so an arm seldom drawn is not starved of credit). Rewards are scaled by a running mean of the
// positive rewards seen (a search's gains shrink as it converges; the scale follows them), and
// capped. The prior is the hand-made mix the search uses without control: the bandit starts there
// and never goes below `floor` of it, so every choice stays reachable. Deterministic: it draws
// from the caller's Rng.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "dplace/base/rng.h"

namespace dplace::place {

class Bandit {
 public:
  // `prior`: the fixed mix (non-negative, not all 0; normalised here).
  Bandit(std::vector<double> prior, double floor = 0.3, double rate = 0.05)
      : prior_(std::move(prior)), floor_(floor), rate_(rate) {
    const double sum = std::accumulate(prior_.begin(), prior_.end(), 0.0);
    for (double& p : prior_) p /= sum;
    weight_ = probability_ = prior_;
  }

  int Pick(Rng& rng) {
    double u = rng.Uniform();
    for (size_t a = 0; a + 1 < probability_.size(); ++a) {
      if (u < probability_[a]) return static_cast<int>(a);
      u -= probability_[a];
    }
    return static_cast<int>(probability_.size()) - 1;
  }

  // The gain (≥ 0; e.g. the relative improvement of the search's current value) of one pull of
  // `arm`.
  void Reward(int arm, double gain) {
    const auto a = static_cast<size_t>(arm);
    ++pulls_;
    if (gain <= 0) return;
    // The scale: the mean positive gain, decaying so that it follows a converging search.
    scale_ = scale_ == 0 ? gain : 0.95 * scale_ + 0.05 * gain;
    const double r = std::min(gain / scale_, 10.0);
    // Capped: an arm drawn with a tiny probability (a floor of 0) must not overflow.
    weight_[a] *= std::exp(std::min(rate_ * r / probability_[a], 50.0));
    const double top = *std::max_element(weight_.begin(), weight_.end());
    for (double& w : weight_) w = std::max(w / top, 1e-12);
    const double sum = std::accumulate(weight_.begin(), weight_.end(), 0.0);
    for (size_t i = 0; i < weight_.size(); ++i) {
      probability_[i] = (1 - floor_) * weight_[i] / sum + floor_ * prior_[i];
    }
  }

  const std::vector<double>& probabilities() const { return probability_; }
  int64_t pulls() const { return pulls_; }

 private:
  std::vector<double> prior_, weight_, probability_;
  double floor_, rate_;
  double scale_ = 0;
  int64_t pulls_ = 0;
};

}  // namespace dplace::place
