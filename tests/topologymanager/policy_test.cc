// The daemon's topology policies over the device manager's hints, as upstream's topology
// manager merges them (policy_test.go's scenarios for one and two resources), and the machine's
// NUMA nodes as the kernel lists them.
#include "topologymanager/policy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "topologymanager/numa_nodes.h"

namespace devmgr::topologymanager {
namespace {

using devicemanager::NumaMask;
using devicemanager::TopologyHint;
using devicemanager::TopologyHints;

TEST(TopologyPolicyTest, ParsesTheKubeletNames) {
  EXPECT_EQ(*ParseTopologyPolicy("none"), TopologyPolicyKind::kNone);
  EXPECT_EQ(*ParseTopologyPolicy("best-effort"), TopologyPolicyKind::kBestEffort);
  EXPECT_EQ(*ParseTopologyPolicy("restricted"), TopologyPolicyKind::kRestricted);
  EXPECT_EQ(*ParseTopologyPolicy("single-numa-node"), TopologyPolicyKind::kSingleNumaNode);
  EXPECT_FALSE(ParseTopologyPolicy("strict").ok());
}

TEST(TopologyPolicyTest, ParsesTheKubeletScopes) {
  EXPECT_EQ(*ParseTopologyScope("container"), TopologyScope::kContainer);
  EXPECT_EQ(*ParseTopologyScope("pod"), TopologyScope::kPod);
  EXPECT_EQ(ParseTopologyScope("node").status().message(),
            "unknown topology scope \"node\": want container or pod");
  EXPECT_EQ(TopologyPolicy(TopologyPolicyKind::kRestricted).scope(), TopologyScope::kContainer);
}

TEST(TopologyPolicyTest, NoHintsIsAnyNodePreferred) {
  const TopologyHint merged = MergeTopologyHints({}, false);
  EXPECT_TRUE(merged.preferred);
  EXPECT_TRUE(merged.numa_affinity.empty());
  const TopologyHint no_preference = MergeTopologyHints({{"a.io/x", std::nullopt}}, false);
  EXPECT_TRUE(no_preference.preferred);
}

TEST(TopologyPolicyTest, PicksThePreferredNarrowestHint) {
  const TopologyHints hints = {
      {"example.com/gpu", std::vector<TopologyHint>{
                              {NumaMask{0}, true}, {NumaMask{1}, true}, {NumaMask{0, 1}, false}}}};
  const TopologyHint merged = MergeTopologyHints(hints, false);
  EXPECT_TRUE(merged.preferred);
  EXPECT_EQ(merged.numa_affinity, (NumaMask{0}));
}

TEST(TopologyPolicyTest, TwoResourcesMustAgree) {
  // The GPU fits on node 1 only; the NIC on either: the merge is node 1, preferred.
  const TopologyHints hints = {
      {"example.com/gpu", std::vector<TopologyHint>{{NumaMask{1}, true}, {NumaMask{0, 1}, false}}},
      {"example.com/nic", std::vector<TopologyHint>{{NumaMask{0}, true}, {NumaMask{1}, true}}}};
  const TopologyHint merged = MergeTopologyHints(hints, false);
  EXPECT_TRUE(merged.preferred);
  EXPECT_EQ(merged.numa_affinity, (NumaMask{1}));
}

// Upstream's mergePermutation: a merge is preferred only when its hints name the same nodes. A
// GPU pair that needs both nodes and a NIC that fits on one share node 0, but the GPUs are not
// all there: restricted and single-numa-node refuse the pod, as a kubelet does.
TEST(TopologyPolicyTest, HintsOfDifferentNodesAreNotAligned) {
  const TopologyHints hints = {
      {"example.com/gpu", std::vector<TopologyHint>{{NumaMask{0, 1}, true}}},
      {"example.com/nic", std::vector<TopologyHint>{{NumaMask{0}, true}, {NumaMask{1}, true}}}};
  const TopologyHint merged = MergeTopologyHints(hints, false);
  EXPECT_FALSE(merged.preferred);
  EXPECT_EQ(merged.numa_affinity, (NumaMask{0}));
  TopologyPolicy restricted(TopologyPolicyKind::kRestricted);
  EXPECT_EQ(restricted.Admit("pod", {"c"}, hints).message(),
            "Resources cannot be allocated with Topology locality");
  TopologyPolicy best_effort(TopologyPolicyKind::kBestEffort);
  EXPECT_TRUE(best_effort.Admit("pod", {"c"}, hints).ok());
}

// Between merges that are not preferred, upstream aims at the most nodes any resource needs at
// least (bestNonPreferredAffinityCount, here 2: the first resource has no narrower hint), not at
// the narrowest merge.
TEST(TopologyPolicyTest, ANonPreferredMergeAimsAtTheWidestNeed) {
  const TopologyHints hints = {
      {"example.com/a", std::vector<TopologyHint>{{NumaMask{0, 1}, false}}},
      {"example.com/b", std::vector<TopologyHint>{
                            {NumaMask{0}, true}, {NumaMask{1}, true}, {NumaMask{0, 1}, false}}}};
  const TopologyHint merged = MergeTopologyHints(hints, false);
  EXPECT_FALSE(merged.preferred);
  EXPECT_EQ(merged.numa_affinity, (NumaMask{0, 1}));

  // From above the need, the narrower merge wins; at it, the first stays.
  const TopologyHints wide = {
      {"example.com/a",
       std::vector<TopologyHint>{
           {NumaMask{0, 1, 2}, false}, {NumaMask{0, 1}, false}, {NumaMask{1, 2}, false}}}};
  EXPECT_EQ(MergeTopologyHints(wide, false).numa_affinity, (NumaMask{0, 1}));
}

TEST(TopologyPolicyTest, UnsatisfiableResourceIsNotPreferred) {
  const TopologyHints hints = {{"example.com/gpu", std::vector<TopologyHint>{}},
                               {"example.com/nic", std::vector<TopologyHint>{{NumaMask{0}, true}}}};
  const TopologyHint merged = MergeTopologyHints(hints, false);
  EXPECT_FALSE(merged.preferred);
  EXPECT_EQ(merged.numa_affinity, (NumaMask{0}));
}

TEST(TopologyPolicyTest, PoliciesDecideOnTheMerge) {
  // Two devices are needed and only a two-node affinity holds them.
  const TopologyHints spread = {
      {"example.com/gpu", std::vector<TopologyHint>{{NumaMask{0, 1}, false}}}};
  TopologyPolicy best_effort(TopologyPolicyKind::kBestEffort);
  EXPECT_TRUE(best_effort.Admit("p", {"c"}, spread).ok());
  EXPECT_EQ(best_effort.GetAffinity("p", "c"), (NumaMask{0, 1}));

  TopologyPolicy restricted(TopologyPolicyKind::kRestricted);
  const absl::Status refused = restricted.Admit("p", {"c"}, spread);
  EXPECT_EQ(refused.message(), "Resources cannot be allocated with Topology locality");
  EXPECT_EQ(restricted.GetAffinity("p", "c"), std::nullopt) << "a refusal remembers nothing";

  // A preferred two-node hint passes restricted but not single-numa-node.
  const TopologyHints wide = {
      {"example.com/gpu", std::vector<TopologyHint>{{NumaMask{0, 1}, true}}}};
  EXPECT_TRUE(restricted.Admit("p", {"c"}, wide).ok());
  TopologyPolicy single(TopologyPolicyKind::kSingleNumaNode);
  EXPECT_FALSE(single.Admit("p", {"c"}, wide).ok());
  const TopologyHints narrow = {
      {"example.com/gpu", std::vector<TopologyHint>{{NumaMask{1}, true}, {NumaMask{0, 1}, true}}}};
  EXPECT_TRUE(single.Admit("p", {"c"}, narrow).ok());
  EXPECT_EQ(single.GetAffinity("p", "c"), (NumaMask{1}));

  TopologyPolicy none(TopologyPolicyKind::kNone);
  EXPECT_TRUE(none.Admit("p", {"c"}, spread).ok());
  EXPECT_EQ(none.GetAffinity("p", "c"), std::nullopt);
}

// single-numa-node on a machine of one node: the only node is all of them, which upstream's
// policy turns into no affinity (the device manager then offers every device, those without
// topology too). Without the machine's nodes, and on a machine with more, the node stays.
TEST(TopologyPolicyTest, SingleNumaNodeOfTheWholeMachineIsNoAffinity) {
  const TopologyHints one = {{"example.com/gpu", std::vector<TopologyHint>{{NumaMask{0}, true}}}};
  TopologyPolicy whole(TopologyPolicyKind::kSingleNumaNode, NumaMask{0});
  ASSERT_TRUE(whole.Admit("p", {"c"}, one).ok());
  EXPECT_EQ(whole.GetAffinity("p", "c"), std::nullopt);
  TopologyPolicy unknown(TopologyPolicyKind::kSingleNumaNode);
  ASSERT_TRUE(unknown.Admit("p", {"c"}, one).ok());
  EXPECT_EQ(unknown.GetAffinity("p", "c"), (NumaMask{0}));
  TopologyPolicy wider(TopologyPolicyKind::kSingleNumaNode, NumaMask{0, 1});
  ASSERT_TRUE(wider.Admit("p", {"c"}, one).ok());
  EXPECT_EQ(wider.GetAffinity("p", "c"), (NumaMask{0}));
  // Other policies keep the whole machine's affinity, as upstream's.
  TopologyPolicy restricted(TopologyPolicyKind::kRestricted, NumaMask{0});
  ASSERT_TRUE(restricted.Admit("p", {"c"}, one).ok());
  EXPECT_EQ(restricted.GetAffinity("p", "c"), (NumaMask{0}));
}

TEST(NumaNodeListTest, ReadsTheKernelsListForm) {
  EXPECT_EQ(ParseNumaNodeList("0\n").value_or(std::vector<int>{}), (std::vector<int>{0}));
  EXPECT_EQ(ParseNumaNodeList("0-3,5").value_or(std::vector<int>{}),
            (std::vector<int>{0, 1, 2, 3, 5}));
  EXPECT_EQ(ParseNumaNodeList(" 5, 1-2 ,1").value_or(std::vector<int>{}),
            (std::vector<int>{1, 2, 5}));
  EXPECT_EQ(ParseNumaNodeList("63").value_or(std::vector<int>{}), (std::vector<int>{63}));
  for (const char* bad : {"", "x", "1-", "-1", "3-1", "64", "0,,1", "+1", "0-70"}) {
    EXPECT_EQ(ParseNumaNodeList(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseNumaNodeList("3-1").status().message(),
            "NUMA node list: \"3-1\": the range runs backwards");
}

TEST(NumaNodeListTest, ReadsAFileAndNamesItInErrors) {
  const std::filesystem::path dir = ::testing::TempDir();
  const std::filesystem::path file = dir / "numa-online";
  std::ofstream(file) << "0-1\n";
  EXPECT_EQ(ReadNumaNodeList(file).value_or(std::vector<int>{}), (std::vector<int>{0, 1}));
  std::ofstream(file) << "zero\n";
  EXPECT_EQ(ReadNumaNodeList(file).status().message(),
            file.string() + ": NUMA node list: \"zero\": not a node ID");
  std::filesystem::remove(file);
  EXPECT_EQ(ReadNumaNodeList(file).status().code(), absl::StatusCode::kNotFound);
}

TEST(TopologyPolicyTest, ForgetDropsOnlyThatPod) {
  TopologyPolicy policy(TopologyPolicyKind::kBestEffort);
  const TopologyHints hints = {{"example.com/gpu", std::vector<TopologyHint>{{NumaMask{0}, true}}}};
  ASSERT_TRUE(policy.Admit("p1", {"a"}, hints).ok());
  ASSERT_TRUE(policy.Admit("p1", {"b"}, hints).ok());
  ASSERT_TRUE(policy.Admit("p2", {"a"}, hints).ok());
  policy.Forget("p1");
  EXPECT_EQ(policy.GetAffinity("p1", "a"), std::nullopt);
  EXPECT_EQ(policy.GetAffinity("p1", "b"), std::nullopt);
  EXPECT_EQ(policy.GetAffinity("p2", "a"), (NumaMask{0}));
}

// Pod scope (upstream's podScope.Admit): one merge over the pod's hints, and every container
// named gets its affinity; a refusal remembers nothing for any of them.
TEST(TopologyPolicyTest, APodWideMergeGivesEveryContainerTheSameAffinity) {
  TopologyPolicy policy(TopologyPolicyKind::kSingleNumaNode, NumaMask{0, 1}, TopologyScope::kPod);
  const TopologyHints fits = {
      {"example.com/gpu", std::vector<TopologyHint>{{NumaMask{1}, true}, {NumaMask{0, 1}, false}}}};
  ASSERT_TRUE(policy.Admit("p1", {"init", "a", "b"}, fits).ok());
  for (const char* name : {"init", "a", "b"}) {
    EXPECT_EQ(policy.GetAffinity("p1", name), (NumaMask{1})) << name;
  }
  const TopologyHints spread = {
      {"example.com/gpu", std::vector<TopologyHint>{{NumaMask{0, 1}, true}}}};
  EXPECT_EQ(policy.Admit("p2", {"a", "b"}, spread).message(),
            "Resources cannot be allocated with Topology locality");
  EXPECT_EQ(policy.GetAffinity("p2", "a"), std::nullopt);
  EXPECT_EQ(policy.GetAffinity("p2", "b"), std::nullopt);
}

}  // namespace
}  // namespace devmgr::topologymanager
