// FNV-1a: a hash of bytes that is the same on every platform and standard library (std::hash is
// not), for what must be reproducible: generated graphs' streams, the op-type buckets policies
// read, the names of cached imitation labels.
#pragma once

#include <cstdint>
#include <string_view>

namespace dplace {

// 64-bit FNV-1a of `bytes`, continuing from `h` (chain calls to hash several pieces).
constexpr uint64_t kFnv64Basis = 14695981039346656037ull;
inline uint64_t Fnv1a64(std::string_view bytes, uint64_t h = kFnv64Basis) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

// 32-bit FNV-1a of `bytes`.
inline uint32_t Fnv1a32(std::string_view bytes) {
  uint32_t h = 2166136261u;
  for (unsigned char c : bytes) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace dplace
