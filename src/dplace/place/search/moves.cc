#include "dplace/place/search/moves.h"

namespace dplace::place {

UnitMoves::UnitMoves(const sim::Problem& problem, const Units& units, sim::Evaluator& evaluator,
                     int64_t rebase_every, bool track_best)
    : problem_(problem),
      units_(units),
      evaluator_(evaluator),
      incremental_(evaluator.Incremental()),
      rebase_every_(rebase_every),
      track_best_(track_best) {}

void UnitMoves::Restart(const sim::Placement& placement, const Score& score) {
  current_ = placement;
  score_ = score;
  unit_device_.resize(units_.size());
  for (UnitId u : units_.ids()) {
    unit_device_[u] = units_[u].ops.empty() ? sim::DeviceId(0) : current_[units_[u].ops[0]];
  }
  if (track_best_ && (best_.empty() || score < best_score_)) best_ = placement, best_score_ = score;
  Rebase();
}

void UnitMoves::Keep(const std::vector<UnitId>& moved, sim::DeviceId to, const Score& score) {
  for (UnitId v : moved) Assign(units_[v], to, &current_);
  if (on_improve && score < score_) on_improve(moved);
  for (UnitId v : moved) unit_device_[v] = to;
  Kept(score);
}

void UnitMoves::KeepEach(const std::vector<UnitId>& moved, const std::vector<sim::DeviceId>& to,
                         const Score& score) {
  for (size_t i = 0; i < moved.size(); ++i) Assign(units_[moved[i]], to[i], &current_);
  if (on_improve && score < score_) on_improve(moved);
  for (size_t i = 0; i < moved.size(); ++i) unit_device_[moved[i]] = to[i];
  Kept(score);
}

void UnitMoves::Kept(const Score& score) {
  score_ = score;
  if (++accepted_ % rebase_every_ == 0) Rebase();
  if (track_best_ && score < best_score_) {
    best_score_ = score;
    best_ = current_;
  }
}

void UnitMoves::Rebase() {
  // Proposals re-simulate from where they differ.
  if (incremental_ != nullptr) incremental_->SetBase(current_);
  if (on_rebase) on_rebase();
}

}  // namespace dplace::place
