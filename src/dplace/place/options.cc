#include "dplace/place/options.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "dplace/base/spelling.h"

namespace dplace::place {
namespace {

std::string Text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

}  // namespace

const std::string* OptionReader::Take(std::string_view key, std::string default_value,
                                      std::string_view doc, std::string values) {
  docs_.push_back(
      {std::string(key), std::move(default_value), std::string(doc), std::move(values)});
  auto it = values_.find(std::string(key));
  return it == values_.end() ? nullptr : &it->second;
}

void OptionReader::Fail(std::string_view key, const std::string& why) {
  if (error_.ok()) {
    error_ = InvalidInput("option " + placer_ + "." + std::string(key) + ": " + why);
  }
}

void OptionReader::Read(std::string_view key, double* value, double min, double max,
                        std::string_view doc) {
  const std::string* text = Take(key, Text(*value), doc, Text(min) + " to " + Text(max));
  if (text == nullptr) return;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text->c_str(), &end);
  if (text->empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < min || v > max) {
    Fail(key, "'" + *text + "' is not a number from " + Text(min) + " to " + Text(max));
    return;
  }
  *value = v;
}

void OptionReader::Read(std::string_view key, int64_t* value, int64_t min, int64_t max,
                        std::string_view doc) {
  const std::string* text =
      Take(key, std::to_string(*value), doc, std::to_string(min) + " to " + std::to_string(max));
  if (text == nullptr) return;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || errno != 0 || v < min || v > max) {
    Fail(key, "'" + *text + "' is not an integer from " + std::to_string(min) + " to " +
                  std::to_string(max));
    return;
  }
  *value = v;
}

void OptionReader::Read(std::string_view key, int* value, int min, int max, std::string_view doc) {
  int64_t v = *value;
  Read(key, &v, min, max, doc);
  *value = static_cast<int>(v);
}

void OptionReader::Read(std::string_view key, bool* value, std::string_view doc) {
  const std::string* text = Take(key, *value ? "true" : "false", doc, "true or false");
  if (text == nullptr) return;
  if (*text == "true" || *text == "1" || *text == "yes") {
    *value = true;
  } else if (*text == "false" || *text == "0" || *text == "no") {
    *value = false;
  } else {
    Fail(key, "'" + *text + "' is not true or false");
  }
}

void OptionReader::Read(std::string_view key, std::string* value, std::string_view doc) {
  const std::string* text = Take(key, value->empty() ? "(none)" : *value, doc, "text");
  if (text == nullptr) return;
  if (text->empty()) {
    Fail(key, "is empty");
    return;
  }
  *value = *text;
}

void OptionReader::ReadChoice(std::string_view key, std::string* value,
                              const std::vector<std::string_view>& choices, std::string_view doc) {
  const std::string* text = Take(key, *value, doc, OneOf(choices));
  if (text == nullptr) return;
  if (std::find(choices.begin(), choices.end(), *text) == choices.end()) {
    Fail(key, "'" + *text + "' is not " + OneOf(choices));
    return;
  }
  *value = *text;
}

void OptionReader::Read(std::string_view key, std::vector<std::string>* value,
                        std::string_view doc) {
  const std::string* text =
      Take(key, value->empty() ? "(none)" : Join(*value), doc, "comma-separated names");
  if (text == nullptr) return;
  std::vector<std::string> names;
  std::stringstream ss(*text);
  for (std::string name; std::getline(ss, name, ',');) {
    if (!name.empty()) names.push_back(name);
  }
  if (names.empty()) {
    Fail(key, "'" + *text + "' names nothing (a comma-separated list)");
    return;
  }
  *value = std::move(names);
}

Status OptionReader::Finish() const {
  if (!error_.ok()) return error_;
  std::vector<std::string> known;
  for (const OptionDoc& d : docs_) known.push_back(d.key);
  for (const auto& [key, text] : values_) {
    bool read = false;
    for (const std::string& k : known) read |= k == key;
    if (read) continue;
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return InvalidInput("option " + placer_ + "." + key + ": " + placer_ + " has no option '" +
                        key + "'" + DidYouMean(key, known) +
                        (known.empty() ? " (it has none)" : " (its options: " + list + ")"));
  }
  return OkStatus();
}

StatusOr<std::map<std::string, OptionValues>> ParseOptionSpecs(
    const std::vector<std::string>& specs, std::string_view flag) {
  std::map<std::string, OptionValues> out;
  for (const std::string& spec : specs) {
    const size_t dot = spec.find('.');
    const size_t eq = spec.find('=');
    if (dot == std::string::npos || eq == std::string::npos || dot == 0 || eq < dot + 2) {
      return InvalidInput(std::string(flag) + ": '" + spec +
                          "' is not PLACER.KEY=VALUE (e.g. mcmc.chains=4)");
    }
    out[spec.substr(0, dot)][spec.substr(dot + 1, eq - dot - 1)] = spec.substr(eq + 1);
  }
  return out;
}

}  // namespace dplace::place
