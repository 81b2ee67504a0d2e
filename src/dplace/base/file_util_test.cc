#include "dplace/base/file_util.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "dplace/base/json_node.h"

namespace dplace {
namespace {

namespace fs = std::filesystem;

class FileUtilTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dplace_file_util_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string Content(const std::string& path) {
    auto bytes = ReadFile(path);
    return bytes.ok() ? *bytes : "<unreadable>";
  }

  fs::path dir_;
};

TEST_F(FileUtilTest, AFileReadDuringARunIsNeverReplacedUnderAnyName) {
  ASSERT_TRUE(WriteFileAtomically(Path("in.json"), "input").ok());
  fs::create_symlink("in.json", Path("link"));
  fs::create_hard_link(Path("in.json"), Path("hard"));
  {
    const RunInputs run;
    ASSERT_TRUE(ReadFile(Path("in.json")).ok());
    for (const char* name : {"in.json", "link", "hard"}) {
      const Status s = WriteFileAtomically(Path(name), "output");
      EXPECT_FALSE(s.ok()) << name;
      EXPECT_NE(s.message().find("input"), std::string::npos) << s.message();
    }
    EXPECT_FALSE(CheckWritable("--out", Path("./in.json")).ok());
    EXPECT_EQ(Content(Path("in.json")), "input");
    EXPECT_TRUE(WriteFileAtomically(Path("other.json"), "output").ok());
  }
  // The run is over: the file may be written again.
  EXPECT_TRUE(WriteFileAtomically(Path("in.json"), "output").ok());
  EXPECT_EQ(Content(Path("in.json")), "output");
}

TEST_F(FileUtilTest, AnOutputOfTheSameKindMayReplaceItsInput) {
  ASSERT_TRUE(WriteFileAtomically(Path("ck.pt"), "checkpoint 1").ok());
  const RunInputs run;
  NoteInput(Path("ck.pt"), "checkpoint");
  EXPECT_FALSE(WriteFileAtomically(Path("ck.pt"), "a policy").ok());
  EXPECT_TRUE(WriteFileAtomically(Path("ck.pt"), "checkpoint 2", "checkpoint").ok());
  EXPECT_EQ(Content(Path("ck.pt")), "checkpoint 2");
}

TEST_F(FileUtilTest, WithoutARunNothingIsNoted) {
  ASSERT_TRUE(WriteFileAtomically(Path("a.json"), "1").ok());
  ASSERT_TRUE(ReadFile(Path("a.json")).ok());
  EXPECT_TRUE(WriteFileAtomically(Path("a.json"), "2").ok());
}

TEST_F(FileUtilTest, AChainOfLinksIsFollowedToItsEnd) {
  fs::create_symlink("end.json", Path("middle"));
  fs::create_symlink("middle", Path("start"));
  ASSERT_TRUE(WriteFileAtomically(Path("start"), "content").ok());
  EXPECT_TRUE(fs::is_symlink(Path("start")));
  EXPECT_TRUE(fs::is_symlink(Path("middle")));
  EXPECT_EQ(Content(Path("end.json")), "content");
  fs::create_symlink("loop_b", Path("loop_a"));
  fs::create_symlink("loop_a", Path("loop_b"));
  const Status loop = WriteFileAtomically(Path("loop_a"), "x");
  EXPECT_NE(loop.message().find("too many levels of symbolic links"), std::string::npos);
}

TEST_F(FileUtilTest, ASpecialFileIsWrittenInPlaceAndAFailedWriteSaysSo) {
  EXPECT_TRUE(WriteFileAtomically("/dev/null", "discarded").ok());
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  const Status full = WriteFileAtomically("/dev/full", "no room");
  EXPECT_EQ(full.message(), "/dev/full: write failed: No space left on device");
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  const Status no_reader = WriteFileAtomically(Path("fifo"), "x");
  EXPECT_EQ(no_reader.message(), Path("fifo") + ": cannot open for writing: a FIFO with no reader");
  EXPECT_TRUE(fs::is_fifo(Path("fifo")));
  // In a set of outputs too: the FIFO is written at Commit, not replaced by the temporary.
  OutputSet outputs;
  ASSERT_TRUE(outputs.Add("/dev/null", "discarded").ok());
  ASSERT_TRUE(outputs.Add(Path("plain.json"), "kept").ok());
  ASSERT_TRUE(outputs.Commit().ok());
  EXPECT_EQ(Content(Path("plain.json")), "kept");
}

TEST_F(FileUtilTest, AReadErrorIsSaidNotThrown) {
  const auto read = ReadFile("/proc/self/mem");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), "read error: Input/output error");
}

}  // namespace
}  // namespace dplace
