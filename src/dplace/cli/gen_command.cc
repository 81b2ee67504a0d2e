#include <filesystem>
#include <iostream>

#include "dplace/base/file_util.h"
#include "dplace/cli/commands.h"
#include "dplace/graph/families.h"
#include "dplace/graph/training.h"
#include "dplace/io/graph_json.h"

namespace dplace::cli {

Status RunGen(const GenFlags& flags) {
  if (flags.count < 1 || flags.count > 10000) {
    return InvalidInput("--count: must be between 1 and 10000, not " + std::to_string(flags.count));
  }
  graph::FamilyOverrides overrides;
  for (const std::string& kv : flags.sets) {
    const size_t eq = kv.find('=');
    char* end = nullptr;
    const double value = eq == std::string::npos ? 0 : std::strtod(kv.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == kv.c_str() + eq + 1 || *end != '\0') {
      return InvalidInput("--set " + kv + ": expected KEY=NUMBER");
    }
    overrides[kv.substr(0, eq)] = value;
  }
  // Every graph is made (and checked) before the first is written: a bad parameter leaves no
  // partial family behind.
  std::vector<std::pair<std::string, std::string>> files;
  for (int i = 0; i < flags.count; ++i) {
    auto made = graph::GenerateGraph(flags.family, flags.seed, i, overrides);
    if (!made.ok()) return made.status().WithContext(flags.family);
    graph::Graph g = std::move(made).value();
    if (flags.training) {
      DPLACE_ASSIGN_OR_RETURN(g, graph::ExpandTraining(g));
    }
    files.emplace_back(g.name() + ".json", io::WriteDplaceGraph(g).dump(1) + "\n");
  }
  std::error_code ec;
  std::filesystem::create_directories(flags.out, ec);
  if (ec) return InvalidInput("--out " + flags.out + ": " + ec.message());
  for (const auto& [name, content] : files) {
    const std::string path = (std::filesystem::path(flags.out) / name).string();
    DPLACE_RETURN_IF_ERROR(WriteFileAtomically(path, content));
    if (!flags.quiet) std::cout << path << "\n";
  }
  return OkStatus();
}

}  // namespace dplace::cli
