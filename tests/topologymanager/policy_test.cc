// The daemon's topology policies over the device manager's hints, as upstream's topology
// manager merges them (policy_test.go's scenarios for one and two resources), and the machine's
// NUMA nodes as the kernel lists them.
#include "topologymanager/policy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "topologymanager/numa_nodes.h"
#include "topologymanager/policy_options.h"

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

// With the machine's nodes known, "any node" is every one of them, upstream's default affinity
// (TestPolicyBestEffortMerge and TestPolicyRestrictedMerge on 4 nodes: "TopologyHint not set",
// "HintProvider returns -nil map[string][]TopologyHint from provider", "HintProvider returns
// empty non-nil map[string][]TopologyHint from provider", "Two providers, 1 hint each, no common
// mask"). Before, it was the nodes the hints named: nothing, or {0, 1}.
TEST(TopologyPolicyTest, AnyNodeIsEveryNodeOfAMachineWhoseNodesAreKnown) {
  const NumaMask machine{0, 1, 2, 3};
  TopologyHint merged = MergeTopologyHints({}, false, nullptr, machine);
  EXPECT_EQ(merged.numa_affinity, machine);
  EXPECT_TRUE(merged.preferred);
  merged = MergeTopologyHints({{"example.com/gpu", std::nullopt}}, false, nullptr, machine);
  EXPECT_EQ(merged.numa_affinity, machine);
  EXPECT_TRUE(merged.preferred);
  merged = MergeTopologyHints({{"example.com/gpu", std::vector<TopologyHint>{}}}, false, nullptr,
                              machine);
  EXPECT_EQ(merged.numa_affinity, machine);
  EXPECT_FALSE(merged.preferred);
  const TopologyHints apart = {{"example.com/gpu", std::vector<TopologyHint>{{NumaMask{0}, true}}},
                               {"example.com/nic", std::vector<TopologyHint>{{NumaMask{1}, true}}}};
  merged = MergeTopologyHints(apart, false, nullptr, machine);
  EXPECT_EQ(merged.numa_affinity, machine);
  EXPECT_FALSE(merged.preferred);
  EXPECT_EQ(MergeTopologyHints(apart, false).numa_affinity, (NumaMask{0, 1}))
      << "without the machine's nodes, those the hints name";

  // What the policies remember: best-effort the whole machine (the device manager then takes a
  // resource's devices with topology before those without), restricted refuses the pod, and
  // single-numa-node turns the whole machine into no affinity.
  TopologyPolicy best_effort(TopologyPolicyKind::kBestEffort, machine);
  ASSERT_TRUE(best_effort.Admit("p", {"c"}, apart).ok());
  EXPECT_EQ(best_effort.GetAffinity("p", "c"), machine);
  ASSERT_TRUE(best_effort.Admit("q", {"c"}, {}).ok());
  EXPECT_EQ(best_effort.GetAffinity("q", "c"), machine);
  TopologyPolicy restricted(TopologyPolicyKind::kRestricted, machine);
  EXPECT_FALSE(restricted.Admit("p", {"c"}, apart).ok());
  TopologyPolicy single(TopologyPolicyKind::kSingleNumaNode, machine);
  ASSERT_TRUE(single.Admit("p", {"c"}, {}).ok());
  EXPECT_EQ(single.GetAffinity("p", "c"), std::nullopt);
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

// The flag's syntax, as the kubelet's map flag reads it.
TEST(TopologyPolicyOptionsTest, ReadsPairsAsTheKubeletsMapFlag) {
  const std::map<std::string, std::string> pairs =
      *ParseOptionPairs({"a=1,, b = two ", "a=3", "empty="});
  EXPECT_EQ(pairs, (std::map<std::string, std::string>{{"a", "3"}, {"b", "two"}, {"empty", ""}}));
  EXPECT_EQ(ParseOptionPairs({"prefer-closest-numa-nodes"}).status().message(),
            "malformed pair, expect string=string");
  // Only empty parts are skipped: a blank one is malformed.
  EXPECT_FALSE(ParseOptionPairs({"a=1, "}).ok());
}

TEST(TopologyPolicyOptionsTest, ChecksTheKubeletsOptions) {
  auto options = [](std::map<std::string, std::string> pairs) {
    return NewTopologyPolicyOptions(pairs);
  };
  const TopologyPolicyOptions defaults = *options({});
  EXPECT_FALSE(defaults.prefer_closest_numa_nodes);
  EXPECT_EQ(defaults.max_allowable_numa_nodes, 8u);
  const TopologyPolicyOptions both =
      *options({{"prefer-closest-numa-nodes", "true"}, {"max-allowable-numa-nodes", "16"}});
  EXPECT_TRUE(both.prefer_closest_numa_nodes);
  EXPECT_EQ(both.max_allowable_numa_nodes, 16u);
  // Go's strconv spellings and range: ParseBool's, and Atoi's sign and 64 bits.
  EXPECT_TRUE(options({{"prefer-closest-numa-nodes", "T"}})->prefer_closest_numa_nodes);
  EXPECT_FALSE(options({{"prefer-closest-numa-nodes", "False"}})->prefer_closest_numa_nodes);
  EXPECT_EQ(options({{"max-allowable-numa-nodes", "+4294967296"}})->max_allowable_numa_nodes,
            4294967296u);

  EXPECT_EQ(options({{"full-pcpus-only", "true"}}).status().message(),
            "unknown Topology Manager Policy option: \"full-pcpus-only\"");
  EXPECT_EQ(options({{"prefer-closest-numa-nodes", "yes"}}).status().message(),
            "bad value for option \"prefer-closest-numa-nodes\": strconv.ParseBool: parsing "
            "\"yes\": invalid syntax");
  EXPECT_EQ(options({{"max-allowable-numa-nodes", "7"}}).status().message(),
            "the minimum value of \"max-allowable-numa-nodes\" should not be less than 8");
  EXPECT_EQ(options({{"max-allowable-numa-nodes", "many"}}).status().message(),
            "unable to convert policy option to integer \"max-allowable-numa-nodes\": "
            "strconv.Atoi: parsing \"many\": invalid syntax");
  EXPECT_EQ(options({{"max-allowable-numa-nodes", "99999999999999999999"}}).status().message(),
            "unable to convert policy option to integer \"max-allowable-numa-nodes\": "
            "strconv.Atoi: parsing \"99999999999999999999\": value out of range");
}

// Four nodes in two pairs, {1,3} the closest and {0,2} next; {0,1} the farthest.
NumaDistances FourNodes() {
  NumaDistances distances;
  for (int from = 0; from < 4; ++from) {
    for (int to = 0; to < 4; ++to) distances.Set(from, to, from == to ? 10 : 20);
  }
  for (auto [a, b, d] : {std::tuple{1, 3, 11}, std::tuple{0, 2, 12}}) {
    distances.Set(a, b, d);
    distances.Set(b, a, d);
  }
  return distances;
}

TEST(TopologyPolicyTest, PreferClosestPicksTheClosestOfAffinitiesOfAsManyNodes) {
  const NumaDistances distances = FourNodes();
  EXPECT_DOUBLE_EQ(distances.AverageFor(NumaMask{1, 3}), 10.5);
  EXPECT_DOUBLE_EQ(distances.AverageFor(NumaMask{0, 1}), 15);
  EXPECT_DOUBLE_EQ(distances.AverageFor(NumaMask{}), 0);
  const TopologyHints hints = {{"example.com/gpu", std::vector<TopologyHint>{
                                                       {NumaMask{0, 1}, true},
                                                       {NumaMask{0, 2}, true},
                                                       {NumaMask{1, 3}, true},
                                                       {NumaMask{0, 1, 2}, false},
                                                   }}};
  EXPECT_EQ(MergeTopologyHints(hints, false).numa_affinity, (NumaMask{0, 1}));
  EXPECT_EQ(MergeTopologyHints(hints, false, &distances).numa_affinity, (NumaMask{1, 3}));
  // Narrower still beats closer.
  TopologyHints with_one = hints;
  with_one["example.com/gpu"]->push_back({NumaMask{2}, true});
  EXPECT_EQ(MergeTopologyHints(with_one, false, &distances).numa_affinity, (NumaMask{2}));
  // As close: the lower mask.
  NumaDistances even = FourNodes();
  even.Set(0, 2, 11);
  even.Set(2, 0, 11);
  EXPECT_EQ(MergeTopologyHints(hints, false, &even).numa_affinity, (NumaMask{0, 2}));

  TopologyPolicy closest(TopologyPolicyKind::kRestricted, NumaMask{0, 1, 2, 3},
                         TopologyScope::kContainer, distances);
  ASSERT_TRUE(closest.Admit("p", {"c"}, hints).ok());
  EXPECT_EQ(closest.GetAffinity("p", "c"), (NumaMask{1, 3}));
}

// Between non-preferred merges the distances decide among those of as many nodes too.
TEST(TopologyPolicyTest, PreferClosestAppliesToNonPreferredMerges) {
  const NumaDistances distances = FourNodes();
  const TopologyHints hints = {
      {"example.com/a",
       std::vector<TopologyHint>{{NumaMask{0, 1}, false}, {NumaMask{1, 3}, false}}}};
  EXPECT_EQ(MergeTopologyHints(hints, false).numa_affinity, (NumaMask{0, 1}));
  EXPECT_EQ(MergeTopologyHints(hints, false, &distances).numa_affinity, (NumaMask{1, 3}));
}

// single-numa-node's affinities are one node each: upstream compares them by narrowness alone,
// whatever the option says.
TEST(TopologyPolicyTest, SingleNumaNodeIgnoresTheDistances) {
  NumaDistances distances = FourNodes();
  distances.Set(1, 1, 5);
  const TopologyHints hints = {
      {"example.com/gpu", std::vector<TopologyHint>{{NumaMask{0}, true}, {NumaMask{1}, true}}}};
  EXPECT_EQ(MergeTopologyHints(hints, false, &distances).numa_affinity, (NumaMask{1}));
  EXPECT_EQ(MergeTopologyHints(hints, true, &distances).numa_affinity, (NumaMask{0}));
}

// sysfs: nodeN/distance has one distance for each online node, in the order online lists them.
TEST(NumaNodeListTest, ReadsTheDistancesOfEachNode) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "numa-distances";
  std::filesystem::remove_all(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::filesystem::create_directories((dir / name).parent_path());
    std::ofstream(dir / name) << text;
  };
  write("online", "0,2\n");
  write("node0/distance", "10 21\n");
  write("node2/distance", "21 10\n");
  absl::StatusOr<NumaDistances> distances = ReadNumaDistances({0, 2}, dir);
  ASSERT_TRUE(distances.ok()) << distances.status();
  EXPECT_DOUBLE_EQ(distances->AverageFor(NumaMask{0, 2}), 15.5);
  EXPECT_DOUBLE_EQ(distances->AverageFor(NumaMask{2}), 10);

  write("node2/distance", "21\n");
  EXPECT_EQ(ReadNumaDistances({0, 2}, dir).status().message(),
            (dir / "node2/distance").string() + ": 1 distances for 2 online NUMA nodes");
  write("node2/distance", "21 near\n");
  EXPECT_EQ(ReadNumaDistances({0, 2}, dir).status().message(),
            (dir / "node2/distance").string() + ": cannot convert near to int");
  EXPECT_EQ(ReadNumaDistances({1}, dir).status().message(),
            "cannot read " + (dir / "node1/distance").string());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace devmgr::topologymanager
