#include "dplace/run/suite.h"

#include <algorithm>
#include <filesystem>

#include "dplace/base/file_util.h"
#include "dplace/base/json_node.h"
#include "dplace/base/spelling.h"
#include "dplace/sim/objectives.h"

namespace dplace::run {
namespace {

namespace fs = std::filesystem;

std::string Replace(std::string text, const std::string& key, const std::string& value) {
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
    text.replace(at, key.size(), value);
  return text;
}

// The file's name up to its first dot ("alexnet" for alexnet.graph.txt).
std::string Stem(const std::string& path) {
  if (path.starts_with("gen:")) {  // gen:FAMILY:SEED:INDEX -> FAMILY_SEED_INDEX, the graph's name
    std::string name = path.substr(4);
    std::replace(name.begin(), name.end(), ':', '_');
    return name;
  }
  const std::string name = fs::path(path).filename().string();
  return name.substr(0, name.find('.'));
}

// The files `pattern` names: a path, or a folder and a file name with one '*', sorted.
StatusOr<std::vector<std::string>> Expand(const std::string& pattern, const JsonNode& node) {
  if (pattern.starts_with("gen:")) return std::vector<std::string>{pattern};  // generated
  const fs::path path(pattern);
  const std::string name = path.filename().string();
  const size_t star = name.find('*');
  if (star == std::string::npos) {
    if (!fs::exists(path)) return node.Error("no such file: " + pattern);
    return std::vector<std::string>{pattern};
  }
  const std::string prefix = name.substr(0, star), suffix = name.substr(star + 1);
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(path.parent_path(), ec)) {
    const std::string f = e.path().filename().string();
    if (f.size() >= prefix.size() + suffix.size() && f.starts_with(prefix) && f.ends_with(suffix))
      files.push_back(e.path().string());
  }
  if (ec) return node.Error("no file matches " + pattern + " (" + ec.message() + ")");
  if (files.empty()) return node.Error("no file matches " + pattern);
  std::sort(files.begin(), files.end());
  return files;
}

StatusOr<std::vector<std::string>> Strings(const JsonNode& node) {
  DPLACE_ASSIGN_OR_RETURN(auto elements, node.Elements());
  std::vector<std::string> out;
  for (const JsonNode& e : elements) {
    DPLACE_ASSIGN_OR_RETURN(std::string s, e.String());
    out.push_back(std::move(s));
  }
  return out;
}

// A regime or the reference: its name and placers (or one placer), limits and options.
Status ReadRegime(const JsonNode& node, Regime* r) {
  if (auto n = node.OptionalField("name")) {
    DPLACE_ASSIGN_OR_RETURN(r->name, n->String());
  }
  if (auto n = node.OptionalField("placer")) {
    DPLACE_ASSIGN_OR_RETURN(std::string p, n->String());
    r->placers = {p};
    if (r->name.empty()) r->name = "reference";
  }
  if (auto n = node.OptionalField("placers")) {
    DPLACE_ASSIGN_OR_RETURN(r->placers, Strings(*n));
  }
  if (auto n = node.OptionalField("seconds")) {
    DPLACE_ASSIGN_OR_RETURN(r->seconds, n->NonNegativeNumber());
  }
  if (auto n = node.OptionalField("evaluations")) {
    DPLACE_ASSIGN_OR_RETURN(r->evaluations, n->Integer());
  }
  if (auto n = node.OptionalField("options")) {
    DPLACE_ASSIGN_OR_RETURN(r->options, Strings(*n));
  }
  if (r->name.empty() || r->placers.empty()) {
    return node.Error("a regime needs a name and placers");
  }
  return OkStatus();
}

Status AddWorkloads(const JsonNode& node, const SuiteFolders& folders, Suite* suite) {
  DPLACE_RETURN_IF_ERROR(
      node.OnlyKeys({"files", "name", "clusters", "training", "expert", "expert_stems", "split"}));
  auto fill = [&](std::string text) {
    return Replace(Replace(std::move(text), "{data}", folders.data), "{models}", folders.models);
  };
  DPLACE_ASSIGN_OR_RETURN(JsonNode files_node, node.Field("files"));
  DPLACE_ASSIGN_OR_RETURN(std::vector<std::string> patterns, Strings(files_node));
  std::vector<std::string> files;
  for (const std::string& p : patterns) {
    DPLACE_ASSIGN_OR_RETURN(auto matched, Expand(fill(p), files_node));
    files.insert(files.end(), matched.begin(), matched.end());
  }
  DPLACE_ASSIGN_OR_RETURN(JsonNode name_node, node.Field("name"));
  DPLACE_ASSIGN_OR_RETURN(std::string name, name_node.String());
  std::vector<std::string> clusters = {""};
  if (auto c = node.OptionalField("clusters")) {
    DPLACE_ASSIGN_OR_RETURN(clusters, Strings(*c));
  }
  std::vector<bool> trainings = {false};
  if (auto t = node.OptionalField("training")) {
    DPLACE_ASSIGN_OR_RETURN(auto elements, t->Elements());
    trainings.clear();
    for (const JsonNode& e : elements) {
      DPLACE_ASSIGN_OR_RETURN(bool b, e.Bool());
      trainings.push_back(b);
    }
  }
  std::string expert;
  if (auto e = node.OptionalField("expert")) {
    DPLACE_ASSIGN_OR_RETURN(expert, e->String());
  }
  std::string split;
  if (auto e = node.OptionalField("split")) {
    DPLACE_ASSIGN_OR_RETURN(split, e->String());
  }
  std::vector<std::pair<std::string, JsonNode>> renames;
  if (auto r = node.OptionalField("expert_stems")) {
    DPLACE_ASSIGN_OR_RETURN(renames, r->Members());
  }
  for (const std::string& cluster : clusters) {
    for (const std::string& file : files) {
      for (const bool training : trainings) {
        const std::string stem = Stem(file);
        std::string expert_stem = stem;
        for (const auto& [from, to] : renames) {
          if (from == stem) {
            DPLACE_ASSIGN_OR_RETURN(expert_stem, to.String());
          }
        }
        SuiteWorkload w{
            .name = Replace(Replace(Replace(name, "{stem}", stem), "{cluster}", cluster), "{train}",
                            training ? "+train" : ""),
            .graph = file,
            .cluster = cluster,
            .training = training,
            .split = split};
        const std::string plan = Replace(fill(expert), "{expert_stem}", expert_stem);
        if (!expert.empty() && fs::exists(plan)) w.expert = plan;
        suite->workloads.push_back(std::move(w));
      }
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<Suite> LoadSuite(const std::string& suite, const std::string& manifests,
                          const SuiteFolders& folders) {
  std::string file = suite;
  if (!suite.ends_with(".json")) {
    file = manifests + "/" + suite + ".json";
    if (!fs::exists(file)) {
      std::vector<std::string> known;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(manifests, ec)) {
        if (e.path().extension() == ".json") known.push_back(e.path().stem().string());
      }
      std::sort(known.begin(), known.end());
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return InvalidInput("--suite: '" + suite + "' is not a suite" + DidYouMean(suite, known) +
                          " (known: " + list + "; or a dplace-suite/1 file)");
    }
  }
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadFile(file));
  auto parsed = ParseJson(text);
  if (!parsed.ok()) return parsed.status().WithContext(file);
  const JsonNode root(*parsed, "(top level)");
  auto fail = [&](const Status& s) { return s.WithContext(file); };
  Suite out{.name = fs::path(file).stem().string()};
  Status s = root.OnlyKeys({"format", "description", "objective", "placers", "options", "compare",
                            "expert_rule", "workloads", "reference", "regimes"});
  if (!s.ok()) return fail(s);
  auto format = root.Field("format");
  if (!format.ok() || format->json() != "dplace-suite/1") {
    return InvalidInput(file + ": \"format\" must be \"dplace-suite/1\"");
  }
  auto string_field = [&](const char* key, std::string* value) -> Status {
    DPLACE_ASSIGN_OR_RETURN(JsonNode n, root.Field(key));
    DPLACE_ASSIGN_OR_RETURN(*value, n.String());
    return OkStatus();
  };
  auto bool_field = [&](const char* key, bool* value) -> Status {
    if (auto n = root.OptionalField(key)) {
      DPLACE_ASSIGN_OR_RETURN(*value, n->Bool());
    }
    return OkStatus();
  };
  for (const Status& st :
       {string_field("description", &out.description), string_field("objective", &out.objective),
        bool_field("compare", &out.compare), bool_field("expert_rule", &out.expert_rule)}) {
    if (!st.ok()) return fail(st);
  }
  if (auto o = sim::ObjectiveNamed(out.objective); !o.ok()) return o.status().WithContext(file);
  auto placers = root.Field("placers");
  if (!placers.ok()) return fail(placers.status());
  auto names = Strings(*placers);
  if (!names.ok()) return fail(names.status());
  out.placers = std::move(*names);
  if (auto options = root.OptionalField("options")) {
    auto specs = Strings(*options);
    if (!specs.ok()) return fail(specs.status());
    out.options = std::move(*specs);
  }
  if (auto r = root.OptionalField("reference")) {
    Status st = r->OnlyKeys({"placer", "seconds", "evaluations"});
    if (st.ok()) st = ReadRegime(*r, &out.reference.emplace());
    if (!st.ok()) return fail(st);
  }
  if (auto regimes = root.OptionalField("regimes")) {
    auto list = regimes->Elements();
    if (!list.ok()) return fail(list.status());
    for (const JsonNode& r : *list) {
      Status st = r.OnlyKeys({"name", "placers", "seconds", "evaluations", "options", "ladder"});
      Regime regime;
      if (st.ok()) st = ReadRegime(r, &regime);
      if (!st.ok()) return fail(st);
      // A ladder: one regime per rung, NAME@E with E evaluations (a value-per-evaluations curve).
      auto ladder = r.OptionalField("ladder");
      if (!ladder) {
        out.regimes.push_back(std::move(regime));
        continue;
      }
      auto rungs = ladder->Elements();
      if (!rungs.ok()) return fail(rungs.status());
      for (const JsonNode& rung : *rungs) {
        auto e = rung.Integer();
        if (!e.ok() || *e < 1) return fail(rung.Error("a ladder's rungs are evaluations (>= 1)"));
        Regime step = regime;
        step.name += "@" + std::to_string(*e);
        step.evaluations = *e;
        out.regimes.push_back(std::move(step));
      }
    }
  }
  auto workloads = root.Field("workloads");
  if (!workloads.ok()) return fail(workloads.status());
  auto elements = workloads->Elements();
  if (!elements.ok()) return fail(elements.status());
  for (const JsonNode& w : *elements) {
    Status added = AddWorkloads(w, folders, &out);
    if (!added.ok()) return fail(added);
  }
  return out;
}

}  // namespace dplace::run
