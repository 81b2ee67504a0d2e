// Placer options: `--opt placer.key=value` (repeatable; "options" in bench manifests) parsed into
// each placer's typed options struct. A placer describes its options once, in a function that
// reads them (ReadOptions(OptionReader&, XOptions*)); the same function lists them for
// `dplace placers --options`, with their defaults and what they mean. Unknown keys and values out
// of range are InvalidInput naming the option.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"

namespace dplace::place {

// Option values as given: key -> text, for one placer.
using OptionValues = std::map<std::string, std::string>;

// What `placers --options` prints of one option.
struct OptionDoc {
  std::string key;
  std::string default_value;
  std::string doc;
  std::string values;  // what it takes: "1 to 64", "true or false", "a file", "placer names"
};

class OptionReader {
 public:
  OptionReader(std::string_view placer, OptionValues values)
      : placer_(placer), values_(std::move(values)) {}

  // Each reads `key` into `*value` when it was given (checking its range), leaves the default
  // otherwise, and records the option's doc.
  void Read(std::string_view key, double* value, double min, double max, std::string_view doc);
  void Read(std::string_view key, int64_t* value, int64_t min, int64_t max, std::string_view doc);
  void Read(std::string_view key, int* value, int min, int max, std::string_view doc);
  // true/false (also 1/0, yes/no).
  void Read(std::string_view key, bool* value, std::string_view doc);
  // Free text (a file name); empty given text is an error.
  void Read(std::string_view key, std::string* value, std::string_view doc);
  // One of `choices` (the doc lists them; another value is an error naming them).
  void ReadChoice(std::string_view key, std::string* value,
                  const std::vector<std::string_view>& choices, std::string_view doc);
  // A comma-separated list of names.
  void Read(std::string_view key, std::vector<std::string>* value, std::string_view doc);

  // The first error (a value that does not parse or is out of range, or a key no Read asked
  // for, with the known keys); OK otherwise.
  Status Finish() const;
  const std::vector<OptionDoc>& docs() const { return docs_; }
  // Reports a value that read well but is not one the placer takes (the first error wins).
  void Fail(std::string_view key, const std::string& why);

 private:
  // The given text of `key` (recording its doc), or null.
  const std::string* Take(std::string_view key, std::string default_value, std::string_view doc,
                          std::string values);

  std::string placer_;
  OptionValues values_;
  std::vector<OptionDoc> docs_;
  Status error_;
};

// Parses "placer.key=value" specs into per-placer values. InvalidInput (naming `flag`) for a spec
// without a placer, a key or '='.
StatusOr<std::map<std::string, OptionValues>> ParseOptionSpecs(
    const std::vector<std::string>& specs, std::string_view flag = "--opt");

}  // namespace dplace::place
