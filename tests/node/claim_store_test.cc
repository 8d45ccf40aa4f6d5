// The node's claim store and its durable record: what a pod brings is kept across a restart,
// allocated claims are reserved for their pods, a shared claim is stored once and forgotten
// with its last pod, and a corrupt record is kept aside without a crash.
#include "node/claim_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "common/file_store.h"
#include "node/claim_record.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::node {
namespace {

using ::devmgr::testing::TempDir;

dra::ResourceClaim Claim(const std::string& name, const std::string& uid, bool allocated = true) {
  dra::ResourceClaim claim;
  claim.namespace_name = "default";
  claim.name = name;
  claim.uid = uid;
  if (allocated) {
    claim.allocation = std::vector<dra::DeviceRequestAllocationResult>{
        {"gpu", "gpu.example.com", "node", "dev-0", std::nullopt}};
  }
  return claim;
}

// A pod that uses `claim_names` by name, all in container "app".
PodClaims Pod(const std::string& uid, const std::vector<std::string>& claim_names,
              std::vector<dra::ResourceClaim> claims) {
  PodClaims pod;
  pod.pod.uid = uid;
  pod.pod.namespace_name = "default";
  pod.pod.name = "pod-" + uid;
  dra::Container& app = pod.pod.containers.emplace_back();
  app.name = "app";
  for (const std::string& name : claim_names) {
    pod.pod.resource_claims.push_back({name, name, std::nullopt});
    app.claims.push_back({name, ""});
  }
  pod.claims = std::move(claims);
  return pod;
}

TEST(ClaimRecordTest, RoundTripsEveryField) {
  ClaimRecord record;
  PodClaims pod = Pod("u1", {"a"}, {});
  pod.pod.resource_claims.push_back({"t", std::nullopt, "template"});
  pod.pod.resource_claim_statuses = {{"t", "u1-t-abc"}, {"none", std::nullopt}};
  pod.pod.init_containers.push_back({"init", {{"t", "req"}}, {"example.com/gpu"}});
  pod.pod.init_containers.push_back({"proxy", {{"t", "req"}}, {}, "Always"});
  pod.pod.extended_resource_claim_status = dra::PodExtendedResourceClaimStatus{
      {{"init", "example.com/gpu", "container-0-request-0"}}, "p-extended-resources-x"};
  pod.pod.pod_group_name = "workers";
  record.pods.push_back(pod.pod);
  // A record written before extended-resource claims and pod groups: no such fields, and none
  // read back.
  record.pods.push_back(Pod("u2", {"b"}, {}).pod);
  dra::ResourceClaim shared = Claim("a", "c1");
  shared.allocation->push_back({"gpu", "gpu.example.com", "node", "dev-1", "share-7"});
  shared.allocation->back().consumed_capacity = {{"memory", "10Gi"}, {"cores", "2"}};
  shared.allocation->back().skip_node_operations = {"NodeUnprepareResources"};
  shared.allocation->push_back({"mon", "gpu.example.com", "node", "dev-1", std::nullopt, true});
  shared.owner_references.push_back({"v1", "Pod", "p", "u1", true});
  shared.pod_claim_name = "gpus";
  shared.reserved_for.push_back({"", "pods", "p", "u1"});
  shared.allocation_config = {{"FromClass",
                               {},
                               "gpu.example.com",
                               R"({"kind":"GpuConfig","sharing":{"strategy":"TimeSlicing"}})"},
                              {"FromClaim", {"gpu", "mon"}, "gpu.example.com", "{}"}};
  record.claims.push_back(shared);
  record.claims.push_back(Claim("b", "c2", /*allocated=*/false));

  absl::StatusOr<ClaimRecord> decoded = DecodeClaimRecord(EncodeClaimRecord(record));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, record);
}

TEST(ClaimRecordTest, RefusesWhatIsNotARecord) {
  for (const char* bytes :
       {"", "[]", "{\"version\":0,\"pods\":[],\"claims\":[]}",
        "{\"version\":1,\"pods\":[{\"uid\":1}],\"claims\":[]}", "{\"version\":1,\"pods\":[]}"}) {
    absl::StatusOr<ClaimRecord> decoded = DecodeClaimRecord(bytes);
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss) << bytes;
  }
}

TEST(ClaimStoreTest, KeepsWhatPodsBroughtAcrossARestart) {
  TempDir dir;
  {
    ClaimStore store(dir.path(), nullptr);
    ASSERT_TRUE(store.Load().ok());
    ASSERT_TRUE(store.Add(Pod("u1", {"a"}, {Claim("a", "c1")})).ok());
    ASSERT_TRUE(store.Flush().ok());
  }
  ClaimStore again(dir.path(), nullptr);
  ASSERT_TRUE(again.Load().ok());
  std::optional<dra::Pod> pod = again.FindPod("u1");
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ(*pod, Pod("u1", {"a"}, {}).pod);
  absl::StatusOr<dra::ResourceClaim> claim = again.GetClaim("default", "a");
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(claim->uid, "c1");
}

TEST(ClaimStoreTest, ReservesAllocatedClaimsForThePodAsTheSchedulerWould) {
  TempDir dir;
  ClaimStore store(dir.path(), nullptr);
  ASSERT_TRUE(store.Add(Pod("u1", {"a", "b"}, {Claim("a", "c1"), Claim("b", "c2", false)})).ok());
  EXPECT_EQ(store.GetClaim("default", "a")->reserved_for,
            (std::vector<dra::ResourceClaimConsumerReference>{{"", "pods", "pod-u1", "u1"}}));
  EXPECT_TRUE(store.GetClaim("default", "b")->reserved_for.empty())
      << "a claim that is not allocated cannot be reserved";
}

TEST(ClaimStoreTest, ASharedClaimIsStoredOnceAndForgottenWithItsLastPod) {
  TempDir dir;
  ClaimStore store(dir.path(), nullptr);
  ASSERT_TRUE(store.Add(Pod("u1", {"a"}, {Claim("a", "c1")})).ok());
  // The second pod names the claim without bringing it again.
  ASSERT_TRUE(store.Add(Pod("u2", {"a"}, {})).ok());
  EXPECT_EQ(store.GetClaim("default", "a")->reserved_for.size(), 2U);

  store.Remove("u1");
  ASSERT_TRUE(store.GetClaim("default", "a").ok());
  EXPECT_EQ(store.GetClaim("default", "a")->reserved_for,
            (std::vector<dra::ResourceClaimConsumerReference>{{"", "pods", "pod-u2", "u2"}}));
  store.Remove("u2");
  EXPECT_EQ(store.GetClaim("default", "a").status().message(),
            "resourceclaims.resource.k8s.io \"a\" not found");
  store.Remove("u2");  // removing twice is not an error
  EXPECT_FALSE(store.FindPod("u2").has_value());
}

TEST(ClaimStoreTest, RefusesAClaimOfTheSameNameWithAnotherUidAndChangesNothing) {
  TempDir dir;
  ClaimStore store(dir.path(), nullptr);
  ASSERT_TRUE(store.Add(Pod("u1", {"a"}, {Claim("a", "c1")})).ok());
  ASSERT_TRUE(store.Flush().ok());
  const absl::StatusOr<std::string> before = FileStore(dir.path()).Read(kClaimRecordName);
  const uint64_t revision = store.Revision();
  absl::Status added = store.Add(Pod("u2", {"a"}, {Claim("a", "other")}));
  EXPECT_EQ(added.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(added.message(), "ResourceClaim default/a is held with UID c1, not other");
  EXPECT_FALSE(store.FindPod("u2").has_value());
  EXPECT_EQ(FileStore(dir.path()).Read(kClaimRecordName).value(), before.value());
  EXPECT_EQ(store.Add(Pod("u1", {}, {})).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store.Revision(), revision) << "what PodResources keeps its List answer by";
}

// Replace puts a pod's completed entry in place of its stored one (what an older record lacked,
// filled in); an entry that names other claims, or a pod not stored, changes nothing.
TEST(ClaimStoreTest, ReplaceTakesTheSamePodsEntryWithTheSameClaimsOnly) {
  TempDir dir;
  {
    ClaimStore store(dir.path(), nullptr);
    ASSERT_TRUE(store.Add(Pod("u1", {"a"}, {Claim("a", "c1")})).ok());
    PodClaims completed = Pod("u1", {"a"}, {});
    completed.pod.containers[0].requested_resources = {"example.com/other"};
    EXPECT_EQ(store.Replace(Pod("u2", {"a"}, {}).pod).code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(store.Replace(Pod("u1", {"b"}, {}).pod).code(), absl::StatusCode::kInvalidArgument);
    PodClaims elsewhere = completed;
    elsewhere.pod.namespace_name = "other";
    EXPECT_EQ(store.Replace(elsewhere.pod).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store.FindPod("u1"), Pod("u1", {"a"}, {}).pod);

    const uint64_t before = store.Revision();
    ASSERT_TRUE(store.Replace(completed.pod).ok());
    EXPECT_NE(store.Revision(), before);
    ASSERT_TRUE(store.Flush().ok());
  }
  ClaimStore again(dir.path(), nullptr);
  ASSERT_TRUE(again.Load().ok());
  std::optional<dra::Pod> pod = again.FindPod("u1");
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ(pod->containers[0].requested_resources, std::vector<std::string>{"example.com/other"});
  EXPECT_TRUE(again.GetClaim("default", "a").ok());
}

// Revision (what PodResources keeps its List answer by) changes with every change stored.
TEST(ClaimStoreTest, RevisionChangesWithWhatIsStored) {
  TempDir dir;
  ClaimStore store(dir.path(), nullptr);
  const uint64_t empty = store.Revision();
  ASSERT_TRUE(store.Add(Pod("u1", {"a"}, {Claim("a", "c1")})).ok());
  const uint64_t added = store.Revision();
  EXPECT_NE(added, empty);
  store.Remove("u1");
  EXPECT_NE(store.Revision(), added);
}

TEST(ClaimStoreTest, RetainForgetsPodsThatWereNeverAdmitted) {
  TempDir dir;
  ClaimStore store(dir.path(), nullptr);
  ASSERT_TRUE(store.Add(Pod("kept", {"a"}, {Claim("a", "c1")})).ok());
  ASSERT_TRUE(store.Add(Pod("cut-short", {"b"}, {Claim("b", "c2")})).ok());
  ASSERT_TRUE(store.Retain({"kept"}).ok());
  EXPECT_TRUE(store.FindPod("kept").has_value());
  EXPECT_FALSE(store.FindPod("cut-short").has_value());
  EXPECT_FALSE(store.GetClaim("default", "b").ok());

  ClaimStore again(dir.path(), nullptr);
  ASSERT_TRUE(again.Load().ok());
  EXPECT_EQ(again.Pods().size(), 1U) << "durably";
}

// Each change writes the stored elements joined, re-encoding only what it touched: the file is
// always what encoding the whole store gives, whatever was added and forgotten, in what order.
TEST(ClaimStoreTest, TheRecordIsTheWholeStoreEncodedAfterEveryChange) {
  TempDir dir;
  ClaimStore store(dir.path(), nullptr);
  auto expect_whole_store = [&](const char* after) {
    ASSERT_TRUE(store.Flush().ok());
    const ClaimRecord whole{store.Pods(), store.Claims()};
    EXPECT_EQ(FileStore(dir.path()).Read(kClaimRecordName).value(), EncodeClaimRecord(whole))
        << "after " << after;
  };
  ASSERT_TRUE(store.Add(Pod("u5", {"m"}, {Claim("m", "c1")})).ok());
  expect_whole_store("the first pod");
  ASSERT_TRUE(store.Add(Pod("u1", {"z", "m"}, {Claim("z", "c2"), Claim("a", "c3")})).ok());
  expect_whole_store("a pod sorting first, sharing a claim, bringing one it does not name");
  ASSERT_TRUE(store.Add(Pod("u9", {"b"}, {Claim("b", "c4", false)})).ok());
  expect_whole_store("a pod sorting last");
  store.Remove("u5");
  expect_whole_store("removing the first pod");
  EXPECT_FALSE(store.GetClaim("default", "a").ok()) << "named by no pod";
  ASSERT_TRUE(store.Retain({"u9"}).ok());
  expect_whole_store("retaining one");
  ASSERT_EQ(store.Claims().size(), 1U);

  ClaimStore again(dir.path(), nullptr);
  ASSERT_TRUE(again.Load().ok());
  ASSERT_TRUE(again.Add(Pod("u0", {"b"}, {})).ok());
  ASSERT_TRUE(again.Flush().ok());
  const ClaimRecord whole{again.Pods(), again.Claims()};
  EXPECT_EQ(FileStore(dir.path()).Read(kClaimRecordName).value(), EncodeClaimRecord(whole))
      << "after a restart";
  EXPECT_EQ(again.GetClaim("default", "b")->reserved_for.size(), 0U) << "not allocated";
}

ino_t InodeOf(const std::filesystem::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// An admitted pod's claims reach the disk on the next write the store carries (the DRA
// manager's checkpoint, before any driver is called): in the same flush, not one of their own.
TEST(ClaimStoreTest, AnAddBecomesDurableWithTheNextWriteItCarries) {
  TempDir dir;
  ClaimStore store(dir.path(), nullptr);
  ASSERT_TRUE(store.Add(Pod("u1", {"a"}, {Claim("a", "c1")})).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.Sub(kClaimRecordName))) << "not written by Add";
  ASSERT_TRUE(store.GetClaim("default", "a").ok()) << "but read at once";

  const FileStore state(dir.Sub("state"));
  ASSERT_TRUE(store.WriteTogether({{&state, "carried", "one"}}).ok());
  EXPECT_EQ(state.Read("carried").value(), "one");
  ClaimStore restarted(dir.path(), nullptr);
  ASSERT_TRUE(restarted.Load().ok());
  EXPECT_TRUE(restarted.FindPod("u1").has_value()) << "written with the carried file";

  // Nothing pending: the carried file alone.
  const ino_t record = InodeOf(dir.Sub(kClaimRecordName));
  ASSERT_TRUE(store.WriteTogether({{&state, "carried", "two"}}).ok());
  EXPECT_EQ(state.Read("carried").value(), "two");
  EXPECT_EQ(InodeOf(dir.Sub(kClaimRecordName)), record) << "the record was not written again";

  // A carried write that fails leaves the change pending; the next write makes it durable.
  std::ofstream(dir.Sub("not-a-folder")) << "x";
  const FileStore broken(dir.Sub("not-a-folder"));
  store.Remove("u1");
  ASSERT_TRUE(store.Add(Pod("u2", {"b"}, {Claim("b", "c2")})).ok());
  EXPECT_FALSE(store.WriteTogether({{&broken, "carried", "three"}}).ok());
  ClaimStore before_flush(dir.path(), nullptr);
  ASSERT_TRUE(before_flush.Load().ok());
  EXPECT_FALSE(before_flush.FindPod("u2").has_value());
  ASSERT_TRUE(store.Flush().ok());
  ClaimStore after_flush(dir.path(), nullptr);
  ASSERT_TRUE(after_flush.Load().ok());
  EXPECT_TRUE(after_flush.FindPod("u2").has_value());
  EXPECT_FALSE(after_flush.FindPod("u1").has_value());
}

// A removal is written by the store's next write (the pod's release carries it in the node),
// not by one of its own; until then a restart's Retain forgets the pod's claims.
TEST(ClaimStoreTest, ARemovalIsWrittenByTheNextWrite) {
  TempDir dir;
  ClaimStore store(dir.path(), nullptr);
  ASSERT_TRUE(store.Add(Pod("u1", {"a"}, {Claim("a", "c1")})).ok());
  ASSERT_TRUE(store.Flush().ok());
  const ino_t record = InodeOf(dir.Sub(kClaimRecordName));
  store.Remove("u1");
  EXPECT_FALSE(store.GetClaim("default", "a").ok()) << "forgotten at once";
  EXPECT_EQ(InodeOf(dir.Sub(kClaimRecordName)), record) << "not written by Remove";
  const FileStore state(dir.Sub("state"));
  ASSERT_TRUE(store.WriteTogether({{&state, "carried", "one"}}).ok());
  ClaimStore restarted(dir.path(), nullptr);
  ASSERT_TRUE(restarted.Load().ok());
  EXPECT_TRUE(restarted.Pods().empty()) << "written with the carried file";
  EXPECT_TRUE(restarted.Claims().empty());
}

TEST(ClaimStoreTest, ACorruptRecordIsKeptAsideAndTheStoreStartsEmpty) {
  TempDir dir;
  std::ofstream(dir.Sub(kClaimRecordName)) << "{\"version\":1,\"pods\":[";
  ClaimStore store(dir.path(), nullptr);
  ASSERT_TRUE(store.Load().ok());
  EXPECT_TRUE(store.Pods().empty());
  EXPECT_TRUE(std::filesystem::exists(dir.Sub(std::string(kClaimRecordName) + ".corrupt")));
  ASSERT_TRUE(store.Add(Pod("u1", {"a"}, {Claim("a", "c1")})).ok());

  // A later corrupt record is kept beside the first one's copy, not over it.
  std::ofstream(dir.Sub(kClaimRecordName), std::ios::trunc) << "[";
  ClaimStore again(dir.path(), nullptr);
  ASSERT_TRUE(again.Load().ok());
  EXPECT_TRUE(again.Pods().empty());
  EXPECT_EQ(ReadWholeFile(dir.Sub(std::string(kClaimRecordName) + ".corrupt")).value_or(""),
            "{\"version\":1,\"pods\":[");
  EXPECT_EQ(ReadWholeFile(dir.Sub(std::string(kClaimRecordName) + ".corrupt.1")).value_or(""), "[");
}

// A record a newer devmgr wrote is no corrupt one: the start is refused and the file kept as it
// is, with the claims of running pods.
TEST(ClaimStoreTest, ARecordOfANewerDevmgrRefusesTheStartAndStaysAsItIs) {
  TempDir dir;
  const std::string newer = R"({"claims":[],"pods":[],"version":2})";
  std::ofstream(dir.Sub(kClaimRecordName)) << newer;
  ClaimStore store(dir.path(), nullptr);
  const absl::Status loaded = store.Load();
  EXPECT_EQ(loaded.code(), absl::StatusCode::kFailedPrecondition) << loaded;
  EXPECT_EQ(ReadWholeFile(dir.Sub(kClaimRecordName)).value_or(""), newer);
  EXPECT_FALSE(std::filesystem::exists(dir.Sub(std::string(kClaimRecordName) + ".corrupt")));
}

}  // namespace
}  // namespace devmgr::node
