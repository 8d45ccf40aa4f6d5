// `devmgr bench --quick -o json`: every measurement runs against a real daemon and plugins and
// the report has its documented shape. No timing is asserted: only that figures are there,
// positive, and that each ratio is its median over its floor.
#include <gtest/gtest.h>

#include <string>

#include "nlohmann/json.hpp"
#include "tests/testlib/subprocess.h"

namespace devmgr {
namespace {

using testing::DevmgrBinary;
using testing::RunProcess;

TEST(BenchCommandTest, QuickRunReportsEveryMeasurementBesideItsFloor) {
  // --devices overrides the quick size: the report must say so.
  const auto result =
      RunProcess({DevmgrBinary(), "bench", "--quick", "--devices", "7", "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto report = nlohmann::json::parse(result.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << result.out;

  EXPECT_EQ(report["sizes"]["devices"], 7);
  EXPECT_EQ(report["sizes"]["pods"], 4);
  EXPECT_EQ(report["sizes"]["checkpoint_entries"], 10);

  const auto& results = report["results"];
  ASSERT_TRUE(results.is_array());
  std::vector<std::string> names;
  for (const auto& row : results) {
    const std::string name = row["name"];
    names.push_back(name);
    ASSERT_TRUE(row["median"].is_number()) << name;
    EXPECT_GT(row["median"].get<double>(), 0) << name;
    ASSERT_TRUE(row["unit"].is_string()) << name;
    ASSERT_TRUE(row["higher_is_better"].is_boolean()) << name;
    if (row["floor_median"].is_null()) {
      EXPECT_TRUE(row["ratio"].is_null()) << name;
      continue;
    }
    const double floor = row["floor_median"];
    EXPECT_GT(floor, 0) << name;
    EXPECT_FALSE(row["floor"].get<std::string>().empty()) << name;
    EXPECT_NEAR(row["ratio"].get<double>(), row["median"].get<double>() / floor, 1e-9 * floor)
        << name;
  }
  const std::vector<std::string> expected = {
      "admit pod, 1 container x 1 device",
      "admissions/s, 8 admitters x 8 plugins",
      "ListAndWatch 7 devices to allocatable",
      "ListAndWatch 7 devices, beside decoding",
      "PodResources GetAllocatableResources, 7 devices",
      "PodResources List, 4 pods x 4 containers x 2 devices",
      "PodResources List after a pod changed, 4 pods x 4 containers x 2 devices",
      "PodResources List calls/s, 4 pods x 4 containers x 2 devices",
      "restart, 10-entry checkpoint, to PodResources",
      "resident memory, idle",
      "resident memory, 2 plugins x 4 devices + 4 pods, right after the last admission",
      "resident memory, 2 plugins x 4 devices + 4 pods",
      "peak resident memory, 2 plugins x 4 devices + 4 pods",
  };
  EXPECT_EQ(names, expected);
}

TEST(BenchCommandTest, RefusesANonPositiveSize) {
  const auto result = RunProcess({DevmgrBinary(), "bench", "--quick", "--samples", "0"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_FALSE(result.err.empty());
}

}  // namespace
}  // namespace devmgr
