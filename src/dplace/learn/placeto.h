// The `placeto` placer: places a problem with a trained Placeto policy (policy.h) through the
// environment (env.h). Episodes improve a placement one unit at a time: the request's start, else
// the searches' start (registry.h SearchStart, within a quarter of the budget). It plays a greedy
// episode, then samples episodes from the policy, each starting from the best placement so far,
// within the budget (kPlacetoEvaluations when the request sets no limit), and returns the best
// placement any of them reached. With
// fine_tune, it also trains the policy on the problem between episodes (REINFORCE, train.h).
// Problems of more units than max_units are placed by coarse units (env.h PolicyUnits). Without
// LibTorch (DPLACE_WITH_TORCH=OFF) the placer does not exist.
#pragma once

#include <algorithm>
#include <memory>
#include <string>

#include "dplace/place/options.h"
#include "dplace/place/placer.h"
#include "dplace/place/search/learned_proposal.h"
#include "dplace/place/search/score.h"

namespace dplace::learn {

// The evaluations placeto makes when the request limits neither evaluations nor seconds.
inline constexpr int64_t kPlacetoEvaluations = 64;

struct PlacetoOptions {
  std::string policy;            // policy file; empty: the bundled one (DefaultPolicyPath)
  bool fine_tune = false;        // train on the problem between episodes
  int max_units = 256;           // coarsen problems of more units
  int refresh = 0;               // steps between evaluations in an episode; 0: about 16 per episode
  int episodes = 0;              // at most this many episodes; 0: as many as the budget allows
  std::string start = "search";  // where episodes begin: search | fastest
};
void ReadOptions(place::OptionReader& reader, PlacetoOptions* options);

// `start` finds where episodes begin when the request gives no start (null: fastest).
std::unique_ptr<place::Placer> MakePlacetoPlacer(
    PlacetoOptions options, std::shared_ptr<place::StartFinder> start = nullptr);

// The whole-episode learned placers: colocrl, hdp and gdp (policy.h, episode_policies.cc). Each
// episode places every unit once, beginning where placeto's do, and is judged once; an update plays
// `samples` episodes and makes one gradient step per epoch of its algorithm. colocrl and hdp train
// a fresh policy on the problem (or continue a given one); gdp places with a pre-trained policy
// (the bundled one by default), a greedy episode then samples, and with fine_tune trains it on the
// problem. Every placer returns the best placement any episode reached, within the budget
// (EpisodeEvaluations when the request sets no limit; kPlacetoEvaluations for gdp zero-shot).

// The evaluations a whole-episode placer trains for when the request sets no limit: 8 per unit it
// places, at least 16 and at most 2,000, so that the budget grows with the problem (a graph of two
// ops is placed in under a second; 2,000 evaluations on one of two ops took hdp two minutes).
inline int64_t EpisodeEvaluations(int64_t units) {
  return std::clamp<int64_t>(8 * units, 16, 2000);
}

struct EpisodePlacerOptions {
  std::string method;         // colocrl, hdp or gdp
  std::string policy;         // policy file; empty: gdp's bundled one, fresh weights for the others
  bool fine_tune = false;     // gdp: train on the problem (colocrl and hdp always train)
  int hidden = 0;             // a fresh policy's width (0: the method's default)
  int groups = 0;             // hdp: the grouper's most groups (0: 256)
  int samples = 4;            // episodes per update
  double lr = 0;              // Adam's learning rate (0: the method's default)
  double max_grad_norm = -1;  // gradient clipping (-1: the method's default; 0: none)
  std::string algorithm;      // reinforce or ppo (empty: the method's)
  double clip = 0.2;          // ppo
  int epochs = 4;             // ppo
  double entropy = 0.01;
  int max_units = 256;           // coarsen problems of more co-location units
  std::string start = "search";  // where episodes begin: search | fastest (as placeto's)
};
// The method's defaults into `options` (hidden, lr, max_grad_norm, algorithm, fine_tune), then
// the reader's values over them.
void ReadOptions(place::OptionReader& reader, EpisodePlacerOptions* options);
std::unique_ptr<place::Placer> MakeEpisodePlacer(
    EpisodePlacerOptions options, std::shared_ptr<place::StartFinder> start = nullptr);

// The learned proposal of mcmc.proposal (place/search/learned_proposal.h): `policy` names a method
// with a bundled policy (placeto, gdp) or a policy file of any method. The policy reads the
// current placement (one evaluation through the chain's evaluator, counted) and gives each unit's
// distribution over the devices with the others where they are: a whole-episode policy's steps
// with every unit kept where it is (teacher forcing), a per-step policy's observation of each
// unit in turn. InvalidInput when the policy cannot be read.
StatusOr<place::LearnedProposalFactory> PolicyProposal(const std::string& policy);

// The policy bundled with dplace for `method` (models/policies/METHOD.pt in the source tree).
std::string DefaultPolicyPath(const std::string& method = "placeto");

// How the policy in `path` was trained ("trained on N problems: U updates, ... CPU s"); empty when
// the file does not say or cannot be read.
std::string PolicyTrainingNote(const std::string& path);

// Times the Placeto embedding (bench/learn_benchmark.cc): forward and backward of a fresh policy
// over every unit of a problem (not coarsened), from one observation.
class EmbeddingTimer {
 public:
  explicit EmbeddingTimer(std::shared_ptr<const sim::Problem> problem, int hidden = 32);
  ~EmbeddingTimer();
  void ForwardBackward();
  int nodes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dplace::learn
