// Quantity: Kubernetes' text forms read exactly, compared, added, converted.
#include "kubeapi/quantity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"

namespace devmgr::kubeapi {
namespace {

Quantity Q(const std::string& text) {
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  EXPECT_TRUE(q.ok()) << text << ": " << q.status();
  return q.value_or(Quantity());
}

TEST(QuantityTest, ReadsEveryForm) {
  for (const auto& [text, plain] : std::vector<std::pair<std::string, std::string>>{
           {"0", "0"},
           {"1", "1"},
           {"+2", "2"},
           {"-3", "-3"},
           {"1.5", "1.5"},
           {".5", "0.5"},
           {"5.", "5"},
           {"100m", "0.1"},
           {"1500m", "1.5"},
           {"1n", "0.000000001"},
           {"7u", "0.000007"},
           {"2k", "2000"},
           {"3M", "3000000"},
           {"1G", "1000000000"},
           {"1T", "1000000000000"},
           {"1P", "1000000000000000"},
           {"2E", "2000000000000000000"},
           {"1Ki", "1024"},
           {"1Mi", "1048576"},
           {"1.5Gi", "1610612736"},
           {"1Ti", "1099511627776"},
           {"1Pi", "1125899906842624"},
           {"8Ei", "9223372036854775808"},
           {"1e3", "1000"},
           {"1E3", "1000"},
           {"2e-3", "0.002"},
           {"1e+2", "100"},
           {"1e27", "1000000000000000000000000000"},
       }) {
    EXPECT_EQ(Q(text).ToString(), plain) << text;
  }
}

TEST(QuantityTest, RoundsBelowANanoUpAsKubernetes) {
  EXPECT_EQ(Q("0.1n").ToString(), "0.000000001");
  EXPECT_EQ(Q("1.0000000001").ToString(), "1.000000001");
  EXPECT_EQ(Q("-0.1n").ToString(), "-0.000000001");
}

TEST(QuantityTest, RefusesWhatIsNotAQuantity) {
  for (const std::string text :
       {"", "Ki", "1 Gi", "1.2.3", "1x", "1Gb", "--1", "1e", "1ee3", "e3", "1Ki2", "abc"}) {
    absl::StatusOr<Quantity> q = Quantity::Parse(text);
    EXPECT_FALSE(q.ok()) << text;
    EXPECT_TRUE(absl::StrContains(q.status().message(), "quantity \"" + text + "\"")) << q.status();
  }
  EXPECT_TRUE(absl::StrContains(Quantity::Parse("1e100").status().message(), "too large"));
}

TEST(QuantityTest, ComparesAddsAndConverts) {
  EXPECT_EQ(Q("1Ki").Compare(Q("1000")), 1);
  EXPECT_EQ(Q("1k").Compare(Q("1000")), 0);
  EXPECT_EQ(Q("1000m") == Q("1"), true);
  EXPECT_EQ(Q("-1").Compare(Q("0")), -1);
  EXPECT_EQ(Q("1Gi").Add(Q("512Mi"))->ToString(), "1610612736");
  EXPECT_EQ(Q("1").Sub(Q("1.5"))->ToString(), "-0.5");
  EXPECT_EQ(Q("1.5").Sign(), 1);
  EXPECT_EQ(Q("-1m").Sign(), -1);
  EXPECT_EQ(Q("0").Sign(), 0);
  EXPECT_TRUE(Q("2k").IsInteger());
  EXPECT_FALSE(Q("1.5").IsInteger());
  EXPECT_FALSE(Q("8Ei").IsInteger()) << "2^63 does not fit in int64";
  EXPECT_EQ(*Q("2k").AsInteger(), 2000);
  EXPECT_FALSE(Q("1.5").AsInteger().ok());
  EXPECT_DOUBLE_EQ(Q("1.5").AsApproximateFloat(), 1.5);
  EXPECT_EQ(Quantity::FromInt64(-7).ToString(), "-7");
}

}  // namespace
}  // namespace devmgr::kubeapi
