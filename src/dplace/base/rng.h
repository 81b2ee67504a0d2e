// The one random number generator of dplace: a seeded 64-bit generator whose sequence is the same
// on every platform (std::mt19937_64 is; std distributions are not, so we draw integers ourselves).
#pragma once

#include <cstdint>
#include <random>

namespace dplace {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform integer in [0, n); n > 0. Lemire's multiply-shift, identical across standard libraries.
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<__uint128_t>(engine_()) * n) >> 64);
  }
  // Uniform double in [0, 1).
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace dplace
