// Upstream's tests of k8s.io/dynamic-resource-allocation/resourceclaim that concern a pod
// (resourceclaim_test.go): TestName, TestResourceClaimIsFor (its "Pod" cases; the PodGroup
// cases test IsForPodGroup, which only the PodGroup's claim controller calls) and
// TestIsReservedForPod, case by case under their names.
#include "dra/claim_name.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace devmgr::dra {
namespace {

Pod NewPod(const std::string& name, const std::string& uid,
           std::optional<std::string> pod_group = std::nullopt) {
  Pod pod;
  pod.namespace_name = "kube-system";
  pod.name = name;
  pod.uid = uid;
  pod.pod_group_name = std::move(pod_group);
  return pod;
}

ResourceClaim NewClaim(const std::string& namespace_name, const std::string& name,
                       std::vector<OwnerReference> owners = {},
                       std::vector<ResourceClaimConsumerReference> reserved_for = {}) {
  ResourceClaim claim;
  claim.namespace_name = namespace_name;
  claim.name = name;
  claim.uid = "uid-" + name;
  claim.owner_references = std::move(owners);
  claim.reserved_for = std::move(reserved_for);
  return claim;
}

TEST(ClaimNameTest, TestName) {
  Pod pod;
  pod.namespace_name = "default";
  pod.name = "test-pod";
  struct Case {
    PodResourceClaim pod_claim;
    std::vector<PodResourceClaimStatus> statuses;
    std::optional<std::string> expected_name;
    bool expected_check = false;
    std::string expected_error;
  };
  const std::map<std::string, Case> cases = {
      {"resource-claim-name-set",
       {{"", std::string("existing-claim"), std::nullopt}, {}, "existing-claim", false, ""}},
      {"resource-claim-template-name-set-and-status-found",
       {{"template-claim", std::nullopt, std::string("template-claim-template")},
        {{"template-claim", std::string("created-claim")}},
        "created-claim",
        true,
        ""}},
      {"resource-claim-template-name-set-but-status-not-found",
       {{"template-claim", std::nullopt, std::string("template-claim-template")},
        {{"other-claim", std::string("other-created-claim")}},
        std::nullopt,
        false,
        R"(pod "default/test-pod": ResourceClaim not created yet)"}},
      {"neither-resource-claim-name-nor-template-name-set",
       {{"invalid-claim", std::nullopt, std::nullopt},
        {},
        std::nullopt,
        false,
        R"(pod "default/test-pod", spec.resourceClaim "invalid-claim": none of the supported )"
        "fields are set"}},
  };
  for (const auto& [name, c] : cases) {
    SCOPED_TRACE(name);
    pod.resource_claim_statuses = c.statuses;
    const absl::StatusOr<ResolvedClaimName> resolved = ClaimName(pod, c.pod_claim);
    if (!c.expected_error.empty()) {
      EXPECT_EQ(resolved.status().message(), c.expected_error);
      continue;
    }
    ASSERT_TRUE(resolved.ok()) << resolved.status();
    EXPECT_EQ(resolved->name, c.expected_name);
    EXPECT_EQ(resolved->must_check_owner, c.expected_check);
  }
}

TEST(ClaimNameTest, TestResourceClaimIsFor) {
  const Pod pod_not_owner = NewPod("podNotOwner", "1");
  const Pod pod_owner = NewPod("podOwner", "3");
  const auto with_pod_group = [](Pod pod, const std::string& group) {
    pod.pod_group_name = group;
    return pod;
  };
  const OwnerReference pod_group_owner{"scheduling.k8s.io/v1alpha2", "PodGroup", "podGroupOwner",
                                       "4", true};
  OwnerReference other_version = pod_group_owner;
  other_version.api_version = "scheduling.k8s.io/v25";
  const ResourceClaim no_owner = NewClaim("kube-system", "claimNoOwner");
  const ResourceClaim with_owner =
      NewClaim("kube-system", "claimWithOwner", {{"", "", "", pod_owner.uid, true}});
  const ResourceClaim with_pod_group_owner =
      NewClaim("kube-system", "claimWithPodGroupOwner", {pod_group_owner});
  const ResourceClaim with_other_version_pod_group_owner =
      NewClaim("kube-system", "claimWithPodGroupOwner", {other_version});
  const ResourceClaim user_with_owner =
      NewClaim("user-namespace", "userClaimWithOwner", {{"", "", "", pod_owner.uid, true}});
  const ResourceClaim user_with_pod_group_owner =
      NewClaim("user-namespace", "userClaimWithPodGroupOwner", {{"", "", "", "4", true}});

  struct Case {
    Pod pod;
    ResourceClaim claim;
    bool accept_pod_group = false;
    std::string expected_error;
  };
  const std::map<std::string, Case> cases = {
      {"owned", {pod_owner, with_owner, false, ""}},
      {"other-pod",
       {pod_not_owner, with_owner, false,
        "ResourceClaim kube-system/claimWithOwner was not created for Pod "
        "kube-system/podNotOwner (Pod is not owner)"}},
      {"no-owner",
       {pod_owner, no_owner, false,
        "ResourceClaim kube-system/claimNoOwner was not created for Pod kube-system/podOwner "
        "(Pod is not owner)"}},
      {"different-namespace",
       {pod_owner, user_with_owner, false,
        "ResourceClaim user-namespace/userClaimWithOwner is not in the same namespace as Pod "
        "kube-system/podOwner"}},
      {"owned-by-podgroup",
       {with_pod_group(pod_owner, "podGroupOwner"), with_pod_group_owner, true, ""}},
      {"owned-by-podgroup-other-api-version",
       {with_pod_group(pod_owner, "podGroupOwner"), with_other_version_pod_group_owner, true, ""}},
      {"other-podgroup",
       {with_pod_group(pod_owner, "podGroupNotOwner"), with_pod_group_owner, true,
        "ResourceClaim kube-system/claimWithPodGroupOwner was not created for Pod "
        "kube-system/podOwner (neither Pod nor PodGroup podGroupNotOwner is the owner)"}},
      {"no-podgroup-owner",
       {with_pod_group(pod_owner, "podGroupOwner"), no_owner, true,
        "ResourceClaim kube-system/claimNoOwner was not created for Pod kube-system/podOwner "
        "(neither Pod nor PodGroup podGroupOwner is the owner)"}},
      {"different-podgroup-namespace",
       {with_pod_group(pod_owner, "podGroupOwner"), user_with_pod_group_owner, true,
        "ResourceClaim user-namespace/userClaimWithPodGroupOwner is not in the same namespace "
        "as Pod kube-system/podOwner"}},
  };
  for (const auto& [name, c] : cases) {
    SCOPED_TRACE(name);
    const absl::Status owned = IsForPod(c.pod, c.claim, c.accept_pod_group);
    if (c.expected_error.empty()) {
      EXPECT_TRUE(owned.ok()) << owned;
    } else {
      EXPECT_EQ(owned.message(), c.expected_error);
    }
  }

  // Not upstream's: the PodGroup's claim without the gate is the pod's only by its own
  // ownership, and an owner that is not the controller, or of another kind or API group, is
  // never the pod's group.
  EXPECT_EQ(
      IsForPod(with_pod_group(pod_owner, "podGroupOwner"), with_pod_group_owner, false).message(),
      "ResourceClaim kube-system/claimWithPodGroupOwner was not created for Pod "
      "kube-system/podOwner (Pod is not owner)");
  for (OwnerReference owner :
       {OwnerReference{"scheduling.k8s.io/v1alpha2", "PodGroup", "podGroupOwner", "4", false},
        OwnerReference{"scheduling.k8s.io/v1alpha2", "Workload", "podGroupOwner", "4", true},
        OwnerReference{"example.com/v1", "PodGroup", "podGroupOwner", "4", true},
        OwnerReference{"scheduling.k8s.io.example.com/v1", "PodGroup", "podGroupOwner", "4",
                       true}}) {
    SCOPED_TRACE(owner.api_version + " " + owner.kind);
    EXPECT_FALSE(IsForPod(with_pod_group(pod_owner, "podGroupOwner"),
                          NewClaim("kube-system", "claim", {owner}), true)
                     .ok());
  }
  // Upstream dereferences the pod's group name for this text and fails without one; such a pod
  // gets the text without the gate.
  EXPECT_EQ(IsForPod(pod_owner, no_owner, true).message(),
            "ResourceClaim kube-system/claimNoOwner was not created for Pod kube-system/podOwner "
            "(Pod is not owner)");
}

TEST(ClaimNameTest, TestIsReservedForPod) {
  const Pod pod_not_reserved = NewPod("podNotReserved", "1");
  const Pod pod_reserved = NewPod("podReserved", "3");
  const Pod pod_other_reserved = NewPod("podOtherReserved", "5");
  const std::string group_not_reserved = "podGroupNotReserved";      // uid 2
  const std::string group_reserved = "podGroupReserved";             // uid 4
  const std::string group_other_reserved = "podGroupOtherReserved";  // uid 6
  const auto with_pod_group = [](Pod pod, const std::string& group) {
    pod.pod_group_name = group;
    return pod;
  };
  const auto group_consumer = [](const std::string& name, const std::string& uid) {
    return ResourceClaimConsumerReference{"scheduling.k8s.io", "podgroups", name, uid};
  };

  const ResourceClaim no_reservation = NewClaim("kube-system", "claimNoReservation");
  const ResourceClaim with_reservation =
      NewClaim("kube-system", "claimWithReservation", {}, {{"", "", "", pod_reserved.uid}});
  const ResourceClaim with_pod_group_reservation = NewClaim(
      "kube-system", "claimWithPodGroupReservation", {}, {group_consumer(group_reserved, "4")});
  const ResourceClaim with_multiple_reservations =
      NewClaim("kube-system", "claimWithMultipleReservations", {},
               {{"", "", "", pod_reserved.uid}, {"", "", "", pod_other_reserved.uid}});
  const ResourceClaim with_multiple_pod_group_reservations =
      NewClaim("kube-system", "claimWithMultiplePodGroupReservations", {},
               {group_consumer(group_reserved, "4"), group_consumer(group_other_reserved, "6")});
  const ResourceClaim with_reservations_for_pod_and_pod_group =
      NewClaim("kube-system", "claimWithReservationsForPodAndPodGroup", {},
               {{"", "", "", pod_reserved.uid}, {"", "", "", "4"}});

  struct Case {
    Pod pod;
    ResourceClaim claim;
    bool accept_pod_group = false;
    bool expected = false;
  };
  const std::map<std::string, Case> cases = {
      {"not-reserved", {pod_not_reserved, no_reservation, false, false}},
      {"reserved-for-pod", {pod_reserved, with_reservation, false, true}},
      {"reserved-for-other-pod", {pod_not_reserved, with_reservation, false, false}},
      {"multiple-reservations-including-pod",
       {pod_reserved, with_multiple_reservations, false, true}},
      {"multiple-reservations-excluding-pod",
       {pod_not_reserved, with_multiple_reservations, false, false}},
      {"reserved-for-podgroup",
       {with_pod_group(pod_not_reserved, group_reserved), with_pod_group_reservation, true, true}},
      {"podgroup-disabled",
       {with_pod_group(pod_not_reserved, group_reserved), with_pod_group_reservation, false,
        false}},
      {"reserved-for-pod-and-podgroup",
       {with_pod_group(pod_reserved, group_reserved), with_reservations_for_pod_and_pod_group, true,
        true}},
      {"reserved-for-other-podgroup",
       {with_pod_group(pod_not_reserved, group_not_reserved), with_reservation, true, false}},
      {"multiple-reservations-including-podgroup",
       {with_pod_group(pod_not_reserved, group_reserved), with_multiple_pod_group_reservations,
        true, true}},
      {"multiple-reservations-excluding-podgroup",
       {with_pod_group(pod_not_reserved, group_not_reserved), with_multiple_pod_group_reservations,
        true, false}},
  };
  for (const auto& [name, c] : cases) {
    SCOPED_TRACE(name);
    EXPECT_EQ(IsReservedForPod(c.pod, c.claim, c.accept_pod_group), c.expected);
  }

  // Not upstream's: a consumer of the group's name in another resource or API group is not it.
  const Pod member = with_pod_group(pod_not_reserved, group_reserved);
  EXPECT_FALSE(IsReservedForPod(
      member,
      NewClaim("kube-system", "c", {}, {{"scheduling.k8s.io", "pods", group_reserved, "9"}}),
      true));
  EXPECT_FALSE(IsReservedForPod(
      member, NewClaim("kube-system", "c", {}, {{"", "podgroups", group_reserved, "9"}}), true));
}

}  // namespace
}  // namespace devmgr::dra
