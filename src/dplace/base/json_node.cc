#include "dplace/base/json_node.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "dplace/base/file_util.h"
#include "dplace/base/spelling.h"
#include "dplace/base/units.h"

namespace dplace {
namespace {

std::string Child(const std::string& parent, std::string_view key) {
  if (parent == "(top level)") return std::string(key);
  return parent + "." + std::string(key);
}

// Line and column (1-based) of a byte offset.
std::pair<size_t, size_t> LineColumn(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

// The first key given twice in one object, found by a second, event-only pass over text that has
// already parsed. (nlohmann's parse callback would do it in the same pass, but its parser then
// rescans the enclosing array after every object: quadratic in the length of an array of objects.)
class DuplicateKeyFinder : public nlohmann::json_sax<Json> {
 public:
  bool found = false;
  std::string duplicate;

  bool null() override { return true; }
  bool boolean(bool /*value*/) override { return true; }
  bool number_integer(number_integer_t /*value*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return true; }
  bool string(string_t& /*value*/) override { return true; }
  bool binary(binary_t& /*value*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override {
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& key) override {
    if (keys_.back().insert(key).second) return true;
    found = true;
    duplicate = key;
    return false;  // stop: one is enough
  }
  bool end_object() override {
    keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*error*/) override {
    return false;
  }

 private:
  std::vector<std::set<std::string>> keys_;
};

StatusOr<Json> ParseJson(std::string_view text) {
  try {
    Json j = Json::parse(text.begin(), text.end());
    // A key given twice in one object would silently keep the last value: it is an error.
    DuplicateKeyFinder finder;
    Json::sax_parse(text.begin(), text.end(), &finder);
    if (finder.found) {
      const std::string& duplicate = finder.duplicate;
      const std::string quoted = "\"" + duplicate + "\"";
      const size_t first = text.find(quoted);
      const size_t second = first == std::string_view::npos ? first : text.find(quoted, first + 1);
      const auto [line, column] = LineColumn(text, second == std::string_view::npos ? 0 : second);
      return InvalidInput("line " + std::to_string(line) + ", column " + std::to_string(column) +
                          ": key '" + duplicate + "' is given twice in one object");
    }
    return j;
  } catch (const Json::parse_error& e) {
    // nlohmann reports the byte just past the offending one; point at it, not after it.
    const size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    const auto [line, column] = LineColumn(text, offset);
    std::string what = e.what();
    // Strip nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: " prefix.
    const size_t colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    if (offset >= text.size()) what = "unexpected end of file (truncated?); " + what;
    return InvalidInput("line " + std::to_string(line) + ", column " + std::to_string(column) +
                        ": invalid JSON: " + what);
  } catch (const Json::exception& e) {
    // A number outside a double's range ("number overflow parsing '1e999'"): point at it.
    std::string what = e.what();
    if (const size_t close = what.find("] "); close != std::string::npos) {
      what = what.substr(close + 2);
    }
    size_t offset = 0;
    if (const size_t quote = what.find('\''); quote != std::string::npos) {
      const std::string token = what.substr(quote + 1, what.rfind('\'') - quote - 1);
      offset = token.empty() ? 0 : text.find(token);
      if (offset == std::string_view::npos) offset = 0;
    }
    const auto [line, column] = LineColumn(text, offset);
    return InvalidInput("line " + std::to_string(line) + ", column " + std::to_string(column) +
                        ": invalid JSON: " + what + " (a number must fit a double)");
  }
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return InvalidInput("no such file");
  if (std::filesystem::is_directory(path, ec)) return InvalidInput("is a directory, not a file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return InvalidInput(std::string("cannot open file for reading: ") + std::strerror(errno));
  // One read into a buffer of the file's size (model exports with weights run to gigabytes); a
  // pipe or a special file, whose size is not known in advance, in pieces.
  struct stat st {};
  std::string bytes;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    bytes.reserve(static_cast<size_t>(st.st_size));
  }
  char piece[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, piece, sizeof piece);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      return InvalidInput("read error: " + reason);
    }
    if (n == 0) break;
    bytes.append(piece, static_cast<size_t>(n));
  }
  ::close(fd);
  NoteInput(path);
  return bytes;
}

Status JsonNode::OnlyKeys(const std::vector<std::string>& known) const {
  if (!value_->is_object()) return OkStatus();
  for (const auto& [key, value] : value_->items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Error("unknown key '" + key + "'" + DidYouMean(key, known));
    }
  }
  return OkStatus();
}

bool JsonNode::Has(std::string_view key) const {
  return value_->is_object() && value_->contains(key) && !(*value_)[std::string(key)].is_null();
}

StatusOr<JsonNode> JsonNode::Field(std::string_view key) const {
  if (!value_->is_object()) return Error("expected an object");
  auto it = value_->find(key);
  if (it == value_->end()) return Error("missing field '" + std::string(key) + "'");
  return JsonNode(*it, Child(path_, key));
}

std::optional<JsonNode> JsonNode::OptionalField(std::string_view key) const {
  if (!value_->is_object()) return std::nullopt;
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return JsonNode(*it, Child(path_, key));
}

StatusOr<std::vector<JsonNode>> JsonNode::Elements() const {
  if (!value_->is_array()) return Error("expected an array");
  std::vector<JsonNode> out;
  out.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i) {
    out.emplace_back((*value_)[i], path_ + "[" + std::to_string(i) + "]");
  }
  return out;
}

StatusOr<std::vector<std::pair<std::string, JsonNode>>> JsonNode::Members() const {
  if (!value_->is_object()) return Error("expected an object");
  std::vector<std::pair<std::string, JsonNode>> out;
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    out.emplace_back(it.key(), JsonNode(it.value(), Child(path_, it.key())));
  }
  return out;
}

StatusOr<double> JsonNode::Number() const {
  if (!value_->is_number()) return Error("expected a number");
  const double v = value_->get<double>();
  if (!std::isfinite(v)) return Error("must be finite");
  return v;
}

StatusOr<double> JsonNode::NonNegativeNumber() const {
  DPLACE_ASSIGN_OR_RETURN(double v, Number());
  if (v < 0) return Error("must not be negative (got " + value_->dump() + ")");
  return v;
}

StatusOr<int64_t> JsonNode::Integer() const {
  if (value_->is_number_integer()) return value_->get<int64_t>();
  DPLACE_ASSIGN_OR_RETURN(double v, Number());
  if (v != std::floor(v) || std::fabs(v) > 9e15) return Error("expected an integer");
  return static_cast<int64_t>(v);
}

StatusOr<std::string> JsonNode::String() const {
  if (!value_->is_string()) return Error("expected a string");
  return value_->get<std::string>();
}

StatusOr<bool> JsonNode::Bool() const {
  if (value_->is_boolean()) return value_->get<bool>();
  if (value_->is_number_integer()) {
    const int64_t v = value_->get<int64_t>();
    if (v == 0 || v == 1) return v == 1;
  }
  return Error("expected true/false (or 0/1)");
}

namespace {
template <typename Parse>
StatusOr<double> Quantity(const JsonNode& node, Parse parse) {
  if (node.json().is_number()) return node.NonNegativeNumber();
  if (!node.json().is_string()) return node.Error("expected a number or a string with units");
  auto parsed = parse(node.json().template get<std::string>());
  if (!parsed.ok()) return node.Error(parsed.status().message());
  return *parsed;
}
}  // namespace

StatusOr<double> JsonNode::Bytes() const { return Quantity(*this, ParseBytes); }
StatusOr<double> JsonNode::BytesPerSecond() const { return Quantity(*this, ParseBytesPerSecond); }
StatusOr<double> JsonNode::Seconds() const { return Quantity(*this, ParseSeconds); }

Status JsonNode::Error(const std::string& message) const {
  return InvalidInput(path_ + ": " + message);
}

}  // namespace dplace
