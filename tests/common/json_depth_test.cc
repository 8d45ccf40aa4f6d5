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

// The values of every array and object count together, by the containers opened and the commas
// between members (an upper bound); brackets and commas in strings do not count.
TEST(JsonDepthTest, CountsValuesByTheContainersAndCommasOutsideStrings) {
  // {"a":[1,2],"b":{"c":3}}: three containers, two commas.
  EXPECT_TRUE(CheckJsonShape(R"({"a":[1,2],"b":{"c":3}})", 4, 6).ok());
  const absl::Status more = CheckJsonShape(R"({"a":[1,2],"b":{"c":3}})", 4, 5);
  EXPECT_EQ(more.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(more.message(), "byte 15: JSON holds more than 5 values");
  EXPECT_TRUE(CheckJsonShape(R"(["a,b,[c,d", "\",[\""])", 1, 3).ok());
  // Values nested without commas count too.
  EXPECT_EQ(CheckJsonShape("[[[[]]],[[[]]]]", 8, 8).message(),
            "byte 10: JSON holds more than 8 values");
  EXPECT_EQ(CheckJsonShape("[[[]]]", 2, 100).message(), "byte 2: JSON nested deeper than 2 levels");
}

}  // namespace
}  // namespace devmgr
