#include "dplace/base/zip_check.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace dplace {
namespace {

void Put(std::string* out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// What a local and a central header share after their versions: flags, method, time and date,
// CRC-32, both sizes, the name's length and no extra field.
void PutCommon(std::string* out, int method, uint32_t crc, uint64_t compressed, uint64_t size,
               uint64_t name_length) {
  Put(out, 0, 2);
  Put(out, method, 2);
  Put(out, 0, 4);
  Put(out, crc, 4);
  Put(out, compressed, 4);
  Put(out, size, 4);
  Put(out, name_length, 2);
  Put(out, 0, 2);
}

// `data` as a raw deflate stream (ZIP's method 8).
std::string Deflate(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A ZIP archive of stored entries, as LibTorch writes them (CRC in the headers), or of deflated
// ones, as other writers do.
std::string Zip(const std::vector<std::pair<std::string, std::string>>& entries,
                bool deflated = false) {
  std::string out, directory;
  for (const auto& [name, data] : entries) {
    const uint64_t local = out.size();
    const uint32_t crc = Crc32(data);
    const std::string stored = deflated ? Deflate(data) : data;
    const int method = deflated ? 8 : 0;
    Put(&out, 0x04034b50, 4);
    Put(&out, 20, 2);
    PutCommon(&out, method, crc, stored.size(), data.size(), name.size());
    out += name + stored;
    Put(&directory, 0x02014b50, 4);
    Put(&directory, 20, 2);
    Put(&directory, 20, 2);
    PutCommon(&directory, method, crc, stored.size(), data.size(), name.size());
    Put(&directory, 0, 2);  // comment length, disk, internal and external attributes
    Put(&directory, 0, 2);
    Put(&directory, 0, 2);
    Put(&directory, 0, 4);
    Put(&directory, local, 4);
    directory += name;
  }
  const uint64_t at = out.size();
  out += directory;
  Put(&out, 0x06054b50, 4);
  Put(&out, 0, 4);
  Put(&out, entries.size(), 2);
  Put(&out, entries.size(), 2);
  Put(&out, directory.size(), 4);
  Put(&out, at, 4);
  Put(&out, 0, 2);
  return out;
}

TEST(ZipCheckTest, Crc32IsZlibs) {
  EXPECT_EQ(Crc32(""), 0u);
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);  // the standard check value
}

TEST(ZipCheckTest, AnIntactArchivePassesAndEveryDamageIsNamed) {
  const std::string zip =
      Zip({{"archive/data.pkl", "weights and shapes"}, {"archive/version", "3"}});
  EXPECT_TRUE(CheckZip(zip).ok()) << CheckZip(zip).message();
  std::string flipped = zip;
  flipped[30 + 16 + 4] ^= 0x01;  // a byte of the first entry's data
  EXPECT_EQ(CheckZip(flipped).message(), "entry 'archive/data.pkl': CRC-32 mismatch");
  std::string header = zip;
  header[0] ^= 0x40;  // the first local header's signature
  EXPECT_EQ(CheckZip(header).message(), "entry 'archive/data.pkl': local header damaged");
  EXPECT_FALSE(CheckZip(zip.substr(0, zip.size() / 2)).ok());  // truncated: no end record
  EXPECT_FALSE(CheckZip("not a zip at all, but long enough to look for one").ok());
  // Every single flipped byte is either found or harmless to the data (never a crash here).
  for (size_t i = 0; i < zip.size(); ++i) {
    std::string z = zip;
    z[i] ^= 0x10;
    (void)CheckZip(z);
  }
}

TEST(ZipCheckTest, AFileThatCannotBeReadOrIsDamagedIsOneLine) {
  const auto missing = ReadZipFile("/nonexistent/policy.pt", "policy file");
  EXPECT_EQ(missing.status().message(), "/nonexistent/policy.pt: cannot be read: no such file");
  // Reading this process's memory from its start fails with an I/O error: said, never thrown.
  const auto unreadable = ReadZipFile("/proc/self/mem", "policy file");
  EXPECT_EQ(unreadable.status().message(),
            "/proc/self/mem: cannot be read: read error: Input/output error");
}

TEST(ZipCheckTest, DirectorySizesMustAgreeWithTheLocalHeaders) {
  const std::string zip = Zip({{"archive/data/22", std::string(256, 'w')}});
  ASSERT_TRUE(CheckZip(zip).ok());
  // The directory entry's CRC-32 and sizes zeroed: its CRC of no bytes holds, the header's not.
  std::string zeroed = zip;
  const size_t entry = zeroed.find("PK\x01\x02");
  ASSERT_NE(entry, std::string::npos);
  std::fill_n(zeroed.begin() + static_cast<std::ptrdiff_t>(entry + 16), 12, '\0');
  EXPECT_EQ(CheckZip(zeroed).message(),
            "entry 'archive/data/22': local header's CRC-32 or sizes differ from the directory's");
}

TEST(ZipCheckTest, ADeflatedEntryIsInflatedAndItsCrcChecked) {
  const std::string code(2000, 'x');
  const std::string zip = Zip({{"archive/code/__torch__.py", code + "def forward(self):"}}, true);
  EXPECT_TRUE(CheckZip(zip).ok()) << CheckZip(zip).message();
  // Every byte of the deflated data flipped: the entry no longer inflates, or not to its CRC, or
  // it still inflates to the same bytes (a bit deflate does not read).
  const std::string name = "archive/code/__torch__.py";
  const size_t data = 30 + name.size();
  const size_t end = zip.find("PK\x01\x02");
  ASSERT_NE(end, std::string::npos);
  int found = 0;
  for (size_t i = data; i < end; ++i) {
    std::string flipped = zip;
    flipped[i] ^= 0x10;
    const Status s = CheckZip(flipped);
    if (s.ok()) {
      std::string inflated(code.size() + 64, '\0');
      uLongf size = inflated.size();
      std::string wrapped = flipped.substr(data, end - data);
      z_stream z{};
      inflateInit2(&z, -MAX_WBITS);
      z.next_in = reinterpret_cast<Bytef*>(wrapped.data());
      z.avail_in = static_cast<uInt>(wrapped.size());
      z.next_out = reinterpret_cast<Bytef*>(inflated.data());
      z.avail_out = static_cast<uInt>(size);
      inflate(&z, Z_FINISH);
      inflated.resize(z.total_out);
      inflateEnd(&z);
      EXPECT_EQ(inflated, code + "def forward(self):") << "byte " << i << " passed";
    } else {
      ++found;
      EXPECT_EQ(s.message().rfind("entry '" + name + "': ", 0), 0u) << s.message();
    }
  }
  EXPECT_GT(found, 0);
}

}  // namespace
}  // namespace dplace
