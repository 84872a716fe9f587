// The feature file writer: sorted content, atomic replace, no write when unchanged, removal.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "labels/feature_file.h"

namespace kgpu {
namespace {

namespace fs = std::filesystem;

class FeatureFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("kgpu-labels-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    path = (dir / "kgpu").string();
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string read() const {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  ino_t inode() const {
    struct stat st {};
    ::stat(path.c_str(), &st);
    return st.st_ino;
  }
  fs::path dir;
  std::string path;
};

TEST_F(FeatureFileTest, WritesSortedLinesWithMode0644) {
  ASSERT_TRUE(write_feature_file(path, {{"nvidia.com/gpu.count", "8"}, {"a.io/x", ""}}).ok());
  EXPECT_EQ(read(), "a.io/x=\nnvidia.com/gpu.count=8\n");
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // no temp left
}

TEST_F(FeatureFileTest, UnchangedContentIsNotRewritten) {
  const Labels labels{{"nvidia.com/gpu.count", "8"}};
  auto wrote = write_feature_file(path, labels);
  ASSERT_TRUE(wrote.ok());
  EXPECT_TRUE(*wrote);
  const auto first = inode();
  wrote = write_feature_file(path, labels);
  ASSERT_TRUE(wrote.ok());
  EXPECT_FALSE(*wrote);
  EXPECT_EQ(inode(), first);  // a rewrite would rename a new inode into place
  ASSERT_TRUE(write_feature_file(path, {{"nvidia.com/gpu.count", "7"}}).ok());
  EXPECT_NE(inode(), first);
  EXPECT_EQ(read(), "nvidia.com/gpu.count=7\n");
}

TEST_F(FeatureFileTest, RemoveIsIdempotent) {
  ASSERT_TRUE(write_feature_file(path, {{"k", "v"}}).ok());
  ASSERT_TRUE(remove_feature_file(path).ok());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(remove_feature_file(path).ok());
}

TEST_F(FeatureFileTest, MissingFolderIsAnError) {
  auto status = write_feature_file((dir / "missing" / "kgpu").string(), {{"k", "v"}});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("missing"), std::string::npos);
}

// Issue 20 item 1: a link planted at the name the writer used for its temporary file
// (`<path>.tmp.<pid>`, predictable for PID 1 in a container) made it overwrite the link's target
// and chmod it 0644.
TEST_F(FeatureFileTest, LinkAtTheOldTemporaryNameLeavesItsTargetAlone) {
  const std::string victim = (dir / "victim").string();
  std::ofstream(victim) << "secret\n";
  ::chmod(victim.c_str(), 0600);
  fs::create_symlink(victim, path + ".tmp." + std::to_string(::getpid()));
  ASSERT_TRUE(write_feature_file(path, {{"k", "v"}}).ok());
  std::ifstream in(victim);
  std::ostringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "secret\n");
  struct stat st {};
  ASSERT_EQ(::stat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read(), "k=v\n");
}

TEST_F(FeatureFileTest, LinkAtTheFileItselfIsReplacedNotFollowed) {
  const std::string victim = (dir / "victim").string();
  std::ofstream(victim) << "k=v\n";  // even with the very content we would write
  ::chmod(victim.c_str(), 0600);
  fs::create_symlink(victim, path);
  auto wrote = write_feature_file(path, {{"k", "v"}});
  ASSERT_TRUE(wrote.ok()) << wrote.error().message;
  EXPECT_TRUE(*wrote);
  EXPECT_FALSE(fs::is_symlink(path));
  struct stat st {};
  ASSERT_EQ(::stat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// Issue 20 item 3: the comparison read opened whatever was at the path; a FIFO blocked it forever.
TEST_F(FeatureFileTest, FifoAtThePathIsReplacedWithoutBlocking) {
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  auto wrote = write_feature_file(path, {{"k", "v"}});
  ASSERT_TRUE(wrote.ok()) << wrote.error().message;
  EXPECT_EQ(read(), "k=v\n");
}

}  // namespace
}  // namespace kgpu
