#include "dplace/base/zip_check.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "dplace/base/file_util.h"
#include "dplace/base/json_node.h"

namespace dplace {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEnd = 0x06054b50;
constexpr uint32_t kEnd64 = 0x06064b50;
constexpr uint32_t kEnd64Locator = 0x07064b50;
constexpr uint32_t kDataDescriptor = 0x08074b50;

// Little-endian reads that fail, rather than read past the end.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool Has(uint64_t at, uint64_t n) const { return at <= bytes_.size() && n <= bytes_.size() - at; }
  uint64_t Get(uint64_t at, int n) const {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes_[at + i]);
    return v;
  }
  std::string_view Slice(uint64_t at, uint64_t n) const { return bytes_.substr(at, n); }
  uint64_t size() const { return bytes_.size(); }

 private:
  std::string_view bytes_;
};

// A raw deflate stream that must inflate to `size` bytes whose CRC-32 is `crc`. The output is
// inflated in pieces and never held whole, so a recorded size cannot make it allocate much.
Status CheckDeflated(std::string_view stream, uint64_t size, uint32_t crc,
                     const std::string& what) {
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return InvalidInput(what + "cannot inflate");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(stream.data()));
  z.avail_in = static_cast<uInt>(std::min<uint64_t>(stream.size(), UINT32_MAX));
  std::array<Bytef, 1 << 16> piece{};
  uLong sum = crc32(0L, Z_NULL, 0);
  uint64_t produced = 0;
  int ret = Z_OK;
  while (ret == Z_OK) {
    z.next_out = piece.data();
    z.avail_out = piece.size();
    ret = inflate(&z, Z_NO_FLUSH);
    const uint64_t got = piece.size() - z.avail_out;
    produced += got;
    sum = crc32(sum, piece.data(), static_cast<uInt>(got));
    if (produced > size) break;
    if (ret == Z_BUF_ERROR && z.avail_in == 0) break;  // the stream ends early
  }
  inflateEnd(&z);
  if (ret != Z_STREAM_END) return InvalidInput(what + "deflated data does not inflate");
  if (produced != size) return InvalidInput(what + "inflated size differs from the recorded one");
  if (static_cast<uint32_t>(sum) != crc) return InvalidInput(what + "CRC-32 mismatch");
  return OkStatus();
}

}  // namespace

uint32_t Crc32(std::string_view bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (char ch : bytes) crc = table[(crc ^ static_cast<uint8_t>(ch)) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

Status CheckZip(std::string_view bytes) {
  const Reader r(bytes);
  // The end record: its signature in the last 22 + 65,535 bytes (a comment may follow it).
  if (r.size() < 22) return InvalidInput("too short for a ZIP archive");
  uint64_t end = r.size() - 22;
  const uint64_t lowest = r.size() > 22 + 65535 ? r.size() - 22 - 65535 : 0;
  while (r.Get(end, 4) != kEnd) {
    if (end == lowest) return InvalidInput("no end of central directory (not a ZIP archive)");
    --end;
  }
  uint64_t entries = r.Get(end + 10, 2);
  uint64_t directory_size = r.Get(end + 12, 4);
  uint64_t directory = r.Get(end + 16, 4);
  if (entries == 0xFFFF || directory_size == 0xFFFFFFFF || directory == 0xFFFFFFFF) {
    // ZIP64: the locator just before the end record points at the ZIP64 end record.
    if (end < 20 || r.Get(end - 20, 4) != kEnd64Locator) {
      return InvalidInput("ZIP64 fields without a ZIP64 locator");
    }
    const uint64_t end64 = r.Get(end - 20 + 8, 8);
    if (!r.Has(end64, 56) || r.Get(end64, 4) != kEnd64) {
      return InvalidInput("ZIP64 end of central directory out of place");
    }
    entries = r.Get(end64 + 32, 8);
    directory_size = r.Get(end64 + 40, 8);
    directory = r.Get(end64 + 48, 8);
  }
  if (!r.Has(directory, directory_size)) return InvalidInput("central directory out of bounds");
  uint64_t at = directory;
  for (uint64_t i = 0; i < entries; ++i) {
    if (!r.Has(at, 46) || r.Get(at, 4) != kCentralHeader) {
      return InvalidInput("central directory entry " + std::to_string(i) + " damaged");
    }
    const uint64_t method = r.Get(at + 10, 2);
    const uint64_t crc = r.Get(at + 16, 4);
    uint64_t compressed = r.Get(at + 20, 4);
    uint64_t size = r.Get(at + 24, 4);
    const uint64_t name_length = r.Get(at + 28, 2), extra_length = r.Get(at + 30, 2),
                   comment_length = r.Get(at + 32, 2);
    uint64_t local = r.Get(at + 42, 4);
    if (!r.Has(at + 46, name_length + extra_length + comment_length)) {
      return InvalidInput("central directory entry " + std::to_string(i) + " out of bounds");
    }
    const std::string name(r.Slice(at + 46, name_length));
    const std::string what = "entry '" + name + "': ";
    // ZIP64 extra field: the 64-bit values of the fields that read 0xFFFFFFFF, in order.
    for (uint64_t e = at + 46 + name_length; e + 4 <= at + 46 + name_length + extra_length;) {
      const uint64_t id = r.Get(e, 2), length = r.Get(e + 2, 2);
      if (id == 0x0001) {
        uint64_t field = e + 4;
        for (uint64_t* v : {&size, &compressed, &local}) {
          if (*v != 0xFFFFFFFF) continue;
          if (field + 8 > e + 4 + length || !r.Has(field, 8)) {
            return InvalidInput(what + "ZIP64 field damaged");
          }
          *v = r.Get(field, 8);
          field += 8;
        }
      }
      e += 4 + length;
    }
    if (!r.Has(local, 30) || r.Get(local, 4) != kLocalHeader) {
      return InvalidInput(what + "local header damaged");
    }
    const uint64_t local_name = r.Get(local + 26, 2), local_extra = r.Get(local + 28, 2);
    if (!r.Has(local + 30, local_name + local_extra) ||
        r.Slice(local + 30, local_name) != std::string_view(name)) {
      return InvalidInput(what + "local header does not match the directory");
    }
    if (method != 0 && method != 8) {
      return InvalidInput(what + "compression method " + std::to_string(method) +
                          " (neither stored nor deflated)");
    }
    if (r.Get(local + 8, 2) != method) {
      return InvalidInput(what + "local header's method differs from the directory's");
    }
    const uint64_t data = local + 30 + local_name + local_extra;
    if (!r.Has(data, compressed)) return InvalidInput(what + "data out of bounds");
    // The CRC-32 and the sizes are repeated in the local header or, with flag bit 3, in a data
    // descriptor after the data (ZIP64 sizes: 0xFFFFFFFF in the header, 8 bytes in the
    // descriptor). A reader may take either copy (LibTorch's takes the directory's sizes), so they
    // must agree: a directory entry whose sizes were zeroed would otherwise pass its own CRC.
    const bool zip64 = compressed >= 0xFFFFFFFF || size >= 0xFFFFFFFF;
    if ((r.Get(local + 6, 2) & 0x8) == 0) {
      const uint64_t local_compressed = r.Get(local + 18, 4), local_size = r.Get(local + 22, 4);
      if (r.Get(local + 14, 4) != crc ||
          (local_compressed != 0xFFFFFFFF && local_compressed != compressed) ||
          (local_size != 0xFFFFFFFF && local_size != size)) {
        return InvalidInput(what + "local header's CRC-32 or sizes differ from the directory's");
      }
    } else {
      uint64_t d = data + compressed;
      if (r.Has(d, 4) && r.Get(d, 4) == kDataDescriptor) d += 4;
      const int width = zip64 ? 8 : 4;
      if (!r.Has(d, 4 + 2 * static_cast<uint64_t>(width)) || r.Get(d, 4) != crc ||
          r.Get(d + 4, width) != compressed || r.Get(d + 4 + width, width) != size) {
        return InvalidInput(what + "data descriptor differs from the directory");
      }
    }
    if (method == 0) {
      if (compressed != size) return InvalidInput(what + "stored sizes differ");
      if (Crc32(r.Slice(data, size)) != crc) return InvalidInput(what + "CRC-32 mismatch");
    } else {
      DPLACE_RETURN_IF_ERROR(CheckDeflated(r.Slice(data, compressed), size, crc, what));
    }
    at += 46 + name_length + extra_length + comment_length;
  }
  return OkStatus();
}

StatusOr<std::string> ReadZipFile(const std::string& path, std::string_view what,
                                  std::string_view kind) {
  auto content = ReadFile(path);
  if (!content.ok()) {
    return InvalidInput(path + ": cannot be read: " + std::string(content.status().message()));
  }
  NoteInput(path, kind);
  Status s = CheckZip(*content);
  if (!s.ok()) {
    return InvalidInput(path + ": damaged " + std::string(what) + " (" + s.message() + ")");
  }
  return content;
}

}  // namespace dplace
