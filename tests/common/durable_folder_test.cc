// CreateFolders: every missing folder of a path made, with mkdir's modes, an existing one left as
// it is. (The fsync of the folder above each one made has no effect a test can see short of a
// power cut.)
#include "common/durable_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/testlib/scoped_umask.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr {
namespace {

using testing::ScopedUmask;
using testing::TempDir;

mode_t ModeOf(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(CreateFoldersTest, MakesEveryMissingFolderWithMkdirsModes) {
  TempDir dir;
  ScopedUmask mask(027);
  absl::StatusOr<bool> made = CreateFolders(dir.Sub("a/b/c"), 0755);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_TRUE(*made);
  EXPECT_EQ(ModeOf(dir.Sub("a")), 0750U) << "0777 less the umask";
  EXPECT_EQ(ModeOf(dir.Sub("a/b")), 0750U);
  EXPECT_EQ(ModeOf(dir.Sub("a/b/c")), 0750U) << "0755 less the umask";
}

TEST(CreateFoldersTest, AFolderThereIsLeftAsItIs) {
  TempDir dir;
  ASSERT_TRUE(std::filesystem::create_directory(dir.Sub("kept")));
  ASSERT_EQ(::chmod(dir.Sub("kept").c_str(), 0700), 0);
  absl::StatusOr<bool> made = CreateFolders(dir.Sub("kept"), 0755);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_FALSE(*made);
  EXPECT_EQ(ModeOf(dir.Sub("kept")), 0700U);
  // A trailing separator names the same folder.
  made = CreateFolders(dir.path().string() + "/kept/", 0755);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_FALSE(*made);
  // The folders below an existing one are made.
  made = CreateFolders(dir.path().string() + "/kept/new/", 0700);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_TRUE(*made);
  EXPECT_TRUE(std::filesystem::is_directory(dir.Sub("kept/new")));
}

// The path is the kernel's to resolve: "link/.." is the folder above the link's target, not the
// folder that holds the link. Before, the path was normalised first and the folder made beside
// the link.
TEST(CreateFoldersTest, ASymlinkFollowedByDotDotIsResolvedByTheKernel) {
  TempDir dir;
  std::filesystem::create_directories(dir.Sub("real/deep"));
  std::filesystem::create_directory_symlink(dir.Sub("real/deep"), dir.Sub("link"));
  absl::StatusOr<bool> made = CreateFolders(dir.Sub("link/../made/below"), 0750);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_TRUE(*made);
  EXPECT_TRUE(std::filesystem::is_directory(dir.Sub("real/made/below")));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("made")));
}

TEST(CreateFoldersTest, AFileInThePathIsAnErrorThatNamesIt) {
  TempDir dir;
  std::ofstream(dir.Sub("file")) << "x";
  absl::StatusOr<bool> made = CreateFolders(dir.Sub("file"), 0755);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().message(),
            "cannot create folder " + dir.Sub("file").string() + ": Not a directory");
  made = CreateFolders(dir.Sub("file/below"), 0755);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().message(),
            "cannot create folder " + dir.Sub("file/below").string() + ": Not a directory");
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("file/below")));
}

}  // namespace
}  // namespace devmgr
