// The DRA manager's checkpoint codec against the kubelet's own fixtures
// (tests/testdata/dra, from pkg/kubelet/cm/dra/state/checkpointer_test.go): the files it reads
// (TestCheckpointGetOrCreate), the bytes it writes (TestCheckpointStateStore), the ShareID and
// ClaimInfoStateList layouts, and bad input.
#include "dra/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/crc32.h"
#include "common/file_store.h"
#include "tests/dra/dra_samples.h"

namespace devmgr::dra {
namespace {

constexpr char kDriver[] = "test-driver.cdi.k8s.io";
constexpr char kPod[] = "139cdb46-f989-4f17-9561-ca10cfb509a6";

std::string Sample(const std::string& name) {
  absl::StatusOr<std::string> bytes =
      ReadWholeFile(std::filesystem::path(DEVMGR_DRA_SAMPLES_DIR) / name);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : "";
}

CheckpointDevice Device(const std::string& name) {
  return {"worker-1", name, std::nullopt, GoStrings({"test request"}),
          GoStrings({"example.com/example=cdi-example"})};
}

ClaimInfoState Claim(const std::string& uid, const std::string& name,
                     std::vector<CheckpointDevice> devices) {
  return {uid, name, "default", std::set<std::string>{kPod},
          std::map<std::string, DriverState>{{kDriver, DriverState{std::move(devices)}}}};
}

constexpr char kClaim1[] = "067798be-454e-4be4-9047-1aa06aea63f7";
constexpr char kClaim2[] = "4cf8db2d-06c0-7d70-1a51-e59b25b2c16c";

CheckpointData SingleClaim() {
  return {std::vector<ClaimInfoState>{Claim(kClaim1, "example", {Device("dev-1")})}};
}
CheckpointData MultipleDevices() {
  return {
      std::vector<ClaimInfoState>{Claim(kClaim1, "example", {Device("dev-1"), Device("dev-2")})}};
}
CheckpointData TwoClaims() {
  return {std::vector<ClaimInfoState>{
      Claim(kClaim1, "example-1", {Device("dev-1")}),
      Claim(kClaim2, "example-2",
            {{"worker-1", "dev-2", std::nullopt, std::nullopt, std::nullopt}})}};
}

struct Fixture {
  const char* description;
  const char* file;
  CheckpointData data;
};

std::vector<Fixture> Fixtures() {
  return {{"single-claim-info-state", "single-claim-info-state.json", SingleClaim()},
          {"claim-info-state-with-multiple-devices", "claim-info-state-with-multiple-devices.json",
           MultipleDevices()},
          {"two-claim-info-states", "two-claim-info-states.json", TwoClaims()}};
}

// Upstream's TestCheckpointGetOrCreate: each fixture reads back as the claims it holds; a wrong
// checksum is "checkpoint is corrupted" and a cut-short file "unexpected end of JSON input".
TEST(DraCheckpointTest, TestCheckpointGetOrCreate) {
  for (const Fixture& fixture : Fixtures()) {
    SCOPED_TRACE(fixture.description);
    absl::StatusOr<CheckpointData> data = Decode(Sample(fixture.file));
    ASSERT_TRUE(data.ok()) << data.status();
    EXPECT_EQ(*data, fixture.data);
  }
  absl::StatusOr<CheckpointData> corrupted = Decode(Sample("incorrect-checksum.json"));
  EXPECT_EQ(corrupted.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(corrupted.status().message(),
            "checkpoint is corrupted: checksum mismatch: stored 2930258365, computed 3633532417");
  absl::StatusOr<CheckpointData> invalid = Decode("{");
  EXPECT_EQ(invalid.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(invalid.status().message(), "unexpected end of JSON input");

  // "new-checkpoint": what a kubelet writes when it finds none holds a nil list.
  absl::StatusOr<CheckpointData> fresh = Decode(Encode(CheckpointData{}));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_FALSE(fresh->entries.has_value());
}

// Upstream's TestCheckpointStateStore: the bytes written are the fixtures', checksum included.
TEST(DraCheckpointTest, TestCheckpointStateStore) {
  for (const Fixture& fixture : Fixtures()) {
    SCOPED_TRACE(fixture.description);
    EXPECT_EQ(Encode(fixture.data, Layout::kNoShareId), Sample(fixture.file));
  }
  EXPECT_EQ(
      Encode(CheckpointData{}),
      R"({"Data":"{\"kind\":\"DRACheckpoint\",\"apiVersion\":\"checkpoint.dra.kubelet.k8s.io/v1\",\"Entries\":null}","Checksum":4103351552})");
}

// The newest kubelet writes ShareID (null when unset) between DeviceName and RequestNames.
TEST(DraCheckpointTest, ShareIdLayout) {
  const std::string bytes = Encode(SingleClaim());
  EXPECT_NE(bytes.find(R"(\"DeviceName\":\"dev-1\",\"ShareID\":null,\"RequestNames\")"),
            std::string::npos)
      << bytes;
  absl::StatusOr<ParsedCheckpoint> parsed = Parse(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->stored_checksum, 3596806797u);
  EXPECT_TRUE(parsed->ChecksumMatches());
  EXPECT_EQ(parsed->layout, Layout::kShareId);
  EXPECT_EQ(parsed->data, SingleClaim());

  CheckpointData shared = SingleClaim();
  (*(*shared.entries)[0].driver_state)[kDriver].devices->at(0).share_id = "a1b2c3";
  absl::StatusOr<CheckpointData> back = Decode(Encode(shared));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, shared);

  absl::StatusOr<ParsedCheckpoint> old = Parse(Sample("single-claim-info-state.json"));
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->layout, Layout::kNoShareId);
  absl::StatusOr<ParsedCheckpoint> no_devices = Parse(Encode(CheckpointData{}));
  ASSERT_TRUE(no_devices.ok());
  EXPECT_EQ(no_devices->layout, std::nullopt);
}

// Older kubelets named the list ClaimInfoStateList; it reads the same.
TEST(DraCheckpointTest, ClaimInfoStateListIsRead) {
  absl::StatusOr<ParsedCheckpoint> parsed = Parse(Sample("claim-info-state-list.json"));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->claim_info_state_list);
  EXPECT_TRUE(parsed->ChecksumMatches());
  EXPECT_EQ(parsed->stored_checksum, 1656016162u);
  EXPECT_EQ(parsed->data, SingleClaim());
}

// The kubelet (state.Checkpoint.GetEntries) decodes the TypeMeta and checks neither field: a
// file without them, or with another kind or apiVersion, gives its entries. Before, such a file
// was kept aside as unusable and the claims it recorded were never unprepared.
TEST(DraCheckpointTest, KindAndApiVersionAreNotChecked) {
  const std::string entries =
      R"("Entries":[{"ClaimUID":"067798be-454e-4be4-9047-1aa06aea63f7","ClaimName":"example",)"
      R"("Namespace":"default","PodUIDs":{"139cdb46-f989-4f17-9561-ca10cfb509a6":{}},)"
      R"("DriverState":{"test-driver.cdi.k8s.io":{"Devices":[{"PoolName":"worker-1",)"
      R"("DeviceName":"dev-1","RequestNames":["test request"],)"
      R"("CDIDeviceIDs":["example.com/example=cdi-example"]}]}}}]})";
  for (const std::string& type_meta :
       {std::string("{"), std::string(R"({"kind":"DRACheckpoint",)"),
        std::string(R"({"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v2",)"),
        std::string(R"({"kind":"Other","apiVersion":"",)")}) {
    const std::string data = type_meta + entries;
    std::string escaped;
    for (const char c : data) {
      if (c == '"' || c == '\\') escaped += '\\';
      escaped += c;
    }
    absl::StatusOr<ParsedCheckpoint> parsed = Parse(absl::StrCat(
        R"({"Data":")", escaped, R"(","Checksum":)", Crc32Feed(kCrc32Start, data), "}"));
    ASSERT_TRUE(parsed.ok()) << type_meta << ": " << parsed.status();
    EXPECT_TRUE(parsed->ChecksumMatches()) << type_meta;
    EXPECT_EQ(parsed->data, SingleClaim()) << type_meta;
  }
}

// Nil and empty stay apart, strings Go would escape come back, and bad UTF-8 becomes U+FFFD as
// Go writes it; whatever is written verifies.
TEST(DraCheckpointTest, RoundTripKeepsNilEmptyAndEscapes) {
  CheckpointData data{std::vector<ClaimInfoState>{
      {"uid-<1>", "a&b", "ns\n", std::set<std::string>{}, std::map<std::string, DriverState>{}},
      {"uid-2", "n", "ns", std::nullopt, std::nullopt},
      {"uid-3", "n", "ns", std::set<std::string>{"p2", "p1"},
       std::map<std::string, DriverState>{
           {"b.example.com", DriverState{std::nullopt}},
           {"a.example.com", DriverState{std::vector<CheckpointDevice>{
                                 {"pool", "dev", std::nullopt,
                                  GoStrings(std::vector<std::string>{}), std::nullopt}}}}}}}};
  for (const Layout layout : {Layout::kShareId, Layout::kNoShareId}) {
    absl::StatusOr<CheckpointData> back = Decode(Encode(data, layout));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, data);
  }
  const std::string bytes = Encode(data);
  EXPECT_NE(bytes.find(R"(\"ClaimUID\":\"uid-\\u003c1\\u003e\")"), std::string::npos) << bytes;
  EXPECT_NE(bytes.find(R"(\"PodUIDs\":{\"p1\":{},\"p2\":{}})"), std::string::npos) << bytes;
  EXPECT_NE(bytes.find(R"(\"PodUIDs\":null,\"DriverState\":null)"), std::string::npos) << bytes;

  CheckpointData bad_utf8{std::vector<ClaimInfoState>{
      {"uid", std::string("bad\xff"), "ns", std::nullopt, std::nullopt}}};
  absl::StatusOr<CheckpointData> replaced = Decode(Encode(bad_utf8));
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ((*replaced->entries)[0].claim_name, "bad\xEF\xBF\xBD");
}

// The node operations a driver's devices all skip (DRAOptionalNodeOperations) follow the
// driver's Devices, and only where there are some: a claim that skips nothing is written as a
// kubelet without the gate writes it.
TEST(DraCheckpointTest, SkippedNodeOperationsFollowTheDevicesWhenThereAreAny) {
  CheckpointData data = SingleClaim();
  const std::string without = Encode(data);
  EXPECT_EQ(without.find("SkipNodeOperations"), std::string::npos) << without;
  (*data.entries)[0].driver_state->at(kDriver).skip_node_operations =
      GoStrings({"NodePrepareResources", "NodeUnprepareResources"});
  const std::string with = Encode(data);
  EXPECT_NE(
      with.find(
          R"(\"CDIDeviceIDs\":[\"example.com/example=cdi-example\"]}],\"SkipNodeOperations\":[\"NodePrepareResources\",\"NodeUnprepareResources\"]}})"),
      std::string::npos)
      << with;
  absl::StatusOr<ParsedCheckpoint> back = Parse(with);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->ChecksumMatches());
  EXPECT_EQ(back->data, data);
  EXPECT_EQ(Encode(back->data), with);
}

// Bad input gets InvalidArgument naming what is wrong; nothing throws or crashes.
TEST(DraCheckpointTest, MalformedInputIsRefusedWithTheField) {
  struct Case {
    std::string bytes;
    std::string message;
  };
  auto file = [](const std::string& data) {
    std::string out = R"({"Data":")";
    for (const char c : data) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + R"(","Checksum":1})";
  };
  const std::string head =
      R"({"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v1",)";
  const std::vector<Case> cases = {
      {"[]", "checkpoint: not a JSON object"},
      {R"({"Checksum":1})", "Data: missing or not a string"},
      {R"({"Data":"{}","Checksum":-1})", "Checksum: missing or not a 32-bit unsigned number"},
      {R"({"Data":"{}","Checksum":4294967296})",
       "Checksum: missing or not a 32-bit unsigned number"},
      {file(R"({"kind":1})"), "Data.kind: not a string"},
      {file(R"({"apiVersion":["v1"]})"), "Data.apiVersion: not a string"},
      {file(head + R"("Entries":{}})"), "Data.Entries: not a list"},
      {file(head + R"("Entries":[{"ClaimUID":7}]})"), "Entries[0].ClaimUID: not a string"},
      {file(head + R"("Entries":[{"PodUIDs":[]}]})"), "Entries[0].PodUIDs: not an object"},
      {file(head + R"("Entries":[{"DriverState":{"d":{"SkipNodeOperations":"*"}}}]})"),
       R"(Entries[0].DriverState["d"].SkipNodeOperations: not a list)"},
      {file(head + R"("Entries":[{"DriverState":{"d":{"Devices":[{"ShareID":1}]}}}]})"),
       R"(Entries[0].DriverState["d"].Devices[0].ShareID: not a string)"},
      {file(head + R"("Entries":[{"DriverState":{"d":{"Devices":[{"RequestNames":[1]}]}}}]})"),
       R"(Entries[0].DriverState["d"].Devices[0].RequestNames[0]: not a string)"},
      {file("{\"kind\""), "unexpected end of JSON input"},
      // Limits checked before the file costs its size many times over in memory.
      {file(head + R"("Entries":[)" + std::string(33, '[') + "]}"),
       "Data: byte 113: JSON nested deeper than 32 levels"},
      {file(head + R"("Entries":[{})" +
            [] {
              std::string more;
              for (size_t i = 0; i < (size_t{1} << 20); ++i) more += ",{}";
              return more;
            }() +
            "]}"),
       "Data.Entries: 1048577 entries, more than 1048576"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ParsedCheckpoint> parsed = Parse(c.bytes);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.bytes;
    EXPECT_EQ(parsed.status().message(), c.message) << c.bytes;
  }
}

}  // namespace
}  // namespace devmgr::dra
