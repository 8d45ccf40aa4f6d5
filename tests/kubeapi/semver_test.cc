// Semver: blang/semver's strict parse, Kubernetes' normalisation, semver.org's precedence.
#include "kubeapi/semver.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace devmgr::kubeapi {
namespace {

Semver S(const std::string& text, bool normalize = false) {
  absl::StatusOr<Semver> v = Semver::Parse(text, normalize);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status();
  return v.value_or(Semver());
}

TEST(SemverTest, ParsesStrictly) {
  const Semver v = S("1.2.3-alpha.1+build.5");
  EXPECT_EQ(v.major, 1u);
  EXPECT_EQ(v.minor, 2u);
  EXPECT_EQ(v.patch, 3u);
  EXPECT_EQ(v.pre_release, (std::vector<std::string>{"alpha", "1"}));
  EXPECT_EQ(v.build, (std::vector<std::string>{"build", "5"}));
  EXPECT_EQ(v.ToString(), "1.2.3-alpha.1+build.5");
  for (const std::string bad :
       {"", "1", "1.0", "v1.0.0", "01.0.0", "1.0.0-01", "1.0.0-", "1.0.0+", "1.0.0-a..b", "a.b.c",
        "1.0.0.0", "200K", "Three", "99999999999999999999.0.0"}) {
    EXPECT_FALSE(Semver::Parse(bad).ok()) << bad;
  }
}

TEST(SemverTest, NormalizesAsKubernetesCel) {
  EXPECT_EQ(S("v1.0.0", true).ToString(), "1.0.0");
  EXPECT_EQ(S("1.0", true).ToString(), "1.0.0");
  EXPECT_EQ(S("1", true).ToString(), "1.0.0");
  EXPECT_EQ(S("01.01.01", true).ToString(), "1.1.1");
  EXPECT_EQ(S("v2.00.3-rc.1", true).ToString(), "2.0.3-rc.1");
  EXPECT_FALSE(Semver::Parse("1.0-rc.1", true).ok()) << "a short version with a pre-release";
  EXPECT_FALSE(Semver::Parse("v1.0", false).ok());
}

TEST(SemverTest, OrdersBySemverPrecedence) {
  const std::vector<std::string> ascending = {
      "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
      "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
      "1.0.0-rc.1",  "1.0.0",         "1.0.1",
      "1.1.0",       "2.0.0",
  };
  for (size_t i = 0; i + 1 < ascending.size(); ++i) {
    EXPECT_EQ(S(ascending[i]).Compare(S(ascending[i + 1])), -1) << ascending[i];
    EXPECT_EQ(S(ascending[i + 1]).Compare(S(ascending[i])), 1) << ascending[i];
  }
  EXPECT_EQ(S("1.0.0+a").Compare(S("1.0.0+b")), 0) << "build metadata does not count";
}

}  // namespace
}  // namespace devmgr::kubeapi
