// What a move is worth, predicted: the features of moving one co-location unit to a device, read
// from what the simulator said of the current placement at the last re-base, and a linear model
// of the move's exact relative change of the step time (Δ / current value) over them.
//
// Features of moving unit u from its device `cur` to `to` (times relative to the step time M):
//   0  1 (bias)
//   1  u on the critical path (1 or 0)
//   2  the change of the transfers u's tensors need: for each tensor between u and a unit on
//      another device (a neighbour's device as it is now), its transfer time over the link it then
//      takes, after the move minus before (positive: more to send)
//   3  the change of u's compute time, Σ op time on `to` − on `cur`
//   4  the load of `to` minus the load of `cur` (busy seconds at the last re-base)
//   5  feature 1 × (feature 2 + feature 3): on the critical path a change of u's own time shows
//   6  memory: how far `to`'s peak plus u's footprint is past its capacity (0 when it fits)
// Building them costs a pass over u's tensors that cross to other units (tens of nanoseconds
// per tensor).
//
// The model: hand-set weights (Kind::kHand: the critical path's own change whole, a fifth of the
// transfers' and compute's, a tenth of the load difference, memory past capacity heavily) or
// weights fit online on the instance by recursive least squares (forgetting factor 0.999, so older
// moves of a changed placement weigh less) on every move the search evaluates exactly: each
// evaluation the search makes is a labelled example. A move whose simulation gave up early (it was
// worse than the acceptance threshold) is a censored label: it teaches only when the model
// predicted less than that threshold. A learned scorer may start from weights fit offline
// (bench/move_scorer_fit, mcmc.guide_model): exact labels of single-unit moves on the generated
// families' training graphs, by least squares.
#pragma once

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/cost/cost_model.h"
#include "dplace/place/options.h"
#include "dplace/place/units.h"
#include "dplace/sim/evaluation.h"
#include "dplace/sim/problem.h"

namespace dplace::place {

inline constexpr int kMoveFeatures = 7;
using MoveFeatures = std::array<double, kMoveFeatures>;

class MoveContext {
 public:
  MoveContext(const sim::Problem& problem, const Units& units,
              const IdVector<sim::OpId, UnitId>& unit_of_op);
  // What the last base simulation said: its value, per device busy time and peak memory, and the
  // ops of its critical path.
  void Refresh(const sim::Evaluation& evaluation, const std::vector<sim::OpId>& critical_path);
  bool ready() const { return makespan_ > 0; }
  // `device_of(v)`: where unit v is now.
  template <typename DeviceOf>
  MoveFeatures Features(UnitId u, sim::DeviceId to, const DeviceOf& device_of) const;

 private:
  struct Crossing {
    const graph::Tensor* tensor;
    UnitId other;
    bool incoming;  // the tensor comes from `other`
  };
  const sim::Problem& p_;
  const Units& units_;
  const IdVector<sim::OpId, UnitId>& unit_of_op_;
  PerUnit<std::vector<Crossing>> crossings_;
  std::vector<double> compute_;  // [unit × devices]: Σ op time of the unit on each device
  PerUnit<char> critical_;
  std::vector<double> busy_, headroom_, capacity_;  // per device: busy s; capacity − peak; bytes
  double makespan_ = 0;
};

class MoveScorer {
 public:
  enum class Kind { kHand, kLearned };
  explicit MoveScorer(Kind kind);
  // A learned scorer that starts from `weights`, refined online from there (RLS's P starts at the
  // identity, not at 1e3 times it: the prior gives way over hundreds of labels, not at the first).
  static MoveScorer Pretrained(const std::array<double, kMoveFeatures>& weights);
  // The weights as a file: "dplace-move-scorer/1" on its first line, the seven weights on the
  // second, and back. A missing or bad file is InvalidInput naming it and the problem.
  std::string Text() const;
  static StatusOr<MoveScorer> Read(const std::string& path);
  // The same from the file's text; `path` names it in errors.
  static StatusOr<MoveScorer> Parse(const std::string& text, const std::string& path);
  // The scorer a guided search starts from: `guide` "hand", the hand-set weights; "learned", the
  // weights `model` names: "bundled" (models/move_scorer.txt, bench/move_scorer_fit's), "zero"
  // (from zero) or a file's (Read).
  static StatusOr<MoveScorer> ForGuide(const std::string& guide, const std::string& model);
  // The predicted relative change of the step time.
  double Predict(const MoveFeatures& f) const;
  // An exact label (`exact`) or a censored one: the change is known to exceed `label`.
  void Learn(const MoveFeatures& f, double label, bool exact);
  int64_t examples() const { return examples_; }
  const std::array<double, kMoveFeatures>& weights() const { return w_; }

 private:
  Kind kind_;
  std::array<double, kMoveFeatures> w_{};
  std::array<double, kMoveFeatures * kMoveFeatures> inverse_{};  // RLS's P
  int64_t examples_ = 0;
};

template <typename DeviceOf>
MoveFeatures MoveContext::Features(UnitId u, sim::DeviceId to, const DeviceOf& device_of) const {
  const sim::DeviceId cur = device_of(u);
  const hw::Cluster& c = p_.c();
  double transfer = 0;
  for (const Crossing& x : crossings_[u]) {
    const sim::DeviceId there = device_of(x.other);
    auto cost = [&](sim::DeviceId here) {
      if (here == there) return 0.0;
      return cost::TransferTime(
          *x.tensor, x.incoming ? c.LinkBetween(there, here) : c.LinkBetween(here, there));
    };
    transfer += cost(to) - cost(cur);
  }
  const auto devices = static_cast<size_t>(p_.num_devices());
  const size_t row = static_cast<size_t>(u.index()) * devices;
  const double compute = compute_[row + static_cast<size_t>(to.index())] -
                         compute_[row + static_cast<size_t>(cur.index())];
  const double m = makespan_ > 0 ? makespan_ : 1;
  const double critical = critical_[u] ? 1.0 : 0.0;
  const auto at = [](const std::vector<double>& v, sim::DeviceId d) {
    return v[static_cast<size_t>(d.index())];
  };
  const double over = to == cur ? 0 : units_[u].footprint_bytes - at(headroom_, to);
  const double capacity = at(capacity_, to);
  return {1.0,
          critical,
          transfer / m,
          compute / m,
          (at(busy_, to) - at(busy_, cur)) / m,
          critical * (transfer + compute) / m,
          over > 0 && capacity > 0 && std::isfinite(capacity) ? over / capacity : 0.0};
}

// Reads a placer's `guide_model` option (bundled, zero or a move scorer file), reading a file at
// once so that a bad one fails with the options.
void ReadGuideModel(OptionReader& r, std::string* model);

}  // namespace dplace::place
