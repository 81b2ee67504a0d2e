// A seeded fuzzer over the surfaces added after the importers: generated graphs (family parameters
// given with --set, and gen:FAMILY:SEED:INDEX specs), placer options (--opt PLACER.KEY=VALUE, each
// placer made with a value and, when it takes it, run on a small problem under a 1-s, 200-
// evaluation budget), policy files (the bundled ones with bytes flipped, cut, zeroed or
// inserted, given to the learned placers; only where LibTorch is built in), where files meet
// (two outputs and the inputs of a run, named by path, ./, a link, a chain of links, a hard link,
// a FIFO, /dev/null, /dev/full, a folder: checked as the command line checks them, then written;
// no input, link, FIFO or device may be replaced, a refusal is bad input) and requests (limits,
// options and robust options through run::Validate, and export formats through
// run::SpecForExports).
//
// An input passes when it ends in a result or a bad-input Status: an internal error, a sanitizer
// report or a signal is a finding; an input that takes more than --hang-seconds (placements: more
// than their 1-s limit + 10% + 1 s) is a hang. The regression inputs in testdata/fuzz/surfaces/
// (one input per line, "gen|opt|policy|files|request <fields>") run first, every time.
//
//   surface_fuzz [--inputs N] [--seconds S] [--seed K] [--hang-seconds H]
//                [--only gen|opt|policy|files|request]
//                [--verbose]
// Prints per surface the inputs run and how they ended; exits 1 on any finding.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dplace/base/file_util.h"
#include "dplace/cli/common.h"
#include "dplace/graph/families.h"
#include "dplace/io/load.h"
#include "dplace/registry/registry.h"
#include "dplace/run/exports.h"
#include "dplace/run/run.h"
#include "dplace/sim/evaluator.h"
#include "fuzz_flags.h"

namespace {

namespace fs = std::filesystem;
using dplace::Status;
using dplace::StatusCode;

// Values a user may type for a number or a name.
const char* kValues[] = {"nan",  "-nan",       "inf",  "-inf",       "0",     "-1",    "1e308",
                         "-0",   "1e-300",     "",     "x",          "true",  "1.5",   "2",
                         "64",   "2147483648", "1e9",  "4294967296", "0x10",  "1,2",   " 3",
                         "mcmc", "placeto",    "all",  "portfolio",  "heft",  "none",  "1e6",
                         "8",    "100000",     "0.99", "-1e-9",      "12abc", "16 16", "\t"};
const double kNumbers[] = {std::nan(""), INFINITY, -INFINITY, 0,   -1,     1e308, -1e308,
                           1e-300,       0.5,      2,         3,   7,      64,    1000,
                           2147483648.0, 1e9,      -0.0,      1.5, 100000, 12,    4.2e18};

// The time bound holds for release builds; under AddressSanitizer everything runs slower.
#if defined(__SANITIZE_ADDRESS__)
constexpr double kSlowdown = 5;
#else
constexpr double kSlowdown = 1;
#endif

struct Tally {
  int64_t inputs = 0, accepted = 0, refused = 0, findings = 0;
};

class Fuzzer {
 public:
  Fuzzer(uint64_t seed, fs::path root, fs::path dir)
      : rng_(seed), root_(std::move(root)), dir_(std::move(dir)) {
    auto graph = dplace::io::LoadGraph((root_ / "testdata/fuzz/seeds/graph.json").string());
    auto cluster = dplace::io::LoadCluster("k80x4");
    if (graph.ok() && cluster.ok()) {
      auto made = dplace::sim::MakeProblem(graph->graph, *cluster, dplace::sim::Objective::kStep,
                                           dplace::cost::RooflineCostModel());
      if (made.ok()) problem_ = std::make_shared<const dplace::sim::Problem>(*std::move(made));
    }
    for (const char* method : {"placeto", "gdp"}) {
      const fs::path p = root_ / "models/policies" / (std::string(method) + ".pt");
      if (dplace::place::FindPlacer(method).ok() && fs::exists(p)) {
        std::ifstream in(p, std::ios::binary);
        std::stringstream bytes;
        bytes << in.rdbuf();
        policies_.emplace_back(method, bytes.str());
      }
    }
  }
  bool ready() const { return problem_ != nullptr; }
  bool has_policies() const { return !policies_.empty(); }

  // One input as a line: what to run, then its fields.
  std::string Draw(const std::string& surface) {
    if (surface == "gen") return DrawGen();
    if (surface == "opt") return DrawOpt();
    if (surface == "files") return DrawFiles();
    if (surface == "request") return DrawRequest();
    return DrawPolicy();
  }

  // Runs a line; "" or what went wrong.
  std::string Run(const std::string& line, bool* accepted) {
    std::istringstream in(line);
    std::string surface;
    in >> surface;
    std::string rest;
    std::getline(in, rest);
    if (rest.starts_with(" ")) rest.erase(0, 1);
    std::vector<std::string> f;  // the fields between '|', empty ones kept
    for (size_t at = 0;;) {
      const size_t bar = rest.find('|', at);
      f.push_back(rest.substr(at, bar - at));
      if (bar == std::string::npos) break;
      at = bar + 1;
    }
    if (surface == "gen" && f.size() >= 3) return RunGen(f, accepted);
    if (surface == "spec" && f.size() == 1) return RunSpec(f[0], accepted);
    if (surface == "opt" && f.size() == 3) return RunOpt(f[0], f[1], f[2], accepted);
    if (surface == "policy" && f.size() == 4) return RunPolicy(f, accepted);
    if (surface == "files" && f.size() == 4) return RunFiles(f, accepted);
    if (surface == "request" && f.size() == 8) return RunRequest(f, accepted);
    return "malformed input line: " + line;
  }

 private:
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  static std::string Bad(const Status& s) {
    return s.ok() || s.code() == StatusCode::kInvalidInput ? "" : "internal error: " + s.message();
  }

  // gen FAMILY|SEED|INDEX|KEY=VALUE|... (values as doubles), or spec gen:...
  std::string DrawGen() {
    const auto families = dplace::graph::FamilyNames();
    if (Below(3) == 0) {  // a spec string
      std::string family(families[Below(families.size())]);
      if (Below(6) == 0) family = Below(2) ? "layerd" : "";
      const char* fields[] = {"1",
                              "0",
                              "-1",
                              "18446744073709551615",
                              "18446744073709551616",
                              "2147483647",
                              "2147483648",
                              "4294967296",
                              "x",
                              "",
                              "1e3",
                              "+2",
                              " 1",
                              "00"};
      std::string spec = "gen:" + family + ":" + fields[Below(std::size(fields))] + ":" +
                         fields[Below(std::size(fields))];
      if (Below(8) == 0) spec += ":" + std::string(fields[Below(std::size(fields))]);
      return "spec " + spec;
    }
    const std::string family(families[Below(families.size())]);
    std::ostringstream line;
    line << "gen " << family << "|" << Below(1000) << "|" << Below(4);
    const auto keys = dplace::graph::FamilyKeys(family);
    const int count = static_cast<int>(Below(4));
    for (int k = 0; k < count; ++k) {
      const std::string key =
          Below(8) == 0 || keys.empty() ? "bogus" : std::string(keys[Below(keys.size())].first);
      line << "|" << key << "=" << kNumbers[Below(std::size(kNumbers))];
    }
    return line.str();
  }

  std::string RunGen(const std::vector<std::string>& f, bool* accepted) {
    dplace::graph::FamilyOverrides overrides;
    for (size_t i = 3; i < f.size(); ++i) {
      const size_t eq = f[i].find('=');
      if (eq == std::string::npos) return "malformed override " + f[i];
      overrides[f[i].substr(0, eq)] = std::strtod(f[i].c_str() + eq + 1, nullptr);
    }
    auto g = dplace::graph::GenerateGraph(f[0], std::stoull(f[1]), std::stoi(f[2]), overrides);
    if (!g.ok()) return Bad(g.status());
    *accepted = true;
    return "";
  }

  std::string RunSpec(const std::string& spec, bool* accepted) {
    auto g = dplace::io::LoadGraph(spec);
    if (!g.ok()) return Bad(g.status());
    *accepted = true;
    return "";
  }

  // opt PLACER|KEY|VALUE
  std::string DrawOpt() {
    const auto placers = dplace::place::Placers();
    const dplace::place::PlacerEntry& entry = placers[Below(placers.size())];
    const auto docs = dplace::place::OptionDocs(entry);
    std::string key = docs.empty() || Below(10) == 0 ? "bogus" : docs[Below(docs.size())].key;
    if (const size_t dot = key.find('.'); dot != std::string::npos) key = key.substr(dot + 1);
    std::string value = kValues[Below(std::size(kValues))];
    if (Below(5) == 0) value += std::string(",") + kValues[Below(std::size(kValues))];
    return "opt " + std::string(entry.name) + "|" + key + "|" + value;
  }

  std::string RunOpt(const std::string& placer, const std::string& key, const std::string& value,
                     bool* accepted) {
    dplace::place::PlacerOptions options;
    options[placer][key] = value;
    auto made = dplace::place::MakePlacer(placer, options);
    if (!made.ok()) return Bad(made.status());
    return Place(*made->placer, accepted);
  }

  // A placement of the small problem within 1 s and 200 evaluations (`accepted` when placed).
  std::string Place(dplace::place::Placer& placer, bool* accepted) {
    const auto evaluator = dplace::sim::MakeEvaluator(problem_);
    const auto start = std::chrono::steady_clock::now();
    auto placed = placer.Place(
        *problem_,
        {.evaluator = evaluator.get(), .seed = 1, .limits = {.evaluations = 200, .seconds = 1}});
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!placed.ok()) return Bad(placed.status());
    *accepted = true;
    if (took > kSlowdown * (1.1 * 1 + 1)) {
      return "placed in " + std::to_string(took) + " s (limit 1 s)";
    }
    if (placed->placement.size() != static_cast<size_t>(problem_->num_ops())) {
      return "a placement of " + std::to_string(placed->placement.size()) + " ops";
    }
    return "";
  }

  // policy METHOD|MUTATION|AT|LENGTH: the bundled policy of METHOD mutated at byte AT.
  std::string DrawPolicy() {
    const auto& [method, bytes] = policies_[Below(policies_.size())];
    const char* mutations[] = {"flip", "cut", "zero", "insert", "truncate", "byte"};
    std::ostringstream line;
    line << "policy " << method << "|" << mutations[Below(std::size(mutations))] << "|"
         << Below(bytes.size()) << "|" << 1 + Below(64);
    return line.str();
  }

  std::string RunPolicy(const std::vector<std::string>& f, bool* accepted) {
    std::string bytes;
    for (const auto& [method, b] : policies_) {
      if (method == f[0]) bytes = b;
    }
    if (bytes.empty()) return "";  // not built with LibTorch: nothing to load
    const size_t at = std::min<size_t>(std::stoull(f[2]), bytes.size() - 1);
    const size_t length = std::min<size_t>(std::stoull(f[3]), bytes.size() - at);
    if (f[1] == "flip") bytes[at] ^= static_cast<char>(1u << (length % 8));
    if (f[1] == "cut") bytes.erase(at, length);
    if (f[1] == "zero") std::fill_n(bytes.begin() + static_cast<std::ptrdiff_t>(at), length, 0);
    if (f[1] == "insert") bytes.insert(at, bytes.substr(at, length));
    if (f[1] == "truncate") bytes.resize(at);
    if (f[1] == "byte") bytes[at] = static_cast<char>(length * 37);
    // Learned placers keep each policy file they read for the process: a new name per input.
    const fs::path file = dir_ / ("policy_" + std::to_string(reads_++) + ".pt");
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
    dplace::place::PlacerOptions options;
    options[f[0]]["policy"] = file.string();
    auto made = dplace::place::MakePlacer(f[0], options);
    if (!made.ok()) return Bad(made.status());
    std::string problem = Place(*made->placer, accepted);
    fs::remove(file);
    return problem;
  }

  // files OUT1|OUT2|INPUTS|KIND: two outputs and the inputs (a string of scene names, '+'
  // between them), each a name in a fresh scene: in (a regular file), dot (in, as dir/./in),
  // link (-> in), chain (-> link), hard (in's hard link), fifo (no reader), folder, missing/x, new,
  // other, null (/dev/null), full (/dev/full), none (no output, no input); KIND, the outputs'
  // kind ("" or checkpoint, the inputs noted with it when it is "checkpoint").
  static constexpr const char* kScene[] = {"in",   "dot",    "link",      "chain", "hard",
                                           "fifo", "folder", "missing/x", "new",   "other",
                                           "null", "full",   "none"};
  std::string DrawFiles() {
    auto one = [&] { return std::string(kScene[Below(std::size(kScene))]); };
    std::string inputs = one();
    for (uint64_t n = Below(3); n > 0; --n) inputs += "+" + one();
    return "files " + one() + "|" + one() + "|" + inputs + "|" +
           (Below(4) == 0 ? "checkpoint" : "");
  }

  std::string RunFiles(const std::vector<std::string>& f, bool* accepted) {
    const fs::path scene = dir_ / ("scene_" + std::to_string(scenes_++));
    fs::create_directories(scene / "folder");
    const std::string original = "the input's bytes\n";
    std::ofstream(scene / "in") << original;
    std::ofstream(scene / "other") << original;
    fs::create_symlink(scene / "in", scene / "link");
    fs::create_symlink(scene / "link", scene / "chain");
    fs::create_hard_link(scene / "in", scene / "hard");
    if (::mkfifo((scene / "fifo").c_str(), 0600) != 0) return "";
    auto path = [&](const std::string& name) -> std::string {
      if (name == "none") return "";
      if (name == "null") return "/dev/null";
      if (name == "full") return "/dev/full";
      if (name == "dot") return (scene / "." / "in").string();
      return (scene / name).string();
    };
    const std::string& kind = f[3];
    std::vector<std::string> inputs;  // only files are read: a FIFO or a device is no input here
    for (size_t at = 0;;) {
      const size_t plus = f[2].find('+', at);
      const std::string p = path(f[2].substr(at, plus - at));
      if (!p.empty() && fs::is_regular_file(p)) inputs.push_back(p);
      if (plus == std::string::npos) break;
      at = plus + 1;
    }
    std::string problem;
    {
      // As `place` writes: checked before any work, then all written and committed together.
      const dplace::RunInputs run;
      for (const std::string& p : inputs) dplace::NoteInput(p, kind);
      const std::vector<dplace::Output> outputs = {{"--a", path(f[0]), kind},
                                                   {"--b", path(f[1]), kind}};
      Status st = dplace::CheckOutputs(outputs, {});
      dplace::OutputSet files;
      for (size_t i = 0; i < outputs.size() && st.ok(); ++i) {
        if (!outputs[i].path.empty())
          st = files.Add(outputs[i].path, "output " + std::to_string(i));
      }
      if (st.ok()) st = files.Commit();
      *accepted = st.ok();
      problem = Bad(st);
    }
    // Nothing replaced: the links are links to the same file, the FIFO a FIFO, the devices
    // devices, and `in` holds its bytes or, when it was written (not an input), an output's.
    std::error_code ec;
    if (!fs::is_symlink(scene / "link") || fs::read_symlink(scene / "link") != scene / "in" ||
        !fs::is_symlink(scene / "chain") || fs::read_symlink(scene / "chain") != scene / "link") {
      problem += " a link was replaced;";
    }
    if (!fs::is_fifo(scene / "fifo")) problem += " the FIFO was replaced;";
    if (!fs::is_character_file("/dev/null") || !fs::is_character_file("/dev/full")) {
      problem += " a device was replaced;";
    }
    auto bytes_of = [](const fs::path& p) {
      std::ifstream in(p);
      std::stringstream bytes;
      bytes << in.rdbuf();
      return bytes.str();
    };
    for (const std::string& p : inputs) {
      if (kind != "checkpoint" && bytes_of(p) != original) problem += " an input was replaced;";
    }
    for (const char* name : {"in", "hard", "other"}) {
      const std::string b = bytes_of(scene / name);
      if (b != original && !b.starts_with("output ")) {
        problem += std::string(" ") + name + " holds neither its bytes nor an output's;";
      }
    }
    for (const auto& entry : fs::directory_iterator(scene)) {
      if (entry.path().filename().string().find(".tmp") != std::string::npos) {
        problem += " a temporary file was left;";
      }
    }
    fs::remove_all(scene, ec);
    return problem;
  }

  // request SECONDS|EVALUATIONS|COARSEN|ROBUST|QUANTILE|OPTION|TOTAL|EXPORTS: a request through
  // run::Validate (with mcmc and the option's placer) and export formats ('+' between them)
  // through run::SpecForExports.
  std::string DrawRequest() {
    const char* exports[] = {"",      "device_map",  "stages", "device_map+stages", "stages+stages",
                             "trace", "device_map+", "=",      "stages+device_map"};
    const auto& placers = dplace::place::Placers();
    const auto& entry = placers[Below(placers.size())];
    // Each field sane three times in four, so that one bad field is what a refusal is about.
    auto field = [&](const std::string& sane) {
      if (Below(4) != 0) return sane;
      std::ostringstream v;
      v << kNumbers[Below(std::size(kNumbers))];
      return v.str();
    };
    // An option of the placer: one of its own keys at its default, or a value a user may type.
    const std::vector<dplace::place::OptionDoc> docs = dplace::place::OptionDocs(entry);
    std::string option = std::string(entry.name) + ".seed=" + kValues[Below(std::size(kValues))];
    if (!docs.empty()) {
      const dplace::place::OptionDoc& d = docs[Below(docs.size())];
      option = std::string(entry.name) + "." + d.key + "=" +
               (Below(2) ? d.default_value : kValues[Below(std::size(kValues))]);
    }
    std::ostringstream line;
    line << "request " << field("2") << "|" << field("100") << "|" << field("2000") << "|"
         << field(Below(2) ? "0" : "3") << "|" << field("0.5") << "|" << option << "|" << field("0")
         << "|" << (Below(2) ? "" : exports[Below(std::size(exports))]);
    return line.str();
  }

  std::string RunRequest(const std::vector<std::string>& f, bool* accepted) {
    auto number = [](const std::string& s) { return std::strtod(s.c_str(), nullptr); };
    dplace::run::RunRequest request{
        .limits = {.evaluations = static_cast<int64_t>(number(f[1])), .seconds = number(f[0])},
        .coarsen_ops = static_cast<int>(number(f[2])),
        .robust = {.count = static_cast<int>(number(f[3])), .quantile = number(f[4])}};
    auto options = dplace::place::ParseOptionSpecs({f[5]});
    std::vector<std::string> placers = {"mcmc"};
    Status st = options.status();
    if (options.ok()) {
      request.options = *options;
      placers.push_back(f[5].substr(0, f[5].find('.')));
      st = dplace::run::Validate(request, placers, number(f[6])).status();
    }
    std::vector<std::string> formats;
    for (size_t at = 0;;) {
      const size_t plus = f[7].find('+', at);
      formats.push_back(f[7].substr(at, plus - at));
      if (plus == std::string::npos) break;
      at = plus + 1;
    }
    dplace::run::ProblemSpec spec;
    const Status exports = formats == std::vector<std::string>{""}
                               ? Status()
                               : dplace::run::SpecForExports(formats, &spec);
    *accepted = st.ok() && exports.ok();
    return Bad(st) + Bad(exports);
  }

  std::mt19937_64 rng_;
  fs::path root_, dir_;
  std::shared_ptr<const dplace::sim::Problem> problem_;
  std::vector<std::pair<std::string, std::string>> policies_;  // (method, bytes)
  int64_t reads_ = 0;
  int64_t scenes_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const FuzzFlags flags = ReadFuzzFlags(argc, argv);
  const fs::path root = DPLACE_SOURCE_DIR;
  const fs::path dir =
      fs::temp_directory_path() / ("dplace_surface_fuzz_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Fuzzer fuzzer(flags.seed, root, dir);
  if (!fuzzer.ready()) {
    std::cerr << "surface_fuzz: cannot load the fixed graph or cluster\n";
    return 1;
  }
  std::vector<std::string> surfaces;
  for (const char* s : {"gen", "opt", "policy", "files", "request"}) {
    if ((flags.only.empty() || flags.only == s) &&
        (std::string(s) != "policy" || fuzzer.has_policies())) {
      surfaces.emplace_back(s);
    }
  }
  std::map<std::string, Tally> tally;
  int64_t findings = 0;
  auto run = [&](const std::string& line, const std::string& label) {
    bool accepted = false;
    if (flags.verbose) std::cerr << "run: " << line << std::endl;
    const auto start = std::chrono::steady_clock::now();
    std::string problem = fuzzer.Run(line, &accepted);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (problem.empty() && took > kSlowdown * flags.hang_seconds)
      problem = "took " + std::to_string(took) + " s";
    Tally& t = tally[line.substr(0, line.find(' '))];
    ++t.inputs;
    (accepted ? t.accepted : t.refused) += 1;
    if (!problem.empty()) {
      ++t.findings;
      ++findings;
      std::cerr << label << ": " << problem << "\n  input: " << line << "\n";
    }
  };
  // Regression inputs first.
  const fs::path regressions = root / "testdata/fuzz/surfaces";
  if (fs::exists(regressions)) {
    for (const auto& entry : fs::directory_iterator(regressions)) {
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        if (line.starts_with("policy") && !fuzzer.has_policies()) continue;
        run(line, entry.path().filename().string());
      }
    }
  }
  std::mt19937_64 pick(flags.seed + 1);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < flags.inputs && !surfaces.empty(); ++i) {
    if (flags.seconds > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
            flags.seconds) {
      break;
    }
    const std::string line = fuzzer.Draw(surfaces[pick() % surfaces.size()]);
    run(line, "input " + std::to_string(i));
  }
  fs::remove_all(dir);
  int64_t total = 0;
  for (const auto& [surface, t] : tally) {
    std::cout << surface << ": " << t.inputs << " inputs, " << t.accepted << " accepted, "
              << t.refused << " refused as bad input, " << t.findings << " findings\n";
    total += t.inputs;
  }
  std::cout << total << " inputs, " << findings << " findings\n";
  return findings == 0 ? 0 : 1;
}
