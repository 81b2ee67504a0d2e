// Reading JSON documents with errors that say where: "ops[3].time_s.gpu: expected a number".
//
// ParseJson turns parse failures into "line L, column C: ..." messages; JsonNode wraps a value and
// its path so that every accessor can fail with a Status naming the place. Not a schema language:
// importers call these accessors field by field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"

namespace dplace {

using Json = nlohmann::json;

// Parses JSON text. Errors: "line L, column C: <what went wrong>".
StatusOr<Json> ParseJson(std::string_view text);

// Reads a whole file. Errors name the problem (not found, is a directory, unreadable); the caller
// prefixes the file name.
StatusOr<std::string> ReadFile(const std::string& path);

class JsonNode {
 public:
  JsonNode(const Json& value, std::string path) : value_(&value), path_(std::move(path)) {}

  const Json& json() const { return *value_; }
  // "ops[3].name"; the root is "(top level)".
  const std::string& path() const { return path_; }

  bool Has(std::string_view key) const;
  // Required object member; error if this is not an object or the member is missing.
  StatusOr<JsonNode> Field(std::string_view key) const;
  // Optional member: nullopt when absent or null.
  std::optional<JsonNode> OptionalField(std::string_view key) const;
  // Elements of an array, each with its own path.
  StatusOr<std::vector<JsonNode>> Elements() const;
  // Members of an object as (key, node) pairs, in document order of the parser (sorted keys).
  StatusOr<std::vector<std::pair<std::string, JsonNode>>> Members() const;

  StatusOr<double> Number() const;             // finite number
  StatusOr<double> NonNegativeNumber() const;  // finite and >= 0
  StatusOr<int64_t> Integer() const;           // integral number
  StatusOr<std::string> String() const;
  StatusOr<bool> Bool() const;  // true/false, or 0/1 as the paper's files use

  // Quantities given as a number in base units or as a string with units (see units.h).
  StatusOr<double> Bytes() const;
  StatusOr<double> BytesPerSecond() const;
  StatusOr<double> Seconds() const;

  // OkStatus when this is not an object or every key is in `known`; else the error
  // "<path>: unknown key 'peak_flop' (did you mean 'peak_flops'?)".
  Status OnlyKeys(const std::vector<std::string>& known) const;

  // InvalidInput("<path>: <message>").
  Status Error(const std::string& message) const;

 private:
  const Json* value_;
  std::string path_;
};

}  // namespace dplace
