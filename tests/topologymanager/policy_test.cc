// The daemon's topology policies over the device manager's hints, as upstream's topology
// manager merges them (policy_test.go's scenarios for one and two resources).
#include "topologymanager/policy.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(restricted.Admit("pod", "c", hints).message(),
            "Resources cannot be allocated with Topology locality");
  TopologyPolicy best_effort(TopologyPolicyKind::kBestEffort);
  EXPECT_TRUE(best_effort.Admit("pod", "c", hints).ok());
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
  EXPECT_TRUE(best_effort.Admit("p", "c", spread).ok());
  EXPECT_EQ(best_effort.GetAffinity("p", "c"), (NumaMask{0, 1}));

  TopologyPolicy restricted(TopologyPolicyKind::kRestricted);
  const absl::Status refused = restricted.Admit("p", "c", spread);
  EXPECT_EQ(refused.message(), "Resources cannot be allocated with Topology locality");
  EXPECT_EQ(restricted.GetAffinity("p", "c"), std::nullopt) << "a refusal remembers nothing";

  // A preferred two-node hint passes restricted but not single-numa-node.
  const TopologyHints wide = {
      {"example.com/gpu", std::vector<TopologyHint>{{NumaMask{0, 1}, true}}}};
  EXPECT_TRUE(restricted.Admit("p", "c", wide).ok());
  TopologyPolicy single(TopologyPolicyKind::kSingleNumaNode);
  EXPECT_FALSE(single.Admit("p", "c", wide).ok());
  const TopologyHints narrow = {
      {"example.com/gpu", std::vector<TopologyHint>{{NumaMask{1}, true}, {NumaMask{0, 1}, true}}}};
  EXPECT_TRUE(single.Admit("p", "c", narrow).ok());
  EXPECT_EQ(single.GetAffinity("p", "c"), (NumaMask{1}));

  TopologyPolicy none(TopologyPolicyKind::kNone);
  EXPECT_TRUE(none.Admit("p", "c", spread).ok());
  EXPECT_EQ(none.GetAffinity("p", "c"), std::nullopt);
}

TEST(TopologyPolicyTest, ForgetDropsOnlyThatPod) {
  TopologyPolicy policy(TopologyPolicyKind::kBestEffort);
  const TopologyHints hints = {{"example.com/gpu", std::vector<TopologyHint>{{NumaMask{0}, true}}}};
  ASSERT_TRUE(policy.Admit("p1", "a", hints).ok());
  ASSERT_TRUE(policy.Admit("p1", "b", hints).ok());
  ASSERT_TRUE(policy.Admit("p2", "a", hints).ok());
  policy.Forget("p1");
  EXPECT_EQ(policy.GetAffinity("p1", "a"), std::nullopt);
  EXPECT_EQ(policy.GetAffinity("p1", "b"), std::nullopt);
  EXPECT_EQ(policy.GetAffinity("p2", "a"), (NumaMask{0}));
}

}  // namespace
}  // namespace devmgr::topologymanager
