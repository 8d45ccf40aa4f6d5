#include "common/change_log.h"

#include <gtest/gtest.h>

namespace devmgr {
namespace {

using Keys = std::optional<std::vector<std::string>>;

TEST(ChangeLogTest, TellsTheKeysChangedAfterARevisionEachOnce) {
  ChangeLog log(8);
  log.Record(1, "b");
  log.Record(2, "a");
  log.Record(5, "b");
  EXPECT_EQ(log.Since(0), Keys({"a", "b"}));
  EXPECT_EQ(log.Since(1), Keys({"a", "b"}));
  EXPECT_EQ(log.Since(2), Keys({"b"}));
  EXPECT_EQ(log.Since(4), Keys({"b"}));
  EXPECT_EQ(log.Since(5), Keys(std::vector<std::string>()));
  EXPECT_EQ(log.Since(9), Keys(std::vector<std::string>()));
}

TEST(ChangeLogTest, ForgetsWhatIsPastItsCapacity) {
  ChangeLog log(2);
  log.Record(1, "a");
  log.Record(2, "b");
  log.Record(3, "c");
  EXPECT_EQ(log.Since(0), std::nullopt) << "the change at 1 is gone";
  EXPECT_EQ(log.Since(1), Keys({"b", "c"}));
  EXPECT_EQ(log.Since(2), Keys({"c"}));
}

TEST(ChangeLogTest, AResetTellsNothingBeforeIt) {
  ChangeLog log(8);
  log.Record(1, "a");
  log.Reset(4);
  EXPECT_EQ(log.Since(1), std::nullopt);
  EXPECT_EQ(log.Since(3), std::nullopt);
  EXPECT_EQ(log.Since(4), Keys(std::vector<std::string>()));
  log.Record(6, "b");
  EXPECT_EQ(log.Since(4), Keys({"b"}));
}

TEST(ChangeLogTest, WithoutCapacityOnlyTheLatestRevisionIsTold) {
  ChangeLog log(0);
  log.Record(3, "a");
  EXPECT_EQ(log.Since(2), std::nullopt);
  EXPECT_EQ(log.Since(3), Keys(std::vector<std::string>()));
}

}  // namespace
}  // namespace devmgr
