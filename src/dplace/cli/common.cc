#include "dplace/cli/common.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "dplace/base/file_util.h"
#include "dplace/base/units.h"
#include "dplace/io/paper_json.h"
#include "dplace/io/plan_export.h"
#include "dplace/io/plan_json.h"
#include "dplace/report/chrome_trace.h"
#include "dplace/sim/fit.h"
#include "dplace/sim/step_sim.h"

namespace dplace::cli {

Status WithFlagNames(const Status& status) {
  std::string m = status.message();
  // The run service's field, and its flag where that is not "--" and the field.
  for (const auto& [field, named] : std::initializer_list<std::pair<std::string, std::string>>{
           {"shapes", ""},
           {"unit", ""},
           {"training", ""},
           {"dtype", ""},
           {"cluster", ""},
           {"objective", ""},
           {"runtime", ""},
           {"schedule", ""},
           {"recompute", ""},
           {"replicas", ""},
           {"export", ""},
           {"stages", ""},
           {"devices", ""},
           {"time_limit", "--time-limit"},
           {"total_time_limit", "--total-time-limit"},
           {"evaluations", ""},
           {"coarsen", ""},
           {"options", "--opt"},
           {"placer", ""}}) {
    const std::string flag = named.empty() ? "--" + field : named;
    // "fix it with shapes NAME=DIMS": the field named inside a sentence.
    const std::string with = "with " + field + " ";
    if (const size_t at = m.find(with); at != std::string::npos)
      m.replace(at + 5, field.size(), flag);
    const std::string key = field + ": ";
    for (size_t at = m.find(key); at != std::string::npos; at = m.find(key, at + 1)) {
      if (at == 0 || (at >= 2 && m.compare(at - 2, 2, ": ") == 0)) {
        m.replace(at, field.size(), flag);
        break;
      }
    }
  }
  return Status(status.code(), m);
}

StatusOr<run::ValidRequest> ValidateFromFlags(run::RunRequest request,
                                              std::vector<std::string> placers,
                                              double total_time_limit_s) {
  auto valid = run::Validate(std::move(request), std::move(placers), total_time_limit_s);
  if (!valid.ok()) return WithFlagNames(valid.status());
  return valid;
}

StatusOr<std::pair<sim::RobustOptions, bool>> RobustFromFlags(const RobustFlags& flags) {
  auto parsed = run::RobustFromSpec(flags);
  if (parsed.ok()) return parsed;
  // The run service names its fields; the command line names its flags.
  std::string m = parsed.status().message();
  for (const auto& [field, flag] :
       {std::pair<std::string, std::string>{"robust_objective: ", "--robust-objective: "},
        {"robust_spread: ", "--robust-spread: "},
        {"robust: ", "--robust: "},
        {"needs robust K", "needs --robust K"}}) {
    if (const size_t at = m.find(field); at != std::string::npos) m.replace(at, field.size(), flag);
  }
  return Status(parsed.status().code(), m);
}

StatusOr<io::LoadedGraph> GraphFromFlags(const GraphFlags& flags) {
  auto loaded = run::LoadGraphFile(flags);
  if (!loaded.ok()) return WithFlagNames(loaded.status());
  return loaded;
}

StatusOr<LoadedProblem> ProblemFromFlags(const ProblemFlags& flags) {
  auto loaded = run::LoadProblem(flags);
  if (!loaded.ok()) return WithFlagNames(loaded.status());
  return loaded;
}

void PrintJson(const Json& j) { std::cout << j.dump(2) << std::endl; }

}  // namespace dplace::cli
