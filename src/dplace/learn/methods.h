// The learned methods, one row each: what the policy factory (MakePolicy), the learned placers'
// options and defaults (placeto.h ReadOptions), the registry's rows and `train --method` read. A
// new policy is a row here, its module (policy.h, episode_policies.cc) and its registry row.
// No torch here: the registry and the command line include it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace dplace::learn {

class Policy;

struct PolicyShape {
  int64_t hidden = 32;
  int64_t node_features = 12;   // kNodeFeatures (env.h)
  int64_t device_features = 8;  // kDeviceFeatures
  int64_t groups = 0;           // hdp: its grouper's most groups (the reference's 256); others 0
};

// A method's placer defaults (its reference code's where it has one).
struct MethodDefaults {
  int hidden = 64;
  double lr = 1e-4;
  double max_grad_norm = 0;  // 0: no clipping
  std::string_view algorithm = "ppo";
};

struct Method {
  std::string_view name;
  std::string_view description;  // the registry's line
  // Places every unit once from scratch, judged at the end (colocrl, hdp, gdp); else re-places
  // one unit a step from a start (placeto).
  bool whole_episode = true;
  // A trained policy ships as models/policies/NAME.pt: the placer uses it zero-shot unless told
  // to fine-tune; without one the placer trains a fresh policy on the problem.
  bool bundled = false;
  bool groups = false;  // a grouper with a most-groups option (hdp)
  MethodDefaults defaults;
  std::shared_ptr<Policy> (*make)(PolicyShape shape) = nullptr;  // fresh weights
};

std::shared_ptr<Policy> MakePlacetoPolicy(PolicyShape shape);
std::shared_ptr<Policy> MakeColocRlPolicy(PolicyShape shape);
std::shared_ptr<Policy> MakeHdpPolicy(PolicyShape shape);
std::shared_ptr<Policy> MakeGdpPolicy(PolicyShape shape);

inline constexpr Method kMethods[] = {
    {"placeto",
     "Placeto's graph-embedding policy (NeurIPS 2019) re-placing each unit in turn; a trained "
     "policy, zero-shot or fine-tuned",
     false,
     true,
     false,
     {.hidden = 32, .lr = 1e-4, .algorithm = "reinforce"},
     MakePlacetoPolicy},
    // Width and rate inferred (the paper names neither).
    {"colocrl",
     "Mirhoseini et al. 2017: an LSTM encoder and attentional decoder assign each co-location "
     "unit a device, trained on the problem with REINFORCE",
     true,
     false,
     false,
     {.hidden = 256, .lr = 1e-3, .max_grad_norm = 1, .algorithm = "reinforce"},
     MakeColocRlPolicy},
    // HDP's reference code: hidden 512, Adam lr 0.1, gradient norm clipped to 1.
    {"hdp",
     "hierarchical device placement (ICLR 2018): a learned grouper and a bi-LSTM placer trained "
     "jointly on the problem with REINFORCE",
     true,
     false,
     true,
     {.hidden = 512, .lr = 0.1, .max_grad_norm = 1, .algorithm = "reinforce"},
     MakeHdpPolicy},
    // The bundled policy's width, PPO, and a small rate for fine-tuning.
    {"gdp",
     "GDP (2019): GraphSAGE and segment-recurrent attention place every unit in one pass; a "
     "pre-trained policy, zero-shot or fine-tuned with PPO",
     true,
     true,
     false,
     {.hidden = 64, .lr = 1e-4, .algorithm = "ppo"},
     MakeGdpPolicy},
};

// The row of `name`; null when there is none.
constexpr const Method* FindMethod(std::string_view name) {
  for (const Method& m : kMethods) {
    if (m.name == name) return &m;
  }
  return nullptr;
}
// "placeto, colocrl, hdp or gdp".
std::string MethodNames(std::string_view last_joiner = " or ");

}  // namespace dplace::learn
