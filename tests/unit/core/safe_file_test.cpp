// The safe file helpers: the bounded, non-blocking, regular-files-only read and the atomic write
// that never follows a planted link (issue 20 items 1 and 3).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/safe_file.h"

namespace kgpu {
namespace {

namespace fs = std::filesystem;

class SafeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kgpu-safe-XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string& name) const { return dir + "/" + name; }
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static mode_t mode_of(const std::string& path) {
    struct stat st {};
    ::lstat(path.c_str(), &st);
    return st.st_mode & 07777;
  }
  // A file outside anything kgpu owns, that a planted link points at.
  std::string victim() {
    const std::string path = file("victim");
    std::ofstream(path) << "secret\n";
    ::chmod(path.c_str(), 0600);
    return path;
  }
  std::string dir;
};

TEST_F(SafeFileTest, ReadsARegularFile) {
  std::ofstream(file("a")) << "hello";
  auto text = read_regular_file(file("a"), 100);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "hello");
}

TEST_F(SafeFileTest, MissingFileIsNotFound) {
  auto text = read_regular_file(file("none"), 100);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().code, Error::Code::NotFound);
  EXPECT_NE(text.error().message.find(file("none")), std::string::npos);
}

TEST_F(SafeFileTest, DirectoryIsRefusedNotEmpty) {
  auto text = read_regular_file(dir, 100);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().code, Error::Code::InvalidArgument);
  EXPECT_NE(text.error().message.find("a directory"), std::string::npos) << text.error().message;
}

TEST_F(SafeFileTest, FifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo(file("fifo").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  auto text = read_regular_file(file("fifo"), 100);  // a blocking open would wait for a writer forever
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("a FIFO"), std::string::npos) << text.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(SafeFileTest, CharacterDeviceIsRefused) {
  auto text = read_regular_file("/dev/zero", 100);  // an endless stream of zeroes
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("a character device"), std::string::npos) << text.error().message;
}

TEST_F(SafeFileTest, FileOverTheLimitIsRefused) {
  std::ofstream(file("big")) << std::string(101, 'x');
  auto text = read_regular_file(file("big"), 100);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("100-byte limit"), std::string::npos) << text.error().message;
  EXPECT_TRUE(read_regular_file(file("big"), 101).ok());
}

TEST_F(SafeFileTest, ProcFilesWithoutASizeAreReadToTheEnd) {
  auto text = read_regular_file("/proc/self/status", kAttributeFileLimit);  // st_size is 0
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_NE(text->find("Pid:"), std::string::npos);
}

TEST_F(SafeFileTest, LinksAreFollowedOnlyWhenAsked) {
  std::ofstream(file("target")) << "t";
  fs::create_symlink(file("target"), file("link"));
  EXPECT_TRUE(read_regular_file(file("link"), 10).ok());
  auto refused = read_regular_file(file("link"), 10, FollowLinks::No);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("symlink"), std::string::npos) << refused.error().message;
}

TEST_F(SafeFileTest, WritesWithTheExactModeWhateverTheUmask) {
  const mode_t old = ::umask(077);
  auto st = write_file_atomically(file("out"), "content\n", 0644);
  ::umask(old);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(slurp(file("out")), "content\n");
  EXPECT_EQ(mode_of(file("out")), 0644u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // no temp left
}

TEST_F(SafeFileTest, ReplacesAPlantedLinkInsteadOfWritingThroughIt) {
  const std::string v = victim();
  fs::create_symlink(v, file("out"));
  ASSERT_TRUE(write_file_atomically(file("out"), "ours\n", 0644).ok());
  EXPECT_EQ(slurp(v), "secret\n");
  EXPECT_EQ(mode_of(v), 0600u);
  EXPECT_FALSE(fs::is_symlink(file("out")));
  EXPECT_EQ(slurp(file("out")), "ours\n");
}

TEST_F(SafeFileTest, PlantedLinksAtEveryOldTemporaryNameAreNeverOpened) {
  // The names the writers used before (predictable from the pid) and any ".out.*" name.
  const std::string v = victim();
  const std::string pid = std::to_string(::getpid());
  for (const auto& name : {"out.tmp." + pid, ".out." + pid + ".tmp"}) fs::create_symlink(v, file(name));
  ASSERT_TRUE(write_file_atomically(file("out"), "ours\n", 0644).ok());
  EXPECT_EQ(slurp(v), "secret\n");
  EXPECT_EQ(mode_of(v), 0600u);
}

TEST_F(SafeFileTest, DirectoryAtTheTargetIsAnErrorAndLeavesNoTemp) {
  fs::create_directory(file("out"));
  auto st = write_file_atomically(file("out"), "x", 0644);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("rename"), std::string::npos) << st.error().message;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST_F(SafeFileTest, MissingFolderIsAnError) {
  auto st = write_file_atomically(file("no/such/out"), "x", 0644);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Error::Code::Unavailable);
}

}  // namespace
}  // namespace kgpu
