#include "dplace/place/search/move_scorer.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "dplace/base/json_node.h"

namespace dplace::place {

MoveContext::MoveContext(const sim::Problem& p, const Units& units,
                         const IdVector<sim::OpId, UnitId>& unit_of_op)
    : p_(p),
      units_(units),
      unit_of_op_(unit_of_op),
      crossings_(units.size()),
      critical_(units.size()) {
  const graph::Graph& g = p.g();
  const auto devices = static_cast<size_t>(p.num_devices());
  compute_.assign(units.size() * devices, 0);
  for (UnitId u : units.ids()) {
    for (sim::OpId op : units[u].ops) {
      for (hw::DeviceId d{0}; d < p.num_devices(); ++d) {
        compute_[static_cast<size_t>(u.index()) * devices + static_cast<size_t>(d.index())] +=
            p.costs.OpTime(op, d);
      }
      for (graph::TensorId t : g.Inputs(op)) {
        const UnitId from = unit_of_op[g.tensor(t).producer];
        if (from != u) crossings_[u].push_back({&g.tensor(t), from, /*incoming=*/true});
      }
      for (graph::TensorId t = g.FirstOutput(op); t < g.FirstOutput(op + 1); ++t) {
        // A tensor goes once to each other unit that reads it.
        std::vector<UnitId> readers;
        for (sim::OpId c : g.Consumers(t)) {
          const UnitId to = unit_of_op[c];
          if (to != u && std::find(readers.begin(), readers.end(), to) == readers.end()) {
            readers.push_back(to);
            crossings_[u].push_back({&g.tensor(t), to, /*incoming=*/false});
          }
        }
      }
    }
  }
  busy_.assign(devices, 0);
  headroom_.assign(devices, std::numeric_limits<double>::infinity());
  capacity_ = headroom_;
}

void MoveContext::Refresh(const sim::Evaluation& e, const std::vector<sim::OpId>& critical_path) {
  makespan_ = e.value;
  for (size_t d = 0; d < busy_.size() && d < e.devices.size(); ++d) {
    const sim::DeviceReport& r = e.devices[sim::DeviceId(static_cast<int32_t>(d))];
    busy_[d] = r.busy_s;
    capacity_[d] = r.memory_capacity_bytes > 0 ? r.memory_capacity_bytes
                                               : std::numeric_limits<double>::infinity();
    headroom_[d] = capacity_[d] - r.peak_memory_bytes;
  }
  std::fill(critical_.begin(), critical_.end(), 0);
  for (sim::OpId op : critical_path) critical_[unit_of_op_[op]] = 1;
}

MoveScorer::MoveScorer(Kind kind) : kind_(kind) {
  if (kind_ == Kind::kHand) {
    // The critical path's own change counts whole; off it, a change of transfers or compute
    // delays the step only where it makes a new critical path: a fifth of it; a busier target a
    // tenth; going past memory a lot.
    w_ = {0, 0, 0.2, 0.2, 0.1, 0.8, 10};
  } else {
    for (int i = 0; i < kMoveFeatures; ++i) inverse_[i * kMoveFeatures + i] = 1e3;
  }
}

MoveScorer MoveScorer::Pretrained(const std::array<double, kMoveFeatures>& weights) {
  MoveScorer s(Kind::kLearned);
  s.w_ = weights;
  for (int i = 0; i < kMoveFeatures; ++i) s.inverse_[i * kMoveFeatures + i] = 1;
  return s;
}

namespace {
constexpr const char* kScorerFormat = "dplace-move-scorer/1";
}  // namespace

std::string MoveScorer::Text() const {
  std::ostringstream out;
  out.precision(17);
  out << kScorerFormat << "\n";
  for (int i = 0; i < kMoveFeatures; ++i) out << (i > 0 ? " " : "") << w_[i];
  out << "\n";
  return out.str();
}

StatusOr<MoveScorer> MoveScorer::ForGuide(const std::string& guide, const std::string& model) {
  if (guide == "hand") return MoveScorer(Kind::kHand);
  if (model == "zero") return MoveScorer(Kind::kLearned);
  // The bundled fit, models/move_scorer.txt as it was when dplace was built.
  if (model == "bundled") return Parse(DPLACE_MOVE_SCORER, "models/move_scorer.txt");
  return Read(model);
}

StatusOr<MoveScorer> MoveScorer::Read(const std::string& path) {
  StatusOr<std::string> read = ReadFile(path);
  if (!read.ok()) return read.status().WithContext(path);
  return Parse(*read, path);
}

StatusOr<MoveScorer> MoveScorer::Parse(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::string format;
  if (!std::getline(in, format) || format != kScorerFormat) {
    return InvalidInput(path + ": line 1: not a move scorer (expected '" + kScorerFormat + "')");
  }
  std::array<double, kMoveFeatures> w{};
  for (int i = 0; i < kMoveFeatures; ++i) {
    if (!(in >> w[i]) || !std::isfinite(w[i])) {
      return InvalidInput(path + ": line 2: weight " + std::to_string(i + 1) + " of " +
                          std::to_string(kMoveFeatures) + " is missing or not a finite number");
    }
  }
  std::string rest;
  if (in >> rest)
    return InvalidInput(path + ": line 2: more than " + std::to_string(kMoveFeatures) +
                        " weights ('" + rest + "')");
  return Pretrained(w);
}

double MoveScorer::Predict(const MoveFeatures& f) const {
  double y = 0;
  for (int i = 0; i < kMoveFeatures; ++i) y += w_[i] * f[i];
  return y;
}

void MoveScorer::Learn(const MoveFeatures& f, double label, bool exact) {
  if (kind_ == Kind::kHand) return;
  const double predicted = Predict(f);
  if (!exact && predicted >= label) return;  // censored: known only to be above `label`
  // Recursive least squares with forgetting: k = P f / (λ + fᵀ P f), w += k (y − wᵀf),
  // P = (P − k fᵀ P) / λ.
  constexpr double kForget = 0.999;
  std::array<double, kMoveFeatures> pf{};
  for (int i = 0; i < kMoveFeatures; ++i) {
    for (int j = 0; j < kMoveFeatures; ++j) pf[i] += inverse_[i * kMoveFeatures + j] * f[j];
  }
  double denominator = kForget;
  for (int i = 0; i < kMoveFeatures; ++i) denominator += f[i] * pf[i];
  const double error = label - predicted;
  for (int i = 0; i < kMoveFeatures; ++i) w_[i] += pf[i] / denominator * error;
  for (int i = 0; i < kMoveFeatures; ++i) {
    for (int j = 0; j < kMoveFeatures; ++j) {
      inverse_[i * kMoveFeatures + j] =
          (inverse_[i * kMoveFeatures + j] - pf[i] * pf[j] / denominator) / kForget;
    }
  }
  ++examples_;
}

void ReadGuideModel(OptionReader& r, std::string* model) {
  r.Read("guide_model", model,
         "learned: the move scorer to start from: bundled (models/move_scorer.txt, compiled in; "
         "bench/move_scorer_fit makes it), zero or a file");
  if (StatusOr<MoveScorer> read = MoveScorer::ForGuide("learned", *model); !read.ok()) {
    r.Fail("guide_model", std::string(read.status().message()));
  }
}

}  // namespace dplace::place
