// --feature-gates values read as component-base's featureGate.Set reads them: Go's booleans,
// white space around names and values, and its error texts.
#include "common/feature_gate_list.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/go_bool.h"

namespace devmgr {
namespace {

using Gates = std::vector<std::pair<std::string, bool>>;

TEST(FeatureGateListTest, GoBooleansAndWhiteSpace) {
  absl::StatusOr<Gates> gates = ParseFeatureGateList("A=True,B=0, C = t ,,D=FALSE,E=1,F=false,A=f");
  ASSERT_TRUE(gates.ok()) << gates.status();
  EXPECT_EQ(*gates, (Gates{{"A", true},
                           {"B", false},
                           {"C", true},
                           {"D", false},
                           {"E", true},
                           {"F", false},
                           {"A", false}}));
  EXPECT_EQ(ParseFeatureGateList("")->size(), 0u);
}

TEST(FeatureGateListTest, UpstreamsErrors) {
  EXPECT_EQ(ParseFeatureGateList("A=true,B").status().message(), "missing bool value for B");
  EXPECT_EQ(ParseFeatureGateList("A=yes").status().message(),
            "invalid value of A=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax");
  EXPECT_EQ(ParseFeatureGateList(" A = ").status().message(),
            "invalid value of A=, err: strconv.ParseBool: parsing \"\": invalid syntax");
}

TEST(GoBoolTest, StrconvParseBool) {
  for (const char* yes : {"1", "t", "T", "TRUE", "true", "True"}) EXPECT_TRUE(*ParseGoBool(yes));
  for (const char* no : {"0", "f", "F", "FALSE", "false", "False"}) EXPECT_FALSE(*ParseGoBool(no));
  for (const char* neither : {"tRUE", "yes", "on", " true", "2"}) {
    EXPECT_FALSE(ParseGoBool(neither).ok()) << neither;
  }
}

}  // namespace
}  // namespace devmgr
