// sysfs attribute reads on a hostile tree (issue 20 item 3): a FIFO, a device or a huge file where
// an attribute should be reads as "unreadable" at once, never blocks or fills memory.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/safe_file.h"
#include "sysfs/fs_util.h"

namespace kgpu::sysfs {
namespace {

class ReadTrimmedHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kgpu-attr-XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string dir;
};

TEST_F(ReadTrimmedHostile, AttributeIsTrimmed) {
  std::ofstream(dir + "/vendor") << "0x1002\n";
  EXPECT_EQ(read_trimmed(dir + "/vendor"), "0x1002");
}

TEST_F(ReadTrimmedHostile, FifoIsUnreadableAtOnce) {
  ASSERT_EQ(::mkfifo((dir + "/vendor").c_str(), 0600), 0);
  EXPECT_EQ(read_trimmed(dir + "/vendor"), std::nullopt);  // a blocking open would wait forever
}

TEST_F(ReadTrimmedHostile, EndlessDeviceIsUnreadable) {
  fs::create_symlink("/dev/zero", dir + "/numa_node");
  EXPECT_EQ(read_trimmed(dir + "/numa_node"), std::nullopt);
}

TEST_F(ReadTrimmedHostile, HugeFileIsUnreadable) {
  std::ofstream(dir + "/properties") << std::string(kAttributeFileLimit + 1, 'x');
  EXPECT_EQ(read_trimmed(dir + "/properties"), std::nullopt);
}

TEST_F(ReadTrimmedHostile, DirectoryIsUnreadable) {
  EXPECT_EQ(read_trimmed(dir), std::nullopt);
}

}  // namespace
}  // namespace kgpu::sysfs
