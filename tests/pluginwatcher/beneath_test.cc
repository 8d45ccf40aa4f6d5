// OpenBeneath and NormalFolderPath: what the watcher opens under its folder never goes through a
// symlink below it, and a folder's path has no trailing separator. CheckFdFolder tells a folder
// that names this process's descriptors, as /proc/self/fd does, from one that does not.
#include "pluginwatcher/beneath.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/testlib/temp_dir.h"

namespace devmgr::pluginwatcher {
namespace {

namespace fs = std::filesystem;

TEST(NormalFolderPathTest, DropsTheTrailingSeparator) {
  EXPECT_EQ(NormalFolderPath("/a/b/"), fs::path("/a/b"));
  EXPECT_EQ(NormalFolderPath("/a/./b/."), fs::path("/a/b"));
  EXPECT_EQ(NormalFolderPath("/a/b"), fs::path("/a/b"));
  EXPECT_EQ(NormalFolderPath("/"), fs::path("/"));
}

class OpenBeneathTest : public ::testing::Test {
 protected:
  OpenBeneathTest() {
    fs::create_directories(root_ / "real" / "sub");
    fs::create_directories(dir_.Sub("outside") / "sub");
    std::ofstream(root_ / "real" / "file") << "x";
    fs::create_directory_symlink(dir_.Sub("outside"), root_ / "link");
    fs::create_symlink(root_ / "real" / "file", root_ / "real" / "file-link");
  }

  testing::TempDir dir_;
  const fs::path root_ = dir_.Sub("root");
};

TEST_F(OpenBeneathTest, OpensWhatLiesUnderTheRoot) {
  absl::StatusOr<Fd> sub = OpenBeneath(root_, root_ / "real" / "sub", O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(sub.ok()) << sub.status();
  struct stat st {};
  ASSERT_EQ(::fstat(sub->Get(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
}

TEST_F(OpenBeneathTest, NeverGoesThroughASymlinkedFolder) {
  absl::StatusOr<Fd> sub = OpenBeneath(root_, root_ / "link" / "sub", O_PATH | O_DIRECTORY);
  EXPECT_TRUE(absl::IsFailedPrecondition(sub.status())) << sub.status();
  EXPECT_TRUE(GoneOrReplaced(sub.status()));
}

TEST_F(OpenBeneathTest, OpensASymlinkAtTheLastNameItselfWithOPath) {
  absl::StatusOr<Fd> link = OpenBeneath(root_, root_ / "real" / "file-link", O_PATH);
  ASSERT_TRUE(link.ok()) << link.status();
  struct stat st {};
  ASSERT_EQ(::fstat(link->Get(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      OpenBeneath(root_, root_ / "real" / "file-link", O_RDONLY).status()));
}

TEST_F(OpenBeneathTest, TellsWhatIsGoneOrReplacedFromWhatCannotBeOpened) {
  absl::Status missing = OpenBeneath(root_, root_ / "real" / "missing", O_PATH).status();
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  EXPECT_TRUE(GoneOrReplaced(missing));
  // A file where a folder must be.
  absl::Status file = OpenBeneath(root_, root_ / "real" / "file" / "x", O_PATH).status();
  EXPECT_TRUE(GoneOrReplaced(file)) << file;
  absl::Status outside = OpenBeneath(root_, dir_.Sub("outside"), O_PATH).status();
  EXPECT_TRUE(absl::IsInvalidArgument(outside)) << outside;
  EXPECT_FALSE(GoneOrReplaced(outside));
  EXPECT_TRUE(absl::IsInvalidArgument(OpenBeneath(root_, root_ / ".." / "root", O_PATH).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(OpenBeneath(root_, root_, O_PATH).status()));
}

TEST_F(OpenBeneathTest, TheRootMayBeASymlink) {
  const fs::path root_link = dir_.Sub("root-link");
  fs::create_directory_symlink(root_, root_link);
  EXPECT_TRUE(OpenBeneath(root_link, root_link / "real" / "sub", O_PATH | O_DIRECTORY).ok());
}

TEST(CheckFdFolderTest, TellsWhetherAFolderNamesThisProcesssDescriptors) {
  EXPECT_TRUE(CheckFdFolder(kProcSelfFd).ok());

  // /proc not mounted: nothing is there.
  testing::TempDir empty;
  const absl::Status missing = CheckFdFolder(empty.path());
  EXPECT_TRUE(absl::IsFailedPrecondition(missing)) << missing;
  EXPECT_THAT(std::string(missing.message()),
              ::testing::StartsWith(empty.path().string() + " is not available"));
  EXPECT_THAT(std::string(missing.message()), ::testing::HasSubstr("No such file or directory"));

  // Names that lead elsewhere: each one (for every descriptor number the check may open) is a
  // symlink to the folder itself.
  testing::TempDir elsewhere;
  for (int fd = 0; fd < 1024; ++fd) {
    fs::create_directory_symlink(elsewhere.path(), elsewhere.Sub(std::to_string(fd)));
  }
  const absl::Status other = CheckFdFolder(elsewhere.path());
  EXPECT_TRUE(absl::IsFailedPrecondition(other)) << other;
  EXPECT_THAT(std::string(other.message()),
              ::testing::HasSubstr("is not the file its descriptor is open on"));
}

}  // namespace
}  // namespace devmgr::pluginwatcher
