#include "dplace/io/onnx/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "dplace/base/json_node.h"

namespace dplace::io {
namespace {

// Field numbers of onnx.proto3 (ONNX IR 3+).
constexpr uint64_t kModelGraph = 7;
constexpr uint64_t kGraphInitializer = 5;
constexpr uint64_t kTensorDims = 1, kTensorDataType = 2, kTensorFloatData = 4, kTensorInt32Data = 5,
                   kTensorName = 8, kTensorRawData = 9, kTensorDoubleData = 10;
// TensorProto.DataType: FLOAT, FLOAT16, DOUBLE, BFLOAT16.
constexpr uint64_t kFloatTypes[] = {1, 10, 11, 16};

// One field of a message: its number and wire type, and where its value lies in the message.
struct Field {
  uint64_t number = 0;
  int wire = 0;
  std::string_view value;  // the payload of a length-delimited field; the encoded value otherwise
  std::string_view whole;  // key and value as encoded
  uint64_t varint = 0;     // the value of a varint field
};

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return at_ >= bytes_.size(); }

  std::optional<uint64_t> Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && at_ < bytes_.size(); shift += 7) {
      const auto b = static_cast<uint8_t>(bytes_[at_++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return std::nullopt;
  }

  std::optional<Field> Next() {
    const size_t begin = at_;
    const auto key = Varint();
    if (!key) return std::nullopt;
    Field f;
    f.number = *key >> 3;
    f.wire = static_cast<int>(*key & 7);
    const size_t value_begin = at_;
    switch (f.wire) {
      case 0: {
        const auto v = Varint();
        if (!v) return std::nullopt;
        f.varint = *v;
        break;
      }
      case 1:
        at_ += 8;
        break;
      case 5:
        at_ += 4;
        break;
      case 2: {
        const auto length = Varint();
        if (!length || *length > bytes_.size() - at_) return std::nullopt;
        f.value = bytes_.substr(at_, *length);
        at_ += *length;
        break;
      }
      default:
        return std::nullopt;  // groups (deprecated) and invalid wire types
    }
    if (at_ > bytes_.size()) return std::nullopt;
    if (f.wire != 2) f.value = bytes_.substr(value_begin, at_ - value_begin);
    f.whole = bytes_.substr(begin, at_ - begin);
    return f;
  }

 private:
  std::string_view bytes_;
  size_t at_ = 0;
};

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutMessage(uint64_t number, const std::string& payload, std::string* out) {
  PutVarint(number << 3 | 2, out);
  PutVarint(payload.size(), out);
  out->append(payload);
}

// A TensorProto without its values when it is a floating-point tensor of more than 64 elements.
std::optional<std::string> Tensor(std::string_view bytes) {
  uint64_t type = 0;
  double elements = 1;  // a double: dims from a hostile file may multiply past any integer
  for (Reader r(bytes); !r.done();) {
    const auto f = r.Next();
    if (!f) return std::nullopt;
    if (f->number == kTensorDataType && f->wire == 0) type = f->varint;
    if (f->number == kTensorDims && f->wire == 0) {
      elements *= std::max(static_cast<double>(static_cast<int64_t>(f->varint)), 1.0);
    }
    if (f->number == kTensorDims && f->wire == 2) {  // packed
      for (Reader dims(f->value); !dims.done();) {
        const auto d = dims.Varint();
        if (!d) return std::nullopt;
        elements *= std::max(static_cast<double>(static_cast<int64_t>(*d)), 1.0);
      }
    }
  }
  const bool floating =
      std::find(std::begin(kFloatTypes), std::end(kFloatTypes), type) != std::end(kFloatTypes);
  std::string out;
  for (Reader r(bytes); !r.done();) {
    const auto f = r.Next();
    const bool payload = f->number == kTensorRawData || f->number == kTensorFloatData ||
                         f->number == kTensorDoubleData || f->number == kTensorInt32Data;
    if (floating && elements > 64 && payload) continue;
    out.append(f->whole);
  }
  return out;
}

std::optional<std::string> Graph(std::string_view bytes) {
  std::string out;
  for (Reader r(bytes); !r.done();) {
    const auto f = r.Next();
    if (!f) return std::nullopt;
    if (f->number == kGraphInitializer && f->wire == 2) {
      const auto tensor = Tensor(f->value);
      if (!tensor) return std::nullopt;
      PutMessage(kGraphInitializer, *tensor, &out);
    } else {
      out.append(f->whole);
    }
  }
  return out;
}

// An initializer's name, type, sizes and values (raw_data or packed float_data), as views into
// the file.
struct Initializer {
  std::string_view name, values;
  uint64_t type = 0;
  std::vector<uint64_t> dims;
};

std::optional<Initializer> ReadInitializer(std::string_view bytes) {
  Initializer t;
  for (Reader r(bytes); !r.done();) {
    const auto f = r.Next();
    if (!f) return std::nullopt;
    if (f->number == kTensorDataType && f->wire == 0) t.type = f->varint;
    if (f->number == kTensorName && f->wire == 2) t.name = f->value;
    if ((f->number == kTensorRawData || f->number == kTensorFloatData) && f->wire == 2) {
      t.values = f->value;
    }
    if (f->number == kTensorDims && f->wire == 0) t.dims.push_back(f->varint);
    if (f->number == kTensorDims && f->wire == 2) {  // packed
      for (Reader dims(f->value); !dims.done();) {
        const auto d = dims.Varint();
        if (!d) return std::nullopt;
        t.dims.push_back(*d);
      }
    }
  }
  return t;
}

// Whether matrix `a` (rows x cols) holds the transpose of matrix `b` (cols x rows), elements of
// `width` bytes: a few elements first, then all of them, so that a tensor that is not a transpose
// is told apart after touching a page or two of each.
bool IsTranspose(const Initializer& a, const Initializer& b, size_t width) {
  const size_t rows = a.dims[0], cols = a.dims[1];
  auto same = [&](size_t r, size_t c) {
    return a.values.substr((r * cols + c) * width, width) ==
           b.values.substr((c * rows + r) * width, width);
  };
  for (size_t k = 0; k < 16; ++k) {
    if (!same(k * 7919 % rows, k * 104729 % cols)) return false;
  }
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      if (!same(r, c)) return false;
    }
  }
  return true;
}

}  // namespace

FoldedTies FindFoldedTies(std::string_view bytes) {
  std::vector<Initializer> folded, named;
  for (Reader model(bytes); !model.done();) {
    const auto g = model.Next();
    if (!g) return {};
    if (g->number != kModelGraph || g->wire != 2) continue;
    for (Reader graph(g->value); !graph.done();) {
      const auto f = graph.Next();
      if (!f) return {};
      if (f->number != kGraphInitializer || f->wire != 2) continue;
      auto t = ReadInitializer(f->value);
      if (!t || t->dims.size() != 2 || t->values.empty()) continue;
      (t->name.starts_with("onnx::") ? folded : named).push_back(*std::move(t));
    }
  }
  FoldedTies ties;
  for (const Initializer& a : folded) {
    const double elements = static_cast<double>(a.dims[0]) * static_cast<double>(a.dims[1]);
    if (elements <= 0 || elements > static_cast<double>(a.values.size()) ||
        a.values.size() % static_cast<size_t>(elements) != 0) {
      continue;
    }
    const size_t width = a.values.size() / static_cast<size_t>(elements);
    for (const Initializer& b : named) {
      if (b.type == a.type && b.dims[0] == a.dims[1] && b.dims[1] == a.dims[0] &&
          b.values.size() == a.values.size() && IsTranspose(a, b, width)) {
        ties[std::string(a.name)] = std::string(b.name);
        break;
      }
    }
  }
  return ties;
}

std::string WithoutWeights(std::string_view bytes) {
  std::string out;
  for (Reader r(bytes); !r.done();) {
    const auto f = r.Next();
    if (!f) return {};
    if (f->number == kModelGraph && f->wire == 2) {
      const auto graph = Graph(f->value);
      if (!graph) return {};
      PutMessage(kModelGraph, *graph, &out);
    } else {
      out.append(f->whole);
    }
  }
  return out;
}

namespace {

// The file read whole.
StatusOr<OnnxFile> Whole(const std::string& path) {
  DPLACE_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  FoldedTies ties = FindFoldedTies(bytes);
  return OnnxFile{std::move(bytes), std::move(ties)};
}

}  // namespace

StatusOr<OnnxFile> ReadOnnxFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
    if (fd >= 0) ::close(fd);
    return Whole(path);  // its errors ("cannot open", "is a directory") and small files
  }
  const auto size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return Whole(path);
  const std::string_view bytes(static_cast<const char*>(map), size);
  OnnxFile out{WithoutWeights(bytes), FindFoldedTies(bytes)};
  if (out.model.empty()) out.model.assign(bytes);  // not well-formed: the protobuf parser says so
  ::munmap(map, size);
  return out;
}

}  // namespace dplace::io
