// The daemon's pod source: admissions become durable only when committed, a staged admission
// rides on the next checkpoint write (one flush for both files), and so does a removal (or it
// rewrites the record when no checkpoint write came), a pod whose admission or removal is under
// way is written in flight and not admitted after a restart,
// pods in the checkpoint without a record are recovered, a recorded pod whose devices the
// checkpoint lost is forgotten, and a corrupt record is moved aside without losing any pod that
// holds devices.
#include "node/pod_registry.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "common/file_store.h"
#include "node/pod_record.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::node {
namespace {

using devicemanager::ContainerType;
using devicemanager::Pod;

Pod MakePod(const std::string& uid, const std::string& name) {
  Pod pod;
  pod.uid = uid;
  pod.namespace_name = "default";
  pod.name = name;
  pod.init_containers = {{"sidecar", ContainerType::kSidecar, {}}};
  pod.containers = {{"app", ContainerType::kRegular, {{"example.com/gpu", 1}}}};
  return pod;
}

checkpoint::PodDevicesEntry Entry(const std::string& uid, const std::string& container,
                                  std::vector<std::string> ids) {
  checkpoint::PodDevicesEntry entry;
  entry.pod_uid = uid;
  entry.container_name = container;
  entry.resource_name = "example.com/gpu";
  entry.device_ids[0] = ids;
  entry.device_ids[1] = {ids.front()};  // a device on two NUMA nodes counts once
  return entry;
}

// Remove: a removal's steps with no release of devices between them.
absl::Status Remove(PodRegistry& registry, const std::string& uid) {
  if (absl::Status begun = registry.BeginRemoval(uid); !begun.ok()) return begun;
  absl::Status finished = registry.FinishRemoval(uid);
  if (!finished.ok()) registry.AbortRemoval(uid);
  return finished;
}

class PodRegistryTest : public ::testing::Test {
 protected:
  std::vector<std::string> Uids(const PodRegistry& registry) {
    std::vector<std::string> uids;
    for (const auto& registered : registry.List()) uids.push_back(registered.pod.uid);
    return uids;
  }
  testing::TempDir dir_;
};

TEST_F(PodRegistryTest, AdmissionIsDurableOnlyWhenCommitted) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u1", "one")).ok());
  EXPECT_EQ(registry.ActiveUids(), std::vector<std::string>{"u1"}) << "active while admitting";
  EXPECT_TRUE(registry.List().empty()) << "not listed before it is committed";
  EXPECT_TRUE(registry.GetActivePods().empty());
  EXPECT_EQ(registry.BeginAdmission(MakePod("u1", "one")).code(), absl::StatusCode::kAlreadyExists);
  registry.StageAdmission("u1", false);
  ASSERT_TRUE(registry.CommitAdmission("u1").ok());

  ASSERT_TRUE(registry.BeginAdmission(MakePod("u2", "two")).ok());
  registry.AbortAdmission("u2");
  EXPECT_EQ(registry.ActiveUids(), std::vector<std::string>{"u1"});

  PodRegistry restarted(dir_.path(), nullptr);
  ASSERT_TRUE(restarted.Load({}).ok());
  ASSERT_EQ(Uids(restarted), std::vector<std::string>{"u1"});
  EXPECT_EQ(restarted.Find("u1")->pod, MakePod("u1", "one"));
  EXPECT_FALSE(restarted.Find("u1")->recovered);

  // PodResources sees the sidecar as a restartable init container.
  std::optional<podresources::Pod> seen = restarted.GetPodByName("default", "one");
  ASSERT_TRUE(seen.has_value());
  ASSERT_EQ(seen->init_containers.size(), 1u);
  EXPECT_EQ(seen->init_containers[0].restart_policy, "Always");
}

// Two pods of one namespace and name (a pod replaced while the old one is still being removed):
// PodResources Get answers the one admitted later, as the kubelet's pod manager keeps the pod
// added last under a full name.
TEST_F(PodRegistryTest, GetPodByNameAnswersTheLaterOfTwoPodsOfOneName) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  for (const std::string uid : {"a-old", "z-new"}) {
    ASSERT_TRUE(registry.BeginAdmission(MakePod(uid, "web")).ok());
    registry.StageAdmission(uid, false);
    ASSERT_TRUE(registry.CommitAdmission(uid).ok());
  }
  std::optional<podresources::Pod> seen = registry.GetPodByName("default", "web");
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->uid, "z-new");
  ASSERT_TRUE(Remove(registry, "z-new").ok());
  seen = registry.GetPodByName("default", "web");
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->uid, "a-old");
}

TEST_F(PodRegistryTest, ActiveUidsAreInOrderWithThePodsBeingAdmitted) {
  // The device manager walks them beside its own pods, sorting them only when they are not.
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  for (const std::string uid : {"b", "d"}) {
    ASSERT_TRUE(registry.BeginAdmission(MakePod(uid, uid)).ok());
    registry.StageAdmission(uid, false);
    ASSERT_TRUE(registry.CommitAdmission(uid).ok());
  }
  for (const std::string uid : {"a", "c", "e"}) {
    ASSERT_TRUE(registry.BeginAdmission(MakePod(uid, uid)).ok());
  }
  EXPECT_EQ(registry.ActiveUids(), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
}

TEST_F(PodRegistryTest, RemoveRewritesTheRecordWhenNoWriteCarriedIt) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  for (const char* uid : {"u1", "u2"}) {
    ASSERT_TRUE(registry.BeginAdmission(MakePod(uid, uid)).ok());
    registry.StageAdmission(uid, false);
    ASSERT_TRUE(registry.CommitAdmission(uid).ok());
  }
  ASSERT_TRUE(Remove(registry, "u1").ok());
  EXPECT_EQ(Remove(registry, "u1").code(), absl::StatusCode::kNotFound);
  PodRegistry restarted(dir_.path(), nullptr);
  ASSERT_TRUE(restarted.Load({}).ok());
  EXPECT_EQ(Uids(restarted), std::vector<std::string>{"u2"});
}

TEST_F(PodRegistryTest, CheckpointPodsWithoutARecordAreRecovered) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u1", "one")).ok());
  registry.StageAdmission("u1", false);
  ASSERT_TRUE(registry.CommitAdmission("u1").ok());

  PodRegistry restarted(dir_.path(), nullptr);
  ASSERT_TRUE(restarted
                  .Load({Entry("u1", "app", {"d0"}), Entry("kubelet-pod", "c1", {"d1", "d2"}),
                         Entry("kubelet-pod", "c2", {"d3"})})
                  .ok());
  EXPECT_EQ(Uids(restarted), (std::vector<std::string>{"kubelet-pod", "u1"}));
  EXPECT_FALSE(restarted.Find("u1")->recovered) << "a recorded pod keeps its record";
  const RegisteredPod recovered = *restarted.Find("kubelet-pod");
  EXPECT_TRUE(recovered.recovered);
  ASSERT_EQ(recovered.pod.containers.size(), 2u);
  EXPECT_EQ(recovered.pod.containers[0].name, "c1");
  EXPECT_EQ(recovered.pod.containers[0].devices.at("example.com/gpu"), 2);
  EXPECT_EQ(recovered.pod.containers[1].devices.at("example.com/gpu"), 1);
  EXPECT_FALSE(restarted.GetPodByName("", "").has_value()) << "recovered pods have no name";

  // Removing a recovered pod does not touch the record.
  ASSERT_TRUE(Remove(restarted, "kubelet-pod").ok());
  EXPECT_EQ(Uids(restarted), std::vector<std::string>{"u1"});
}

TEST_F(PodRegistryTest, RecoveredPodsAreTheSameInKeyOrderOrNotAndLoggedInOneLine) {
  std::ostringstream log;
  auto logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  // In key order, as devmgr writes its checkpoint, and out of it, as a kubelet may.
  const std::vector<checkpoint::PodDevicesEntry> in_order = {
      Entry("a", "c1", {"d0", "d1"}), Entry("a", "c2", {"d2"}), Entry("b", "c1", {"d3"})};
  const std::vector<checkpoint::PodDevicesEntry> shuffled = {in_order[2], in_order[1], in_order[0]};
  for (const auto& entries : {in_order, shuffled}) {
    log.str("");
    PodRegistry registry(dir_.path(), logger);
    ASSERT_TRUE(registry.Load(entries).ok());
    EXPECT_EQ(Uids(registry), (std::vector<std::string>{"a", "b"}));
    const RegisteredPod a = *registry.Find("a");
    ASSERT_EQ(a.pod.containers.size(), 2u);
    std::map<std::string, int64_t> devices;
    for (const auto& container : a.pod.containers) {
      devices[container.name] = container.devices.at("example.com/gpu");
    }
    EXPECT_EQ(devices, (std::map<std::string, int64_t>{{"c1", 2}, {"c2", 1}}));
    EXPECT_EQ(registry.Find("b")->pod.containers.at(0).devices.at("example.com/gpu"), 1);
    const std::string text = log.str();
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
    EXPECT_NE(text.find("Pods recovered from the checkpoint without a record; kept active"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("count=2"), std::string::npos) << text;
  }
}

TEST_F(PodRegistryTest, CorruptRecordIsMovedAsideAndCheckpointPodsKept) {
  std::ofstream(dir_.Sub(kPodRecordName)) << "{not json";
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({Entry("u1", "app", {"d0"})}).ok());
  EXPECT_TRUE(std::filesystem::exists(dir_.Sub(std::string(kPodRecordName) + ".corrupt")));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub(kPodRecordName)));
  ASSERT_EQ(Uids(registry), std::vector<std::string>{"u1"});
  EXPECT_TRUE(registry.Find("u1")->recovered);

  // A later corrupt record is kept beside the first one's copy, not over it.
  std::ofstream(dir_.Sub(kPodRecordName)) << "{\"pods\":";
  PodRegistry again(dir_.path(), nullptr);
  ASSERT_TRUE(again.Load({Entry("u1", "app", {"d0"})}).ok());
  EXPECT_EQ(ReadWholeFile(dir_.Sub(std::string(kPodRecordName) + ".corrupt")).value_or(""),
            "{not json");
  EXPECT_EQ(ReadWholeFile(dir_.Sub(std::string(kPodRecordName) + ".corrupt.1")).value_or(""),
            "{\"pods\":");
}

// After a corrupt record, the host recovers the pods its other state names: those the registry
// does not hold are admitted again and written to the record, so that the start after keeps
// them too. A pod recovered from the checkpoint gets its name and the containers the checkpoint
// did not list, at every start. A missing record is not lost (a first admission cut short by a
// crash leaves its claims, and no record, behind) unless a corrupt one was kept aside.
TEST_F(PodRegistryTest, ALostRecordLetsTheHostRecoverThePodsOtherStateNames) {
  Pod claims_only;
  claims_only.uid = "u2";
  claims_only.namespace_name = "default";
  claims_only.name = "p2";
  claims_only.containers.emplace_back().name = "app";
  Pod named_again;
  named_again.uid = "u1";
  named_again.namespace_name = "default";
  named_again.name = "p1";
  devicemanager::Container& setup = named_again.init_containers.emplace_back();
  setup.name = "setup";
  setup.type = ContainerType::kInit;
  named_again.containers.emplace_back().name = "app";
  named_again.containers.emplace_back().name = "log";
  // In the checkpoint: "setup" (an init container, the checkpoint does not say so) and "app".
  const std::vector<checkpoint::PodDevicesEntry> checkpoint = {Entry("u1", "app", {"d0"}),
                                                               Entry("u1", "setup", {"d1"})};
  // The containers that hold devices stay as the checkpoint has them ("setup" may be a sidecar,
  // which a claim record written before restart policies were kept does not say); "log" is
  // added.
  auto expect_u1_named = [&](const PodRegistry& registry) {
    const RegisteredPod u1 = *registry.Find("u1");
    EXPECT_TRUE(u1.recovered);
    EXPECT_EQ(u1.pod.name, "p1");
    EXPECT_TRUE(u1.pod.init_containers.empty());
    ASSERT_EQ(u1.pod.containers.size(), 3U);
    EXPECT_EQ(u1.pod.containers[0].name, "app");
    EXPECT_EQ(u1.pod.containers[0].devices.at("example.com/gpu"), 1);
    EXPECT_EQ(u1.pod.containers[1].name, "setup");
    EXPECT_EQ(u1.pod.containers[1].devices.at("example.com/gpu"), 1);
    EXPECT_EQ(u1.pod.containers[2].name, "log");
  };

  // No record ever: the claim-only pod was an admission cut short.
  {
    PodRegistry fresh(dir_.path(), nullptr);
    ASSERT_TRUE(fresh.Load(checkpoint).ok());
    ASSERT_TRUE(fresh.Recover({claims_only, named_again}).ok());
    EXPECT_EQ(Uids(fresh), std::vector<std::string>{"u1"});
    expect_u1_named(fresh);
  }

  std::ofstream(dir_.Sub(kPodRecordName)) << "{not json";
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load(checkpoint).ok());
  ASSERT_TRUE(registry.Recover({claims_only, named_again}).ok());
  ASSERT_EQ(Uids(registry), (std::vector<std::string>{"u1", "u2"}));
  EXPECT_FALSE(registry.Find("u2")->recovered);
  EXPECT_EQ(registry.Find("u2")->pod, claims_only);
  EXPECT_EQ(registry.GetPodByName("default", "p2")->uid, "u2");
  expect_u1_named(registry);
  EXPECT_EQ(registry.GetPodByName("default", "p1")->uid, "u1");
  EXPECT_FALSE(registry.GetPodByName("", "").has_value());

  // The record written: read, not lost, at the start after; u1 is named again.
  PodRegistry restarted(dir_.path(), nullptr);
  ASSERT_TRUE(restarted.Load(checkpoint).ok());
  ASSERT_TRUE(restarted.Recover({named_again}).ok());
  ASSERT_EQ(Uids(restarted), (std::vector<std::string>{"u1", "u2"}));
  EXPECT_FALSE(restarted.Find("u2")->recovered);
  EXPECT_EQ(restarted.Find("u2")->pod, claims_only);
  expect_u1_named(restarted);
}

// A start that moved a corrupt record aside and stopped before writing a new one leaves no
// record beside the corrupt one: the next start takes the record as lost still.
TEST_F(PodRegistryTest, ARecordLostByAStartThatStoppedIsLostAtTheNext) {
  std::ofstream(dir_.Sub(kPodRecordName)) << "{not json";
  {
    PodRegistry failed(dir_.path(), nullptr);
    ASSERT_TRUE(failed.Load({}).ok());
  }
  ASSERT_FALSE(std::filesystem::exists(dir_.Sub(kPodRecordName)));
  Pod claims_only;
  claims_only.uid = "u2";
  {
    PodRegistry registry(dir_.path(), nullptr);
    ASSERT_TRUE(registry.Load({}).ok());
    ASSERT_TRUE(registry.Recover({claims_only}).ok());
    EXPECT_EQ(Uids(registry), std::vector<std::string>{"u2"});
    EXPECT_TRUE(std::filesystem::exists(dir_.Sub(kPodRecordName)));
  }

  // A lost record is written again even with no pod to admit: the start after it reads it,
  // and a claim-only pod it finds then is an admission a crash cut short, not admitted.
  std::ofstream(dir_.Sub(kPodRecordName), std::ios::trunc) << "{not json";
  {
    PodRegistry registry(dir_.path(), nullptr);
    ASSERT_TRUE(registry.Load({}).ok());
    ASSERT_TRUE(registry.Recover({}).ok());
  }
  ASSERT_TRUE(std::filesystem::exists(dir_.Sub(kPodRecordName)));
  PodRegistry next(dir_.path(), nullptr);
  ASSERT_TRUE(next.Load({}).ok());
  ASSERT_TRUE(next.Recover({claims_only}).ok());
  EXPECT_TRUE(Uids(next).empty());
}

// Any copy kept says a missing record was lost, not only the first one (a human may have
// removed it).
TEST_F(PodRegistryTest, AMissingRecordBesideALaterCopyIsLost) {
  std::ofstream(dir_.Sub(std::string(kPodRecordName) + ".corrupt.1")) << "{not json";
  Pod claims_only;
  claims_only.uid = "u2";
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  ASSERT_TRUE(registry.Recover({claims_only}).ok());
  EXPECT_EQ(Uids(registry), std::vector<std::string>{"u2"});
}

// A record a newer devmgr wrote (after a downgrade) is no corrupt one: the start is refused
// and the file left as it is, with its pods. Before, it was moved aside as corrupt and every
// pod not in the checkpoint forgotten.
TEST_F(PodRegistryTest, ARecordOfANewerDevmgrRefusesTheStartAndStaysAsItIs) {
  const std::string newer = R"({"pods":[],"version":2})";
  std::ofstream(dir_.Sub(kPodRecordName)) << newer;
  PodRegistry registry(dir_.path(), nullptr);
  const absl::Status loaded = registry.Load({Entry("u1", "app", {"d0"})});
  EXPECT_EQ(loaded.code(), absl::StatusCode::kFailedPrecondition) << loaded;
  EXPECT_NE(loaded.message().find("written by a newer devmgr (version 2"), std::string::npos)
      << loaded;
  EXPECT_EQ(ReadWholeFile(dir_.Sub(kPodRecordName)).value_or(""), newer);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub(std::string(kPodRecordName) + ".corrupt")));
}

// What PodResources List keeps an answer by: the revision of the active pods changes when a
// pod is committed, removed or loaded, not while one is being admitted or aborted.
TEST_F(PodRegistryTest, ActivePodsRevisionFollowsWhatPodResourcesSees) {
  PodRegistry registry(dir_.path(), nullptr);
  std::optional<uint64_t> last = registry.ActivePodsRevision();
  ASSERT_TRUE(last.has_value());
  auto changed = [&] {
    const bool different = registry.ActivePodsRevision() != last;
    last = registry.ActivePodsRevision();
    return different;
  };
  ASSERT_TRUE(registry.Load({}).ok());
  EXPECT_TRUE(changed());
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u1", "one")).ok());
  EXPECT_FALSE(changed());
  registry.StageAdmission("u1", false);
  ASSERT_TRUE(registry.CommitAdmission("u1").ok());
  EXPECT_TRUE(changed());
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u2", "two")).ok());
  registry.AbortAdmission("u2");
  EXPECT_FALSE(changed());
  EXPECT_FALSE(Remove(registry, "unknown").ok());
  EXPECT_FALSE(changed());
  ASSERT_TRUE(Remove(registry, "u1").ok());
  EXPECT_TRUE(changed());
}

// The device manager skips its pass over the pods holding devices while this number (and its
// allocations) stay the same, so it must change whenever a pod leaves ActiveUids.
TEST_F(PodRegistryTest, ActiveUidsRevisionChangesWhenAPodLeavesActiveUids) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  uint64_t last = registry.ActiveUidsRevision();
  auto changed = [&] {
    const bool different = registry.ActiveUidsRevision() != last;
    last = registry.ActiveUidsRevision();
    return different;
  };
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u1", "one")).ok());
  EXPECT_FALSE(changed()) << "a pod came, none left";
  registry.AbortAdmission("u1");
  EXPECT_TRUE(changed()) << "an abandoned admission leaves ActiveUids";
  registry.AbortAdmission("u1");
  EXPECT_FALSE(changed()) << "nothing was being admitted";
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u2", "two")).ok());
  registry.StageAdmission("u2", false);
  ASSERT_TRUE(registry.CommitAdmission("u2").ok());
  changed();
  ASSERT_TRUE(Remove(registry, "u2").ok());
  EXPECT_TRUE(changed()) << "a removed pod leaves ActiveUids";
  EXPECT_TRUE(registry.ActiveUids().empty());
}

// What PodResources' List reads after a change instead of every pod: the pods each change
// since a revision was about, and those pods one by one.
TEST_F(PodRegistryTest, ActivePodsChangedSinceNamesThePodsAdmittedAndRemoved) {
  using Uids = std::optional<std::vector<std::string>>;
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  const uint64_t loaded = *registry.ActivePodsRevision();
  EXPECT_EQ(registry.ActivePodsChangedSince(loaded - 1), std::nullopt) << "nothing before Load";
  EXPECT_EQ(registry.ActivePodsChangedSince(loaded), Uids(std::vector<std::string>()));
  for (const char* uid : {"u2", "u1"}) {
    ASSERT_TRUE(registry.BeginAdmission(MakePod(uid, std::string("pod-") + uid)).ok());
    registry.StageAdmission(uid, false);
    ASSERT_TRUE(registry.CommitAdmission(uid).ok());
  }
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u3", "three")).ok());
  registry.AbortAdmission("u3");
  EXPECT_EQ(registry.ActivePodsChangedSince(loaded), Uids({"u1", "u2"}));
  const uint64_t admitted = *registry.ActivePodsRevision();
  ASSERT_TRUE(Remove(registry, "u2").ok());
  EXPECT_EQ(registry.ActivePodsChangedSince(admitted), Uids({"u2"}));

  ASSERT_TRUE(registry.GetActivePod("u1").has_value());
  EXPECT_EQ(registry.GetActivePod("u1")->name, "pod-u1");
  EXPECT_EQ(*registry.GetActivePod("u1"), registry.GetActivePods()[0]);
  EXPECT_FALSE(registry.GetActivePod("u2").has_value()) << "removed";
  EXPECT_FALSE(registry.GetActivePod("u3").has_value()) << "never admitted";
}

TEST_F(PodRegistryTest, FailedRecordWriteChangesNothing) {
  PodRegistry registry(dir_.Sub("missing-parent") / "blocked", nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  // A regular file where the folder must be: every write fails.
  std::ofstream(dir_.Sub("missing-parent")) << "x";
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u1", "one")).ok());
  registry.StageAdmission("u1", false);
  EXPECT_FALSE(registry.CommitAdmission("u1").ok());
  EXPECT_TRUE(registry.List().empty());
  EXPECT_EQ(registry.ActiveUids(), std::vector<std::string>{"u1"}) << "still admitting";
  registry.AbortAdmission("u1");
  EXPECT_TRUE(registry.ActiveUids().empty());
}

// The admission's record reaches the disk with the checkpoint: committing it needs no write of
// its own, and a checkpoint write with no change of the record writes the checkpoint alone.
TEST_F(PodRegistryTest, AStagedAdmissionIsWrittenWithTheCheckpoint) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u1", "one")).ok());
  registry.StageAdmission("u1", true);
  EXPECT_TRUE(registry.List().empty()) << "staged is not yet admitted";
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "checkpoint 1", registry.CheckpointMark()).ok());
  EXPECT_EQ(*FileStore(dir_.path()).Read("cp"), "checkpoint 1");
  absl::StatusOr<std::string> record = FileStore(dir_.path()).Read(kPodRecordName);
  ASSERT_TRUE(record.ok());
  absl::StatusOr<std::vector<RecordedPod>> recorded = DecodePodRecord(*record);
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  EXPECT_EQ(*recorded, (std::vector<RecordedPod>{{MakePod("u1", "one"), true}}));

  // Gone from disk, it stays gone: neither the commit nor a later checkpoint write rewrites it.
  std::filesystem::remove(dir_.Sub(kPodRecordName));
  ASSERT_TRUE(registry.CommitAdmission("u1").ok());
  EXPECT_EQ(Uids(registry), std::vector<std::string>{"u1"});
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "checkpoint 2", registry.CheckpointMark()).ok());
  EXPECT_EQ(*FileStore(dir_.path()).Read("cp"), "checkpoint 2");
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub(kPodRecordName)));
}

// A staged pod whose record was written and whose admission then failed: the release of its
// devices writes the checkpoint and the record with the pod in flight in one flush (nothing is
// written before that, so no crash finds the record saying admitted and the checkpoint without
// its devices, nor the pod missing from the record and the checkpoint with them); when no
// checkpoint write comes, FlushRecord writes the record alone.
TEST_F(PodRegistryTest, AnAbortedWrittenAdmissionLeavesTheRecordWithTheNextWrite) {
  auto recorded_uids = [&] {
    PodRegistry restarted(dir_.path(), nullptr);
    EXPECT_TRUE(restarted.Load({}).ok());
    return Uids(restarted);
  };
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u1", "one")).ok());
  registry.StageAdmission("u1", false);
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "with u1", registry.CheckpointMark()).ok());
  registry.AbortAdmission("u1");
  EXPECT_EQ(recorded_uids(), std::vector<std::string>{"u1"}) << "not written alone";
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "without u1", registry.CheckpointMark()).ok());
  EXPECT_TRUE(recorded_uids().empty()) << "written with the checkpoint";

  ASSERT_TRUE(registry.BeginAdmission(MakePod("u2", "two")).ok());
  registry.StageAdmission("u2", false);
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "with u2", registry.CheckpointMark()).ok());
  registry.AbortAdmission("u2");
  ASSERT_TRUE(registry.FlushRecord().ok());
  EXPECT_TRUE(recorded_uids().empty()) << "written alone";
  EXPECT_EQ(*FileStore(dir_.path()).Read("cp"), "with u2");
}

// NamesWriter writes what it is given and keeps the names of each write's files, in the order
// of their renames.
class NamesWriter final : public DurableWriter {
 public:
  absl::Status WriteTogether(std::vector<FileStore::PlacedBytes> files) override {
    std::vector<std::string>& names = writes.emplace_back();
    for (const FileStore::PlacedBytes& file : files) names.emplace_back(file.name);
    return FileStore::WriteAcross(files);
  }
  std::vector<std::vector<std::string>> writes;
};

// Carried by another writer (the DRA manager in the node), every write of the registry goes
// through it: the checkpoint and the record, in that order, and the record alone.
TEST_F(PodRegistryTest, CarriedWritesGoThroughTheNextWriter) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  NamesWriter next;
  registry.CarryWith(&next);
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u1", "one")).ok());
  registry.StageAdmission("u1", true);
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "with u1", registry.CheckpointMark()).ok());
  ASSERT_TRUE(registry.CommitAdmission("u1").ok());
  ASSERT_TRUE(
      registry.WriteWithCheckpoint("cp", "unchanged record", registry.CheckpointMark()).ok());
  ASSERT_TRUE(Remove(registry, "u1").ok());
  EXPECT_EQ(next.writes, (std::vector<std::vector<std::string>>{
                             {"cp", std::string(kPodRecordName)}, {"cp"}, {kPodRecordName}}));
  EXPECT_EQ(*FileStore(dir_.path()).Read("cp"), "unchanged record");
  PodRegistry restarted(dir_.path(), nullptr);
  ASSERT_TRUE(restarted.Load({}).ok());
  EXPECT_TRUE(restarted.List().empty());
}

// A removal's record, the pod in flight, rides on the checkpoint write that releases the pod's
// devices: FinishRemoval writes nothing more. Until then the pod is listed and active; an
// aborted removal puts it back into the record's next write as admitted. A recovered pod, which
// the record never held, changes nothing.
TEST_F(PodRegistryTest, ARemovalRidesOnTheCheckpointWriteThatReleasesItsDevices) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({Entry("recovered", "app", {"d9"})}).ok());
  NamesWriter next;
  registry.CarryWith(&next);
  for (const char* uid : {"u1", "u2"}) {
    ASSERT_TRUE(registry.BeginAdmission(MakePod(uid, uid)).ok());
    registry.StageAdmission(uid, true);
    ASSERT_TRUE(
        registry.WriteWithCheckpoint("cp", "with the pods", registry.CheckpointMark()).ok());
    ASSERT_TRUE(registry.CommitAdmission(uid).ok());
  }
  next.writes.clear();
  auto recorded_uids = [&] {
    absl::StatusOr<std::vector<RecordedPod>> recorded =
        DecodePodRecord(*FileStore(dir_.path()).Read(kPodRecordName));
    std::vector<std::string> uids;
    for (const RecordedPod& pod : recorded.value_or(std::vector<RecordedPod>{})) {
      uids.push_back(pod.in_flight ? pod.pod.uid + " in flight" : pod.pod.uid);
    }
    return uids;
  };

  ASSERT_TRUE(registry.BeginRemoval("u1").ok());
  EXPECT_EQ(registry.BeginRemoval("u1").code(), absl::StatusCode::kNotFound) << "being removed";
  EXPECT_EQ(Uids(registry), (std::vector<std::string>{"recovered", "u1", "u2"}));
  EXPECT_EQ(registry.ActiveUids(), (std::vector<std::string>{"recovered", "u1", "u2"}));
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "without u1", registry.CheckpointMark()).ok());
  EXPECT_EQ(recorded_uids(), (std::vector<std::string>{"u1 in flight", "u2"}));
  ASSERT_TRUE(registry.FinishRemoval("u1").ok());
  EXPECT_EQ(next.writes, (std::vector<std::vector<std::string>>{{"cp", kPodRecordName}}))
      << "one write for both";
  EXPECT_EQ(Uids(registry), (std::vector<std::string>{"recovered", "u2"}));

  // Aborted after the carried write: the next write records the pod again.
  ASSERT_TRUE(registry.BeginRemoval("u2").ok());
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "without u2", registry.CheckpointMark()).ok());
  EXPECT_EQ(recorded_uids(), std::vector<std::string>{"u2 in flight"}) << "u1 forgotten";
  registry.AbortRemoval("u2");
  EXPECT_EQ(Uids(registry), (std::vector<std::string>{"recovered", "u2"}));
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "with u2", registry.CheckpointMark()).ok());
  EXPECT_EQ(recorded_uids(), std::vector<std::string>{"u2"});

  // The recovered pod is not in the record: its removal writes nothing.
  next.writes.clear();
  ASSERT_TRUE(registry.BeginRemoval("recovered").ok());
  ASSERT_TRUE(registry.FinishRemoval("recovered").ok());
  EXPECT_TRUE(next.writes.empty());
  EXPECT_EQ(Uids(registry), std::vector<std::string>{"u2"});
  EXPECT_EQ(registry.FinishRemoval("u2").code(), absl::StatusCode::kFailedPrecondition);
}

// RecordedUids: the pods of the record in `dir`, those in flight marked so.
std::vector<std::string> RecordedUids(const std::filesystem::path& dir) {
  std::vector<std::string> uids;
  absl::StatusOr<std::string> bytes = FileStore(dir).Read(kPodRecordName);
  if (!bytes.ok()) return uids;
  for (const RecordedPod& pod : DecodePodRecord(*bytes).value_or(std::vector<RecordedPod>{})) {
    uids.push_back(pod.in_flight ? pod.pod.uid + " in flight" : pod.pod.uid);
  }
  return uids;
}

// Another pod's checkpoint write can come between any two steps of an admission, a refusal or a
// removal, and carry this pod's devices (allocated, or not yet released): the record it carries
// lists the pod in flight, so that a crash right after it leaves the pod neither admitted nor
// recovered, and the restart releases its devices (Leaving) before the record forgets it.
TEST_F(PodRegistryTest, AWriteBetweenTheStepsOfAnAdmissionOrARemovalRecordsThePodInFlight) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  ASSERT_TRUE(registry.BeginAdmission(MakePod("kept", "kept")).ok());
  registry.StageAdmission("kept", true);
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "kept", registry.CheckpointMark()).ok());
  ASSERT_TRUE(registry.CommitAdmission("kept").ok());
  // Being admitted (its devices allocated, not yet staged), and being removed.
  ASSERT_TRUE(registry.BeginAdmission(MakePod("coming", "coming")).ok());
  ASSERT_TRUE(registry.BeginRemoval("kept").ok());
  ASSERT_TRUE(
      registry.WriteWithCheckpoint("cp", "another pod's write", registry.CheckpointMark()).ok());
  EXPECT_EQ(RecordedUids(dir_.path()),
            (std::vector<std::string>{"kept in flight", "coming in flight"}));

  // The crash: both still hold their devices in the checkpoint of that write.
  const std::vector<checkpoint::PodDevicesEntry> checkpoint = {Entry("coming", "app", {"d1"}),
                                                               Entry("kept", "app", {"d0"})};
  PodRegistry restarted(dir_.path(), nullptr);
  ASSERT_TRUE(restarted.Load(checkpoint).ok());
  EXPECT_TRUE(restarted.List().empty()) << "neither admitted nor recovered";
  EXPECT_TRUE(restarted.ActiveUids().empty()) << "their devices are to be freed";
  EXPECT_EQ(restarted.Leaving(), (std::vector<std::string>{"coming", "kept"}));
  ASSERT_TRUE(
      restarted.WriteWithCheckpoint("cp", "before the release", restarted.CheckpointMark()).ok());
  EXPECT_EQ(RecordedUids(dir_.path()),
            (std::vector<std::string>{"kept in flight", "coming in flight"}))
      << "in flight until released";
  restarted.Released("coming");
  restarted.Released("kept");
  EXPECT_TRUE(restarted.Leaving().empty());
  ASSERT_TRUE(restarted.BeginAdmission(MakePod("next", "next")).ok());
  ASSERT_TRUE(restarted.WriteWithCheckpoint("cp", "released", restarted.CheckpointMark()).ok());
  EXPECT_EQ(RecordedUids(dir_.path()), std::vector<std::string>{"next in flight"});

  // A crash now: the pod in flight holds nothing in the checkpoint, nothing is left to release.
  PodRegistry again(dir_.path(), nullptr);
  ASSERT_TRUE(again.Load({}).ok());
  EXPECT_TRUE(again.List().empty());
  EXPECT_TRUE(again.Leaving().empty());
}

// Another pod's write can take the checkpoint's state while a pod is half allocated and reach
// the record only after the pod was staged: the pod is written admitted only beside a
// checkpoint taken after it was staged (CheckpointMark), in flight before, and so it is by a
// write of the record alone beside such a checkpoint. A pod that holds no devices needs none.
TEST_F(PodRegistryTest, AStagedPodIsRecordedAdmittedOnlyBesideACheckpointTakenAfterIt) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u1", "one")).ok());
  const uint64_t half_allocated = registry.CheckpointMark();
  registry.StageAdmission("u1", true);
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "u1's first container", half_allocated).ok());
  EXPECT_EQ(RecordedUids(dir_.path()), std::vector<std::string>{"u1 in flight"});

  ASSERT_TRUE(registry.BeginAdmission(MakePod("u2", "two")).ok());
  registry.StageAdmission("u2", false);
  ASSERT_TRUE(registry.CommitAdmission("u2").ok());
  EXPECT_EQ(RecordedUids(dir_.path()), (std::vector<std::string>{"u1 in flight", "u2"}))
      << "the record alone is beside the checkpoint that holds u1 in part";
  EXPECT_EQ(registry.CommitAdmission("u1").code(), absl::StatusCode::kFailedPrecondition)
      << "no checkpoint taken after it was staged was written";
  EXPECT_EQ(Uids(registry), std::vector<std::string>{"u2"});

  // A crash now: u1 is not admitted, and its devices are released.
  const std::vector<checkpoint::PodDevicesEntry> checkpoint = {Entry("u1", "app", {"d0"})};
  {
    PodRegistry restarted(dir_.path(), nullptr);
    ASSERT_TRUE(restarted.Load(checkpoint).ok());
    EXPECT_EQ(Uids(restarted), std::vector<std::string>{"u2"});
    EXPECT_EQ(restarted.Leaving(), std::vector<std::string>{"u1"});
  }

  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "u1 whole", registry.CheckpointMark()).ok());
  EXPECT_EQ(RecordedUids(dir_.path()), (std::vector<std::string>{"u2", "u1"}));
  std::filesystem::remove(dir_.Sub(kPodRecordName));
  ASSERT_TRUE(registry.CommitAdmission("u1").ok());
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub(kPodRecordName)))
      << "the checkpoint's write carried it: no write of its own";
  EXPECT_EQ(Uids(registry), (std::vector<std::string>{"u1", "u2"}));
}

// A refused admission stays in the record, in flight, until its devices' release is durable
// (Released): a write between the refusal and the release still lists it. A refused pod whose
// staged entry a write carried is written again by FlushRecord when no checkpoint write came.
TEST_F(PodRegistryTest, ARefusedAdmissionStaysInFlightUntilItsDevicesAreReleased) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u1", "one")).ok());
  registry.StageAdmission("u1", true);
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "with u1", registry.CheckpointMark()).ok());
  registry.AbortAdmission("u1");
  EXPECT_TRUE(registry.ActiveUids().empty());
  EXPECT_EQ(registry.Leaving(), std::vector<std::string>{"u1"});
  ASSERT_TRUE(registry
                  .WriteWithCheckpoint("cp", "another pod's write, still with u1",
                                       registry.CheckpointMark())
                  .ok());
  EXPECT_EQ(RecordedUids(dir_.path()), std::vector<std::string>{"u1 in flight"});
  registry.Released("u1");
  ASSERT_TRUE(registry.FlushRecord().ok());
  EXPECT_EQ(RecordedUids(dir_.path()), std::vector<std::string>{"u1 in flight"})
      << "the refusal was written already: no write of its own";

  // Staged without devices and carried, then refused: FlushRecord writes it.
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u2", "two")).ok());
  registry.StageAdmission("u2", false);
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "unchanged", registry.CheckpointMark()).ok());
  EXPECT_EQ(RecordedUids(dir_.path()), std::vector<std::string>{"u2"});
  registry.AbortAdmission("u2");
  registry.Released("u2");
  ASSERT_TRUE(registry.FlushRecord().ok());
  EXPECT_TRUE(RecordedUids(dir_.path()).empty());

  // Its UID is admitted again only once the release is durable: until then the checkpoint may
  // hold the earlier pod's devices, which a record naming the new one admitted would keep.
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u3", "three")).ok());
  registry.AbortAdmission("u3");
  EXPECT_TRUE(registry.IsLeaving("u3"));
  EXPECT_EQ(registry.BeginAdmission(MakePod("u3", "three")).code(),
            absl::StatusCode::kFailedPrecondition);
  registry.Released("u3");
  EXPECT_FALSE(registry.IsLeaving("u3"));
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u3", "three")).ok());
  registry.StageAdmission("u3", true);
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "with u3", registry.CheckpointMark()).ok());
  ASSERT_TRUE(registry.CommitAdmission("u3").ok());
  EXPECT_EQ(RecordedUids(dir_.path()), std::vector<std::string>{"u3"});
}

// The record's rename survived a power cut and the checkpoint's did not: a pod that held
// devices and holds none was never admitted. Pods that held none, or hold theirs, stay.
TEST_F(PodRegistryTest, ARecordedPodWithoutItsDevicesInTheCheckpointIsForgotten) {
  std::ofstream(dir_.Sub(kPodRecordName)) << EncodePodRecord({{MakePod("lost", "lost"), true},
                                                              {MakePod("held", "held"), true},
                                                              {MakePod("none", "none"), false}});
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({Entry("held", "app", {"d0"})}).ok());
  EXPECT_EQ(Uids(registry), (std::vector<std::string>{"held", "none"}));
  EXPECT_FALSE(registry.Find("held")->recovered);
  // The next checkpoint write leaves it out of the record too.
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "c", registry.CheckpointMark()).ok());
  absl::StatusOr<std::vector<RecordedPod>> recorded =
      DecodePodRecord(*FileStore(dir_.path()).Read(kPodRecordName));
  ASSERT_TRUE(recorded.ok()) << recorded.status();
  ASSERT_EQ(recorded->size(), 2u);
  EXPECT_EQ((*recorded)[0].pod.uid, "held");
  EXPECT_EQ((*recorded)[1].pod.uid, "none");
}

// Beside a checkpoint that lost entries (it did not verify, or some did not parse), a pod
// missing from it says nothing: it stays admitted, holding nothing, and stays in the record.
TEST_F(PodRegistryTest, ARecordedPodMissingFromACheckpointThatLostEntriesIsKept) {
  std::ofstream(dir_.Sub(kPodRecordName))
      << EncodePodRecord({{MakePod("lost", "lost"), true}, {MakePod("held", "held"), true}});
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(
      registry.Load({Entry("held", "app", {"d0"})}, PodRegistry::CheckpointRead::kPartial).ok());
  EXPECT_EQ(Uids(registry), (std::vector<std::string>{"held", "lost"}));
  EXPECT_FALSE(registry.Find("lost")->recovered);
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "c", registry.CheckpointMark()).ok());
  EXPECT_EQ(RecordedUids(dir_.path()), (std::vector<std::string>{"held", "lost"}));
  // Recorded as holding nothing now: the next start, beside a whole checkpoint, keeps it too.
  PodRegistry again(dir_.path(), nullptr);
  ASSERT_TRUE(again.Load({Entry("held", "app", {"d0"})}).ok());
  EXPECT_EQ(Uids(again), (std::vector<std::string>{"held", "lost"}));
}

// A removal whose release was made in memory only: the pod leaves the listed and active pods
// and stays in the record in flight, among Leaving, until Released.
TEST_F(PodRegistryTest, AnAbandonedRemovalLeavesThePodLeavingUntilReleased) {
  PodRegistry registry(dir_.path(), nullptr);
  ASSERT_TRUE(registry.Load({}).ok());
  ASSERT_TRUE(registry.BeginAdmission(MakePod("u1", "one")).ok());
  registry.StageAdmission("u1", true);
  ASSERT_TRUE(registry.WriteWithCheckpoint("cp", "c", registry.CheckpointMark()).ok());
  ASSERT_TRUE(registry.CommitAdmission("u1").ok());
  ASSERT_TRUE(registry.BeginRemoval("u1").ok());
  registry.AbandonRemoval("u1");
  EXPECT_TRUE(registry.List().empty());
  EXPECT_TRUE(registry.ActiveUids().empty());
  EXPECT_TRUE(registry.IsLeaving("u1"));
  ASSERT_TRUE(registry.FlushRecord().ok());
  EXPECT_EQ(RecordedUids(dir_.path()), std::vector<std::string>{"u1 in flight"});
  registry.Released("u1");
  EXPECT_FALSE(registry.IsLeaving("u1"));
}

}  // namespace
}  // namespace devmgr::node
