#include "dplace/base/zip_check.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace dplace {
namespace {

void Put(std::string* out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// What a local and a central header share after their versions: flags, method (stored), time and
// date, CRC-32, both sizes, the name's length and no extra field.
void PutCommon(std::string* out, uint32_t crc, uint64_t size, uint64_t name_length) {
  Put(out, 0, 2);
  Put(out, 0, 2);
  Put(out, 0, 4);
  Put(out, crc, 4);
  Put(out, size, 4);
  Put(out, size, 4);
  Put(out, name_length, 2);
  Put(out, 0, 2);
}

// A ZIP archive of stored entries, as LibTorch writes them (no compression, CRC in the headers).
std::string Zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out, directory;
  for (const auto& [name, data] : entries) {
    const uint64_t local = out.size();
    const uint32_t crc = Crc32(data);
    Put(&out, 0x04034b50, 4);
    Put(&out, 20, 2);
    PutCommon(&out, crc, data.size(), name.size());
    out += name + data;
    Put(&directory, 0x02014b50, 4);
    Put(&directory, 20, 2);
    Put(&directory, 20, 2);
    PutCommon(&directory, crc, data.size(), name.size());
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
  const Status missing = CheckZipFile("/nonexistent/policy.pt", "policy file");
  EXPECT_EQ(missing.message(), "/nonexistent/policy.pt: cannot be read");
}

}  // namespace
}  // namespace dplace
