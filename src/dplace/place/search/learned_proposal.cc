#include "dplace/place/search/learned_proposal.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "dplace/place/search/moves.h"

namespace dplace::place {

LearnedMoves::LearnedMoves(const Units& units, LearnedProposal* model, double uniform,
                           int64_t refresh, double time_share, std::function<bool()> stop)
    : units_(units),
      model_(model),
      stop_(std::move(stop)),
      uniform_(uniform),
      refresh_(refresh),
      time_share_(time_share) {}

bool LearnedMoves::Propose(const UnitMoves& state, Rng& rng, Proposal* p) {
  if (model_ == nullptr) return false;
  const Units& units = units_;
  const size_t n = units.size();
  const auto devices = static_cast<size_t>(state.problem().num_devices());
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  if (probabilities_.empty() ||
      (state.accepted() - refreshed_at_ >= refresh_ &&
       (time_share_ <= 0 ||
        seconds(Clock::now() - refreshed_) >= last_s_ * (1 - time_share_) / time_share_))) {
    const auto began = Clock::now();
    status_ = model_->Score(state.current(), &probabilities_, stop_);
    refreshed_ = Clock::now();
    last_s_ = seconds(refreshed_ - began);
    refresh_s_ += last_s_;
    refreshed_at_ = state.accepted();
    ++refreshes_;
    cut_ = status_.ok() && probabilities_.empty();
    if (!status_.ok() || cut_) {
      model_ = nullptr;
      return false;
    }
  }
  auto pi = [&](UnitId u, sim::DeviceId d) {
    return probabilities_[static_cast<size_t>(u.index()) * devices + d.index()];
  };
  weights_.resize(n);
  double total = 0;
  for (UnitId u : units.ids()) {
    weights_[u.index()] = std::max(0.0, 1 - pi(u, state.device(u)));
    total += weights_[u.index()];
  }
  const double eps = uniform_;
  const bool uniform = total <= 0 || rng.Uniform() < eps;
  UnitId u = static_cast<UnitId>(rng.Below(n));
  if (!uniform) {
    double r = rng.Uniform() * total;
    for (size_t i = 0; i < n; ++i) {
      r -= weights_[i];
      if (r < 0 || i + 1 == n) {
        u = UnitId(static_cast<int32_t>(i));
        break;
      }
    }
  }
  const sim::DeviceId from = state.device(u);
  p->units.assign(1, u);
  p->targets.clear();
  double mass = 0;
  for (sim::DeviceId d : units[u].devices) {
    if (d == from) continue;
    p->targets.push_back(d);
    mass += pi(u, d);
  }
  ++proposals_;
  if (p->targets.empty()) return true;  // u can go nowhere else: a proposal that moves nothing
  sim::DeviceId to = p->targets[rng.Below(p->targets.size())];
  if (!uniform && mass > 0) {
    double r = rng.Uniform() * mass;
    for (sim::DeviceId d : p->targets) {
      r -= pi(u, d);
      to = d;
      if (r < 0) break;
    }
  }
  // The mixture's probability of this move and of the move back (u from `to` to `from`): the
  // weights change only in u's term. Where no unit has weight the mixture is the uniform
  // proposal alone.
  const double k = static_cast<double>(p->targets.size());
  const double one_of = 1 / (static_cast<double>(n) * k);  // the uniform proposal's
  auto mixture = [&](double weights, double pi_target) {
    return weights > 0 ? (1 - eps) * pi_target / weights + eps * one_of : one_of;
  };
  const double back_total = total - weights_[u.index()] + std::max(0.0, 1 - pi(u, to));
  const double there = mixture(total, pi(u, to));
  const double back = mixture(back_total, pi(u, from));
  p->targets.assign(1, to);
  p->log_correction = back > 0 ? std::log(back / there) : -std::numeric_limits<double>::infinity();
  return true;
}

}  // namespace dplace::place
