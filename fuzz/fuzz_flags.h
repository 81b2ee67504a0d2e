// The flags the seeded fuzzers share: how many inputs, for how long, from which seed, when an
// input counts as a hang, which surface only, and whether to print each input before it runs.
#pragma once

#include <cstdint>
#include <string>

struct FuzzFlags {
  int64_t inputs = 1000;
  double seconds = 0;  // 0: no time bound
  uint64_t seed = 1;
  double hang_seconds = 10;
  std::string only;      // surface_fuzz: gen, opt or policy
  bool verbose = false;  // each input on stderr before it runs (to find the one that crashes)
};

inline FuzzFlags ReadFuzzFlags(int argc, char** argv) {
  FuzzFlags f;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--verbose") {
      f.verbose = true;
      continue;
    }
    if (i + 1 >= argc) break;
    const std::string value = argv[++i];
    if (flag == "--inputs") f.inputs = std::stoll(value);
    if (flag == "--seconds") f.seconds = std::stod(value);
    if (flag == "--seed") f.seed = std::stoull(value);
    if (flag == "--hang-seconds") f.hang_seconds = std::stod(value);
    if (flag == "--only") f.only = value;
  }
  return f;
}
