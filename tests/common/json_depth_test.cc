#include "common/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace devmgr {
namespace {

TEST(JsonDepthTest, CountsOnlyBracketsOutsideStrings) {
  EXPECT_TRUE(CheckJsonDepth(R"({"a":[{"b":[]}]})", 4).ok());
  const absl::Status deeper = CheckJsonDepth(R"({"a":[{"b":[]}]})", 3);
  EXPECT_EQ(deeper.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(deeper.message(), "byte 11: JSON nested deeper than 3 levels");
  // Brackets in strings, escaped quotes included, do not count.
  EXPECT_TRUE(CheckJsonDepth(R"(["[[[[", "\"[[[[", "\\"])", 1).ok());
  // Siblings do not add up; closing brings the depth back.
  EXPECT_TRUE(CheckJsonDepth("[[],[],[[]]]", 3).ok());
  EXPECT_FALSE(CheckJsonDepth(std::string(1'000'000, '['), 1000).ok());
  EXPECT_TRUE(CheckJsonDepth("", 0).ok());
}

}  // namespace
}  // namespace devmgr
