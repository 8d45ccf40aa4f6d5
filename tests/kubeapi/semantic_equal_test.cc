// SemanticEqual: what an API server's round trip changes (empty fields left out, quantities in
// their canonical form) compares equal; everything else, quantities outside their fields
// included, compares exactly.
#include "kubeapi/semantic_equal.h"

#include <gtest/gtest.h>

namespace devmgr::kubeapi {
namespace {

using Json = nlohmann::json;

TEST(SemanticEqualTest, AbsentNullAndEmptyAreOneValue) {
  const Json stored = Json::parse(R"({"nodeSelectorTerms": [{"matchFields": [{"key": "name",
      "operator": "In", "values": ["node-a"]}]}]})");
  const Json written = Json::parse(R"({"nodeSelectorTerms": [{"matchExpressions": [],
      "matchFields": [{"key": "name", "operator": "In", "values": ["node-a"]}], "x": null,
      "y": {}}]})");
  EXPECT_TRUE(SemanticEqual(stored, written));
  EXPECT_TRUE(SemanticEqual(written, stored));
  EXPECT_TRUE(SemanticEqual(Json(), Json::array()));
  EXPECT_FALSE(SemanticEqual(Json::parse(R"({"a": ""})"), Json::object()));
  EXPECT_FALSE(SemanticEqual(Json::parse(R"({"a": false})"), Json::object()));
  EXPECT_FALSE(SemanticEqual(Json::parse(R"({"a": 0})"), Json::object()));
  EXPECT_FALSE(SemanticEqual(Json::parse(R"({"a": [1, 2]})"), Json::parse(R"({"a": [2, 1]})")));
  EXPECT_FALSE(SemanticEqual(Json::parse(R"({"a": [{}]})"), Json::parse(R"({"a": []})")));
}

TEST(SemanticEqualTest, QuantitiesCompareByValueInTheirFieldsOnly) {
  const Json stored = Json::parse(R"({
      "attributes": {"size": {"string": "1k"}},
      "capacity": {"memory": {"value": "1Gi", "requestPolicy": {"default": "1",
          "validValues": ["500m", "1"], "validRange": {"min": "1k", "step": "2"}}}}})");
  const Json written = Json::parse(R"({
      "attributes": {"size": {"string": "1k"}},
      "capacity": {"memory": {"value": "1024Mi", "requestPolicy": {"default": "1000m",
          "validValues": ["0.5", 1], "validRange": {"min": "1000", "step": 2}}}}})");
  EXPECT_TRUE(SemanticEqual(stored, written, DeviceQuantityFields()));
  EXPECT_FALSE(SemanticEqual(stored, written)) << "without the fields, text is text";

  Json other = written;
  other["capacity"]["memory"]["value"] = "1025Mi";
  EXPECT_FALSE(SemanticEqual(stored, other, DeviceQuantityFields()));
  other = written;
  other["attributes"]["size"]["string"] = "1000";
  EXPECT_FALSE(SemanticEqual(stored, other, DeviceQuantityFields()))
      << "an attribute's text is not a quantity";
  other = written;
  other["capacity"]["memory"]["value"] = "not a quantity";
  EXPECT_FALSE(SemanticEqual(stored, other, DeviceQuantityFields()));
  other = written;
  other["capacity"]["memory"].erase("value");
  EXPECT_FALSE(SemanticEqual(stored, other, DeviceQuantityFields()));
}

TEST(SemanticEqualTest, CountersCompareTheirValuesAsQuantities) {
  EXPECT_TRUE(
      SemanticEqual(Json::parse(R"({"memory": {"value": "2Gi"}, "cores": {"value": "8"}})"),
                    Json::parse(R"({"memory": {"value": "2048Mi"}, "cores": {"value": 8}})"),
                    CounterQuantityFields()));
  EXPECT_FALSE(SemanticEqual(Json::parse(R"({"memory": {"value": "2Gi"}})"),
                             Json::parse(R"({"memory": {"value": "2G"}})"),
                             CounterQuantityFields()));
  EXPECT_FALSE(
      SemanticEqual(Json::parse(R"({"memory": {"value": "2Gi"}})"),
                    Json::parse(R"({"memory": {"value": "2Gi"}, "cores": {"value": "1"}})"),
                    CounterQuantityFields()));
}

}  // namespace
}  // namespace devmgr::kubeapi
