// Upstream's TestAllocator (k8s.io/dynamic-resource-allocation/structured/internal/
// allocatortesting), every case by its name, from the JSON export of its inputs and expected
// outputs (scripts/export_allocator_cases.py). Each case runs with exactly the feature gates it
// names, as upstream's does; results are compared as upstream compares them (an allocationResult
// matcher: results and node selector terms in any order; a literal AllocationResult: exactly;
// consumed capacities as they are written too),
// errors by substring, and the search's step count where the case gives one (the value for the
// incubating allocator, whose search this one follows). The table is the one at 3d03671 (July
// 2026) plus the two cases kubernetes#140435 added later (partitionable-devices-counter-cache-*),
// exported the same way.
#include "structured/allocator.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cel/program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kubeapi/resource_claim.h"
#include "kubeapi/resource_slice.h"
#include "structured/feature_gates.h"
#include "tests/structured/allocator_cases_path.h"

namespace devmgr::structured {
namespace {

using Json = nlohmann::json;

const Json& Cases() {
  static const Json* cases = [] {
    std::ifstream in(DEVMGR_ALLOCATOR_CASES);
    std::stringstream text;
    text << in.rdbuf();
    return new Json(Json::parse(text.str()));
  }();
  return *cases;
}

std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  for (const Json& item : Cases()) names.push_back(item["name"].get<std::string>());
  return names;
}

const Json& CaseNamed(const std::string& name) {
  for (const Json& item : Cases()) {
    if (item["name"] == name) return item;
  }
  static const Json kNone;
  return kNone;
}

Features FeaturesOf(const Json& names) {
  // Exactly the gates the case names.
  Features features{.admin_access = false,
                    .prioritized_list = false,
                    .partitionable_devices = false,
                    .device_taints = false,
                    .consumable_capacity = false,
                    .device_binding_conditions = false,
                    .resource_claim_device_status = false,
                    .list_type_attributes = false,
                    .fractional_capacity_range = false};
  for (const Json& name : names) {
    const std::string gate = name.get<std::string>();
    if (gate == "DRAAdminAccess") features.admin_access = true;
    if (gate == "DRAPrioritizedList") features.prioritized_list = true;
    if (gate == "DRAPartitionableDevices") features.partitionable_devices = true;
    if (gate == "DRADeviceTaints") features.device_taints = true;
    if (gate == "DRAConsumableCapacity") features.consumable_capacity = true;
    // The table's name for upstream's DeviceBindingAndStatus, which is both gates.
    if (gate == "DRADeviceBindingConditions") {
      features.device_binding_conditions = true;
      features.resource_claim_device_status = true;
    }
    if (gate == "DRAListTypeAttributes") features.list_type_attributes = true;
    if (gate == "DRAFractionalCapacityRange") features.fractional_capacity_range = true;
  }
  return features;
}

// A node selector with its terms, requirements and values in a fixed order (upstream compares
// them with ConsistOf).
Json Canonical(Json selector) {
  if (!selector.is_object()) return selector;
  Json terms = selector.value("nodeSelectorTerms", Json::array());
  for (Json& term : terms) {
    for (const char* list : {"matchExpressions", "matchFields"}) {
      if (!term.contains(list)) continue;
      Json& requirements = term[list];
      for (Json& requirement : requirements) {
        if (requirement.contains("values")) {
          std::vector<std::string> values = requirement["values"].get<std::vector<std::string>>();
          std::sort(values.begin(), values.end());
          requirement["values"] = values;
        }
      }
      std::sort(requirements.begin(), requirements.end(),
                [](const Json& a, const Json& b) { return a.dump() < b.dump(); });
      if (requirements.empty()) term.erase(list);
    }
  }
  std::sort(terms.begin(), terms.end(),
            [](const Json& a, const Json& b) { return a.dump() < b.dump(); });
  return Json{{"nodeSelectorTerms", terms}};
}

// The consumedCapacity of each result as written, in a fixed order. Upstream compares the
// quantities as they are kept, format included; here that shows as the text ("4Gi", where a
// value without its format would be written "4294967296").
std::vector<std::string> ConsumedCapacityTexts(const Json& allocation) {
  std::vector<std::string> texts;
  const Json devices = allocation.value("devices", Json::object());
  for (const Json& result : devices.value("results", Json::array())) {
    const Json consumed = result.value("consumedCapacity", Json::object());
    texts.push_back(consumed.empty() ? "" : consumed.dump());
  }
  std::sort(texts.begin(), texts.end());
  return texts;
}

bool Matches(const Json& expected, const kubeapi::AllocationResult& actual, std::string* why) {
  absl::StatusOr<kubeapi::AllocationResult> want =
      kubeapi::DecodeAllocationResult(expected["allocation"], "expected");
  if (!want.ok()) {
    *why = std::string(want.status().message());
    return false;
  }
  const bool any_order = expected["anyOrder"].get<bool>();
  const Json actual_json = kubeapi::EncodeAllocationResult(actual);
  if (Canonical(want->node_selector.value_or(Json())) !=
      Canonical(actual.node_selector.value_or(Json()))) {
    *why = "node selector differs: " + actual_json.dump();
    return false;
  }
  if (actual.allocation_timestamp.has_value()) {
    *why = "has an allocationTimestamp";
    return false;
  }
  const bool results_match = any_order
                                 ? std::is_permutation(want->results.begin(), want->results.end(),
                                                       actual.results.begin(), actual.results.end())
                                 : want->results == actual.results;
  if (!results_match || want->config != actual.config ||
      ConsumedCapacityTexts(expected["allocation"]) != ConsumedCapacityTexts(actual_json)) {
    *why = "results differ: " + actual_json.dump();
    return false;
  }
  return true;
}

class AllocatorCaseTest : public testing::TestWithParam<std::string> {};

TEST_P(AllocatorCaseTest, Allocates) {
  const Json& tc = CaseNamed(GetParam());
  ASSERT_FALSE(tc.is_null());

  std::vector<kubeapi::ResourceClaim> claims;
  for (const Json& object : tc["claims"]) {
    absl::StatusOr<kubeapi::ResourceClaim> claim = kubeapi::DecodeResourceClaim(object);
    ASSERT_TRUE(claim.ok()) << claim.status();
    claims.push_back(*std::move(claim));
  }
  std::vector<kubeapi::DeviceClass> classes;
  for (const Json& object : tc["classes"]) {
    absl::StatusOr<kubeapi::DeviceClass> device_class = kubeapi::DecodeDeviceClass(object);
    ASSERT_TRUE(device_class.ok()) << device_class.status();
    classes.push_back(*std::move(device_class));
  }
  std::vector<kubeapi::ResourceSlicePtr> slices;
  for (const Json& object : tc["slices"]) {
    absl::StatusOr<kubeapi::ResourceSlice> slice = kubeapi::DecodeResourceSlice(object);
    ASSERT_TRUE(slice.ok()) << slice.status();
    slices.push_back(std::make_shared<const kubeapi::ResourceSlice>(*std::move(slice)));
  }
  AllocatedState allocated;
  for (const Json& id : tc["allocatedDevices"]) {
    allocated.devices.insert(DeviceID{id[0], id[1], id[2]});
  }
  for (const Json& id : tc["allocatedSharedDeviceIDs"]) {
    allocated.shared.insert({DeviceID{id[0], id[1], id[2]}, id[3].get<std::string>()});
  }
  for (const Json& item : tc["allocatedCapacity"]) {
    const Json& id = item["device"];
    ConsumedCapacity& consumed = allocated.consumed_capacity[DeviceID{id[0], id[1], id[2]}];
    for (const auto& [name, amount] : item["capacity"].items()) {
      consumed.emplace(name, *kubeapi::Quantity::Parse(amount.get<std::string>()));
    }
  }
  Node node{tc["node"]["name"], tc["node"]["labels"].get<std::map<std::string, std::string>>()};

  AllocatorOptions options;
  options.features = FeaturesOf(tc["features"]);
  options.new_share_id = [] { return std::string("aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"); };
  std::unique_ptr<Allocator> allocator = Allocator::Create(options, allocated, classes, slices);
  std::vector<const kubeapi::ResourceClaim*> to_allocate;
  for (const kubeapi::ResourceClaim& claim : claims) to_allocate.push_back(&claim);

  absl::StatusOr<std::optional<std::vector<kubeapi::AllocationResult>>> results =
      allocator->Allocate(node, to_allocate);

  if (!tc["expectError"].is_null()) {
    ASSERT_FALSE(results.ok()) << "expected an error containing " << tc["expectError"];
    EXPECT_NE(results.status().message().find(tc["expectError"].get<std::string>()),
              std::string::npos)
        << results.status();
    return;
  }
  ASSERT_TRUE(results.ok()) << results.status();
  const Json& expected = tc["expectResults"];
  const std::vector<kubeapi::AllocationResult> actual =
      results->value_or(std::vector<kubeapi::AllocationResult>());
  ASSERT_EQ(actual.size(), expected.size()) << "allocated: " << results->has_value();
  // Upstream compares the claims' results with ConsistOf: any order of claims.
  std::vector<size_t> order(actual.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::string why;
  bool matched = false;
  do {
    bool all = true;
    for (size_t i = 0; i < expected.size() && all; ++i) {
      all = Matches(expected[i], actual[order[i]], &why);
    }
    matched = all;
  } while (!matched && std::next_permutation(order.begin(), order.end()));
  EXPECT_TRUE(matched) << why;

  if (!tc["expectSteps"].is_null()) {
    int64_t steps = tc["expectSteps"].get<int64_t>();
    if (tc["expectStepsByChannel"].contains("incubating")) {
      steps = tc["expectStepsByChannel"]["incubating"].get<int64_t>();
    }
    EXPECT_EQ(allocator->stats().allocate_one_calls, steps);
  }
}

std::string TestName(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(TestAllocator, AllocatorCaseTest, testing::ValuesIn(CaseNames()),
                         TestName);

// The table is all there: a broken export would otherwise pass with fewer cases.
TEST(AllocatorCasesTest, TheWholeUpstreamTableIsThere) {
  EXPECT_EQ(Cases().size(), 221u);
  for (const char* name :
       {"simple", "small-and-large-backtrack-requests", "small-and-large-backtrack-claims",
        "all-devices-single", "max-number-devices", "with-constraint",
        "partitionable-devices-counter-cache-scoped-by-pool-ID",
        "partitionable-devices-counter-cache-not-crossed-between-driver-schemas"}) {
    EXPECT_FALSE(CaseNamed(name).is_null()) << name;
  }
}

// Binding conditions are upstream's DeviceBindingAndStatus: both DRADeviceBindingConditions and
// DRAResourceClaimDeviceStatus, each a gate of its own as a kubelet or scheduler flag names them.
// Before, the second was refused as an unknown gate and the first alone turned the feature on.
TEST(FeatureGatesTest, BindingConditionsNeedBothOfTheirGates) {
  EXPECT_FALSE(Features{}.device_binding_and_status());
  absl::StatusOr<Features> features = ParseFeatureGates("DRADeviceBindingConditions=true");
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_TRUE(features->device_binding_and_status());
  features =
      ParseFeatureGates("DRADeviceBindingConditions=true,DRAResourceClaimDeviceStatus=false");
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_FALSE(features->device_binding_and_status());
  features = ParseFeatureGates("DRAResourceClaimDeviceStatus=true");
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_FALSE(features->device_binding_and_status());
}

// A new object's selectors are compiled as the API server compiles them (NewExpressions): a
// field or function whose gate is off is unknown there (upstream's TestCEL cases
// allow_multiple_allocations_disabled and includes-function-compilation-error), while the
// allocator, which compiles them as stored, takes both.
TEST(FeatureGatesTest, ANewSelectorHasTheFieldsAndFunctionsOfTheGatesOn) {
  const std::string multiple = "device.allowMultipleAllocations == false";
  const std::string includes = "device.attributes['dra.example.com'].attr.includes('fish')";
  Features off;
  off.consumable_capacity = false;
  off.list_type_attributes = false;
  absl::StatusOr<uint64_t> cost = NewSelectorCost{off}(multiple);
  EXPECT_THAT(cost.status().message(),
              testing::HasSubstr("undefined field 'allowMultipleAllocations'"));
  cost = NewSelectorCost{off}(includes);
  EXPECT_THAT(cost.status().message(), testing::HasSubstr("undeclared reference to 'includes'"));

  Features on;
  on.consumable_capacity = true;
  on.list_type_attributes = true;
  EXPECT_TRUE(NewSelectorCost{on}(multiple).ok()) << NewSelectorCost{on}(multiple).status();
  EXPECT_TRUE(NewSelectorCost{on}(includes).ok()) << NewSelectorCost{on}(includes).status();
  // The defaults: DRAConsumableCapacity on, DRAListTypeAttributes off.
  EXPECT_TRUE(NewSelectorCost{Features{}}(multiple).ok());
  EXPECT_FALSE(NewSelectorCost{Features{}}(includes).ok());
  // As stored, whatever the gates.
  EXPECT_TRUE(cel::SelectorMaxCost(multiple).ok());
  EXPECT_TRUE(cel::SelectorMaxCost(includes).ok());
}

}  // namespace
}  // namespace devmgr::structured
