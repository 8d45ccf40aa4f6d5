// Node selection as the scheduler's nodeaffinity helper decides it.
#include "structured/node_selector.h"

#include "gtest/gtest.h"

namespace devmgr::structured {
namespace {

using Json = nlohmann::json;

const Node kNode{"node-1", {{"region", "east"}, {"gpus", "4"}}};

bool Matches(const std::string& selector) {
  absl::StatusOr<bool> match = NodeSelectorMatches(Json::parse(selector), kNode);
  EXPECT_TRUE(match.ok()) << match.status();
  return match.value_or(false);
}

TEST(NodeSelectorTest, LabelOperators) {
  EXPECT_TRUE(Matches(R"({"nodeSelectorTerms": [{"matchExpressions": [
      {"key": "region", "operator": "In", "values": ["west", "east"]}]}]})"));
  EXPECT_FALSE(Matches(R"({"nodeSelectorTerms": [{"matchExpressions": [
      {"key": "region", "operator": "NotIn", "values": ["east"]}]}]})"));
  EXPECT_TRUE(Matches(R"({"nodeSelectorTerms": [{"matchExpressions": [
      {"key": "zone", "operator": "DoesNotExist"}, {"key": "region", "operator": "Exists"}]}]})"));
  EXPECT_TRUE(Matches(R"({"nodeSelectorTerms": [{"matchExpressions": [
      {"key": "gpus", "operator": "Gt", "values": ["3"]}]}]})"));
  EXPECT_FALSE(Matches(R"({"nodeSelectorTerms": [{"matchExpressions": [
      {"key": "gpus", "operator": "Lt", "values": ["4"]}]}]})"));
}

TEST(NodeSelectorTest, FieldsTermsAndEmptyTerms) {
  EXPECT_TRUE(Matches(R"({"nodeSelectorTerms": [{"matchFields": [
      {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]})"));
  // Terms are ORed; requirements in a term ANDed.
  EXPECT_TRUE(Matches(R"({"nodeSelectorTerms": [
      {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]},
      {"matchExpressions": [{"key": "region", "operator": "In", "values": ["east"]}]}]})"));
  EXPECT_FALSE(Matches(R"({"nodeSelectorTerms": [{
      "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}],
      "matchExpressions": [{"key": "region", "operator": "In", "values": ["west"]}]}]})"));
  // A term without requirements matches no node.
  EXPECT_FALSE(Matches(R"({"nodeSelectorTerms": [{}]})"));
}

TEST(NodeSelectorTest, MalformedSelectorsAreErrors) {
  for (const char* selector : {
           R"({"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Near"}]}]})",
           R"({"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In"}]}]})",
           R"({"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]}]})",
           R"({"nodeSelectorTerms": [{"matchFields": [{"key": "spec.x", "operator": "In", "values": ["a"]}]}]})",
           R"({"nodeSelectorTerms": "x"})"}) {
    EXPECT_FALSE(NodeSelectorMatches(Json::parse(selector), kNode).ok()) << selector;
  }
}

TEST(NodeSelectorTest, NodeMatchesByNameAllOrSelector) {
  EXPECT_TRUE(*NodeMatches(kNode, "node-1", false, nullptr));
  EXPECT_FALSE(*NodeMatches(kNode, "node-2", true, nullptr));
  EXPECT_TRUE(*NodeMatches(kNode, "", true, nullptr));
  EXPECT_FALSE(*NodeMatches(kNode, "", false, nullptr));
}

}  // namespace
}  // namespace devmgr::structured
