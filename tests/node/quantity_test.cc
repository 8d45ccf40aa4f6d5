#include "node/quantity.h"

#include <gtest/gtest.h>

namespace devmgr::node {
namespace {

TEST(PodTest, ParseDeviceCountAcceptsWholeQuantities) {
  const std::pair<const char*, int64_t> cases[] = {
      {"0", 0},
      {"2", 2},
      {"+3", 3},
      {"2000m", 2},
      {"1k", 1000},
      {"1Ki", 1024},
      {"2Mi", 2097152},
      {"1e1", 10},
      {"1E2", 100},
      {"1.5k", 1500},
      {"0.000", 0},
      {"007", 7},
      {"-0", 0},
      {"120e-1", 12},
      {"9223372036854775807", 9223372036854775807},
      // A binary quantity past int64 is int64's largest, as the API server stores it.
      {"16Ei", 9223372036854775807},
  };
  for (const auto& [text, want] : cases) {
    absl::StatusOr<int64_t> got = ParseDeviceCount(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status();
    EXPECT_EQ(*got, want) << text;
  }
}

TEST(PodTest, ParseDeviceCountRefusesWithAReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "is not a number"},       {"abc", "is not a number"},
      {"1.5", "not a whole number"}, {"1500m", "not a whole number"},
      {"1u", "not a whole number"},  {"-1", "is negative"},
      {"-2000m", "is negative"},     {"2x", "unknown suffix"},
      {"1e", "unknown suffix"},      {"1e+", "malformed exponent"},
      {"1..2", "unknown suffix"},    {"9223372036854775808", "too large"},
      {"10E", "too large"},          {"1e999", "out of range"},
      {" 1", "is not a number"},
  };
  for (const auto& [text, why] : cases) {
    absl::StatusOr<int64_t> got = ParseDeviceCount(text);
    ASSERT_FALSE(got.ok()) << text << " gave " << *got;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(why), absl::string_view::npos)
        << text << ": " << got.status();
  }
}

}  // namespace
}  // namespace devmgr::node
