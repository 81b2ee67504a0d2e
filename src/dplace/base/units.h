// Parsing of human-written quantities: sizes ("16GiB", "16GB"), rates ("25GB/s") and durations
// ("10us", "1ms"). Decimal prefixes are powers of 10, binary prefixes (Ki, Mi, Gi, Ti) powers of 2.
// Plain numbers are taken in base units (bytes, bytes per second, seconds).
#pragma once

#include <string>
#include <string_view>

#include "dplace/base/status.h"

namespace dplace {

// "16GiB" -> 17179869184, "16GB" -> 1.6e10, "512" -> 512, "1.5KB" -> 1500. Units: B with optional
// prefix k/K, M, G, T, P (decimal) or Ki, Mi, Gi, Ti, Pi (binary). Fails on negative or malformed.
StatusOr<double> ParseBytes(std::string_view text);

// "25GB/s" -> 2.5e10 bytes per second; "100Gb/s" -> 1.25e10 (lower-case b = bits).
StatusOr<double> ParseBytesPerSecond(std::string_view text);

// "10us" -> 1e-5, "1ms" -> 1e-3, "2s" -> 2, "5ns" -> 5e-9; "µs" is accepted for "us".
StatusOr<double> ParseSeconds(std::string_view text);

// Bounds on what a user may give (docs/formats.md): beyond them a number is a mistake, and sums of
// such numbers would overflow. Rates (bytes/s, FLOP/s) are 0 (unknown) or within
// [kMinRate, kMaxRate].
inline constexpr double kMaxSeconds = 1e6;  // an op, a transfer, a latency: under 12 days
inline constexpr double kMaxBytes = 1e18;   // an exabyte
inline constexpr double kMaxFlops = 1e21;   // one op's FLOPs
inline constexpr double kMinRate = 1;
inline constexpr double kMaxRate = 1e21;
inline constexpr int kMaxDevices = 1024;  // devices in one cluster
inline constexpr int kMaxNodes = 4096;    // nodes of a machine the job planner takes

// Human rendering for tables and messages: 1.50 GiB, 12.3 ms, 25.0 GB/s.
std::string FormatBytes(double bytes);
std::string FormatSeconds(double seconds);
// 0.0123 -> "1.23%".
std::string FormatPercent(double fraction);

}  // namespace dplace
