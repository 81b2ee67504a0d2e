#include "dplace/base/units.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace dplace {
namespace {

// Splits "16.5GiB" into 16.5 and "GiB". Fails if there is no leading number.
bool SplitNumber(std::string_view text, double* number, std::string_view* unit) {
  std::string s(text);
  const char* begin = s.c_str();
  char* end = nullptr;
  *number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(*number)) return false;
  std::string_view rest = text.substr(static_cast<size_t>(end - begin));
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  *unit = rest;
  return true;
}

// Multiplier of a size prefix ("", "k", "Gi", ...); negative if unknown.
double PrefixMultiplier(std::string_view prefix) {
  if (prefix.empty()) return 1;
  if (prefix.size() == 2 && prefix[1] == 'i') {
    switch (prefix[0]) {
      case 'K':
        return 1024.0;
      case 'M':
        return 1024.0 * 1024;
      case 'G':
        return 1024.0 * 1024 * 1024;
      case 'T':
        return 1024.0 * 1024 * 1024 * 1024;
      case 'P':
        return 1024.0 * 1024 * 1024 * 1024 * 1024;
      default:
        return -1;
    }
  }
  if (prefix.size() != 1) return -1;
  switch (prefix[0]) {
    case 'k':
    case 'K':
      return 1e3;
    case 'M':
      return 1e6;
    case 'G':
      return 1e9;
    case 'T':
      return 1e12;
    case 'P':
      return 1e15;
    default:
      return -1;
  }
}

// Parses "<prefix>B" or "<prefix>b" (bits); returns bytes per unit or negative.
double ByteUnit(std::string_view unit) {
  if (unit.empty()) return 1;
  const char last = unit.back();
  if (last != 'B' && last != 'b') return -1;
  const double m = PrefixMultiplier(unit.substr(0, unit.size() - 1));
  if (m < 0) return -1;
  return last == 'b' ? m / 8 : m;
}

Status Malformed(std::string_view text, const char* what) {
  return InvalidInput("'" + std::string(text) + "' is not a valid " + what);
}

}  // namespace

StatusOr<double> ParseBytes(std::string_view text) {
  double number = 0;
  std::string_view unit;
  if (!SplitNumber(text, &number, &unit)) return Malformed(text, "size (e.g. 16GiB)");
  const double m = ByteUnit(unit);
  if (m < 0 || number < 0) return Malformed(text, "size (e.g. 16GiB)");
  return number * m;
}

StatusOr<double> ParseBytesPerSecond(std::string_view text) {
  double number = 0;
  std::string_view unit;
  if (!SplitNumber(text, &number, &unit)) return Malformed(text, "rate (e.g. 25GB/s)");
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "/s") {
    unit.remove_suffix(2);
  } else if (!unit.empty()) {
    return Malformed(text, "rate (e.g. 25GB/s)");
  }
  const double m = ByteUnit(unit);
  if (m < 0 || number < 0) return Malformed(text, "rate (e.g. 25GB/s)");
  return number * m;
}

StatusOr<double> ParseSeconds(std::string_view text) {
  double number = 0;
  std::string_view unit;
  if (!SplitNumber(text, &number, &unit)) return Malformed(text, "duration (e.g. 10us)");
  double m = -1;
  if (unit.empty() || unit == "s")
    m = 1;
  else if (unit == "ms")
    m = 1e-3;
  else if (unit == "us" || unit == "\xC2\xB5s")
    m = 1e-6;
  else if (unit == "ns")
    m = 1e-9;
  if (m < 0 || number < 0) return Malformed(text, "duration (e.g. 10us)");
  return number * m;
}

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (std::isinf(bytes)) return "unlimited";
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", bytes, kUnits[u]);
  return buf;
}

std::string FormatPercent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g%%", 100 * fraction);
  return buf;
}

std::string FormatSeconds(double seconds) {
  char buf[32];
  const double a = std::fabs(seconds);
  if (a >= 1 || a == 0)
    std::snprintf(buf, sizeof(buf), "%.4g s", seconds);
  else if (a >= 1e-3)
    std::snprintf(buf, sizeof(buf), "%.4g ms", seconds * 1e3);
  else if (a >= 1e-6)
    std::snprintf(buf, sizeof(buf), "%.4g us", seconds * 1e6);
  else
    std::snprintf(buf, sizeof(buf), "%.4g ns", seconds * 1e9);
  return buf;
}

}  // namespace dplace
