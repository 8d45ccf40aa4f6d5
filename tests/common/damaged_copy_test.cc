// Damaged copies: a second damage of a state file is kept beside the first one's copy, never
// over it; the same damaged bytes found again add no copy; a folder keeps at most
// kDamagedCopiesKept copies of one file.
#include "common/damaged_copy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_store.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr {
namespace {

using testing::EntriesOf;
using testing::TempDir;

TEST(DamagedCopyTest, NamesStartWithThePlainCopyAndCountOn) {
  const std::vector<std::string> names = DamagedCopyNames("state");
  ASSERT_EQ(names.size(), static_cast<size_t>(kDamagedCopiesKept));
  EXPECT_EQ(names.front(), "state.corrupt");
  EXPECT_EQ(names[1], "state.corrupt.1");
  EXPECT_EQ(names.back(), absl::StrCat("state.corrupt.", kDamagedCopiesKept - 1));
  for (const std::string& name : names) EXPECT_TRUE(FileStore::IsValidName(name)) << name;
}

TEST(DamagedCopyTest, TheFirstFreeNameIsTakenAndTheLastWhenAllAre) {
  EXPECT_EQ(DamagedCopyName("state", {}), "state.corrupt");
  EXPECT_EQ(DamagedCopyName("state", {"other.corrupt", "state"}), "state.corrupt");
  EXPECT_EQ(DamagedCopyName("state", {"state", "state.corrupt"}), "state.corrupt.1");
  // A copy a human removed frees its name again.
  EXPECT_EQ(DamagedCopyName("state", {"state.corrupt", "state.corrupt.2"}), "state.corrupt.1");
  EXPECT_EQ(DamagedCopyName("state", DamagedCopyNames("state")), DamagedCopyNames("state").back());
}

TEST(DamagedCopyTest, MovingAsideKeepsEveryEarlierCopy) {
  TempDir dir;
  FileStore store(dir.path());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(store.Write("state", absl::StrCat("broken ", i)).ok());
    absl::StatusOr<std::string> aside = MoveDamagedAside(store, "state");
    ASSERT_TRUE(aside.ok()) << aside.status();
    EXPECT_EQ(*aside, DamagedCopyNames("state")[i]);
  }
  EXPECT_EQ(EntriesOf(dir.path()),
            (std::vector<std::string>{"state.corrupt", "state.corrupt.1", "state.corrupt.2"}));
  EXPECT_EQ(*store.Read("state.corrupt"), "broken 0");
  EXPECT_EQ(*store.Read("state.corrupt.2"), "broken 2");
  EXPECT_EQ(MoveDamagedAside(store, "state").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(MoveDamagedAside(store, "../state").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DamagedCopyTest, CopiesOfNewBytesAreAddedAndBytesKeptBeforeAreNot) {
  TempDir dir;
  FileStore store(dir.path());
  ASSERT_TRUE(store.Write("state", "live").ok());
  absl::StatusOr<std::string> first = KeepDamagedCopy(store, "state", "damage one");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, "state.corrupt");
  // A start after a crash finds the same damaged file again.
  EXPECT_EQ(*KeepDamagedCopy(store, "state", "damage one"), "state.corrupt");
  EXPECT_EQ(*KeepDamagedCopy(store, "state", "damage two"), "state.corrupt.1");
  EXPECT_EQ(*KeepDamagedCopy(store, "state", "damage one"), "state.corrupt");
  EXPECT_EQ(*KeepDamagedCopy(store, "state", "damage two"), "state.corrupt.1");
  EXPECT_EQ(EntriesOf(dir.path()),
            (std::vector<std::string>{"state", "state.corrupt", "state.corrupt.1"}));
  EXPECT_EQ(*store.Read("state.corrupt"), "damage one");
  EXPECT_EQ(*store.Read("state"), "live");
}

TEST(DamagedCopyTest, AFullFolderReplacesOnlyItsLastCopy) {
  TempDir dir;
  FileStore store(dir.path());
  for (int i = 0; i < kDamagedCopiesKept + 3; ++i) {
    ASSERT_TRUE(KeepDamagedCopy(store, "state", absl::StrCat("damage ", i)).ok());
  }
  EXPECT_EQ(EntriesOf(dir.path()).size(), static_cast<size_t>(kDamagedCopiesKept));
  const std::vector<std::string> names = DamagedCopyNames("state");
  for (int i = 0; i + 1 < kDamagedCopiesKept; ++i) {
    EXPECT_EQ(*store.Read(names[i]), absl::StrCat("damage ", i));
  }
  EXPECT_EQ(*store.Read(names.back()), absl::StrCat("damage ", kDamagedCopiesKept + 2));
}

}  // namespace
}  // namespace devmgr
