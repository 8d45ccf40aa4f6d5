// Device metadata (KEP-5304) as upstream's kubeletplugin writes it, the cases of its
// TestNewMetadataWriterVersionValidation, TestProcessPreparedClaim, TestCleanupClaim and
// TestUpdateRequestMetadata: each request's file (a JSON stream, one object per version), the
// CDI spec that mounts it where the containers look for it (by the pod's name for a claim made
// from a template), their removal, and a later update in place.
#include "kubeletplugin/device_metadata.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_store.h"
#include "nlohmann/json.hpp"
#include "tests/testlib/temp_dir.h"

namespace devmgr::kubeletplugin {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr char kDriver[] = "example.com";
constexpr char kNamespace[] = "default";
constexpr char kClaimName[] = "my-claim";
constexpr char kClaimUid[] = "claim-uid-1234";
constexpr char kRequest[] = "gpu-request";
constexpr char kSubrequest[] = "gpu-request/high-memory";

dra::ResourceClaim TestClaim() {
  dra::ResourceClaim claim;
  claim.namespace_name = kNamespace;
  claim.name = kClaimName;
  claim.uid = kClaimUid;
  return claim;
}

Device On(const std::string& request, const std::string& device, Json attributes = nullptr,
          Json network_data = nullptr) {
  Device out{.requests = {request}, .pool_name = "node-1", .device_name = device};
  if (!attributes.is_null() || !network_data.is_null()) {
    out.metadata = DeviceMetadata{.attributes = attributes.is_null() ? Json::object() : attributes,
                                  .network_data = network_data};
  }
  return out;
}

struct Fixture {
  testing::TempDir dir;
  std::filesystem::path plugin_dir = dir.Sub("plugin");
  std::filesystem::path cdi_dir = dir.Sub("cdi");
  MetadataWriter writer =
      MetadataWriter::Create(kDriver, plugin_dir, cdi_dir, {kMetadataV1alpha1}).value();
};

// The objects of a metadata file's stream.
std::vector<Json> ReadStream(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<Json> objects;
  while (!(in >> std::ws).eof()) {
    Json object;
    in >> object;
    objects.push_back(object);
  }
  return objects;
}

// What the file of `request` must hold for `devices`.
Json Expected(const std::string& request, const std::vector<Device>& devices, int64_t generation,
              const std::optional<std::string>& pod_claim_name = std::nullopt) {
  Json listed = Json::array();
  for (const Device& device : devices) {
    Json entry = {{"driver", kDriver}, {"pool", device.pool_name}, {"name", device.device_name}};
    if (device.metadata.has_value() && !device.metadata->attributes.empty()) {
      entry["attributes"] = device.metadata->attributes;
    }
    if (device.metadata.has_value() && !device.metadata->network_data.is_null()) {
      entry["networkData"] = device.metadata->network_data;
    }
    listed.push_back(entry);
  }
  Json object = {{"kind", "DeviceMetadata"},
                 {"apiVersion", "metadata.resource.k8s.io/v1alpha1"},
                 {"metadata",
                  {{"name", kClaimName},
                   {"namespace", kNamespace},
                   {"uid", kClaimUid},
                   {"generation", generation}}},
                 {"requests", {{{"name", request}, {"devices", listed}}}}};
  if (pod_claim_name.has_value()) object["podClaimName"] = *pod_claim_name;
  return object;
}

TEST(MetadataWriterTest, TestNewMetadataWriterVersionValidation) {
  testing::TempDir dir;
  EXPECT_TRUE(MetadataWriter::Create(kDriver, dir.path(), dir.path(), {kMetadataV1alpha1}).ok());
  EXPECT_TRUE(
      MetadataWriter::Create(kDriver, dir.path(), dir.path(), {"bogus/v99", kMetadataV1alpha1})
          .ok());
  EXPECT_EQ(
      MetadataWriter::Create(kDriver, dir.path(), dir.path(), {"bogus/v99"}).status().message(),
      "none of the requested metadata API versions [bogus/v99] are supported");
  EXPECT_EQ(MetadataWriter::Create(kDriver, dir.path(), dir.path(), {}).status().message(),
            "none of the requested metadata API versions [] are supported");
}

TEST(MetadataWriterTest, TestProcessPreparedClaim) {
  struct Case {
    std::string name;
    std::vector<Device> devices;
    std::optional<std::string> pod_claim_name = std::nullopt;
  };
  const std::vector<Case> cases = {
      {"with-metadata", {On(kRequest, "gpu-0", {{"pciBusID", {{"string", "0000:03:00.0"}}}})}},
      {"without-metadata-deferred", {On(kRequest, "gpu-0")}},
      {"network-device-data",
       {On(kRequest, "vf-0", nullptr, {{"interfaceName", "eth0"}, {"ips", {"10.0.0.5/24"}}})}},
      {"multiple-requests", {On("gpu-request", "gpu-0"), On("nic-request", "nic-0")}},
      {"subrequest", {On(kSubrequest, "gpu-0", {{"memoryGB", {{"string", "80"}}}})}},
      {"with-pod-claim-name-annotation",
       {On(kRequest, "gpu-0", {{"model", {{"string", "LATEST-GPU-MODEL"}}}})},
       "my-gpu"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    dra::ResourceClaim claim = TestClaim();
    claim.pod_claim_name = c.pod_claim_name;
    absl::StatusOr<std::map<std::string, std::string>> ids =
        f.writer.ProcessPreparedClaim(claim, c.devices);
    ASSERT_TRUE(ids.ok()) << ids.status();
    std::map<std::string, std::string> expected_ids;
    for (const Device& device : c.devices) {
      const std::string& request = device.requests[0];
      const std::string base = request.substr(0, request.find('/'));
      expected_ids[base] = absl::StrCat(kDriver, "/metadata=", kClaimUid, "_", base);

      const std::filesystem::path file =
          f.plugin_dir / "dra-device-metadata" / "default_my-claim" / base / "metadata.json";
      const std::vector<Json> stream = ReadStream(file);
      ASSERT_EQ(stream.size(), 1u);
      EXPECT_EQ(stream[0], Expected(request, {device}, 1, c.pod_claim_name)) << stream[0].dump(2);
      struct stat info {};
      ASSERT_EQ(::stat(file.c_str(), &info), 0);
      EXPECT_EQ(info.st_mode & 0777, 0644u) << "readable by the containers";

      const std::string container_path =
          c.pod_claim_name.has_value()
              ? absl::StrCat(kMetadataContainerDir, "/resourceclaimtemplates/", *c.pod_claim_name,
                             "/", base, "/example.com-metadata.json")
              : absl::StrCat(kMetadataContainerDir, "/resourceclaims/my-claim/", base,
                             "/example.com-metadata.json");
      const Json expected_spec = {{"cdiVersion", "0.5.0"},
                                  {"kind", "example.com/metadata"},
                                  {"devices",
                                   {{{"name", absl::StrCat(kClaimUid, "_", base)},
                                     {"containerEdits",
                                      {{"mounts",
                                        {{{"hostPath", file.string()},
                                          {"containerPath", container_path},
                                          {"options", {"ro", "bind"}}}}}}}}}}};
      absl::StatusOr<std::string> spec = ReadWholeFile(
          f.cdi_dir / absl::StrCat("example.com_metadata_", kClaimUid, "_", base, ".json"));
      ASSERT_TRUE(spec.ok()) << spec.status();
      EXPECT_EQ(Json::parse(*spec), expected_spec) << *spec;
    }
    EXPECT_EQ(*ids, expected_ids);
  }
}

TEST(MetadataWriterTest, TestCleanupClaim) {
  struct Case {
    std::string name;
    std::vector<Device> prepared = {};
    bool cleaned_before = false;
    std::string namespace_name = kNamespace;
    std::string claim_name = kClaimName;
    std::string uid = kClaimUid;
  };
  const std::vector<Case> cases = {
      {.name = "removes-files",
       .prepared = {On(kRequest, "gpu-0", {{"pciBusID", {{"string", "0000:03:00.0"}}}})}},
      {.name = "nonexistent-claim-is-noop",
       .namespace_name = "no-ns",
       .claim_name = "no-claim",
       .uid = "unknown-uid"},
      {.name = "idempotent",
       .prepared = {On(kRequest, "gpu-0", {{"pciBusID", {{"string", "0000:03:00.0"}}}})},
       .cleaned_before = true},
      {.name = "multiple-requests",
       .prepared = {On("gpu-request", "gpu-0"), On("nic-request", "nic-0")}},
      {.name = "subrequest", .prepared = {On(kSubrequest, "gpu-0")}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    // Another claim's files, which must stay.
    dra::ResourceClaim other = TestClaim();
    other.name = "other";
    other.uid = "claim-uid-12345";
    ASSERT_TRUE(f.writer.ProcessPreparedClaim(other, {On(kRequest, "gpu-1")}).ok());
    if (!c.prepared.empty()) {
      ASSERT_TRUE(f.writer.ProcessPreparedClaim(TestClaim(), c.prepared).ok());
    }
    if (c.cleaned_before) {
      ASSERT_TRUE(f.writer.CleanupClaim(c.namespace_name, c.claim_name, c.uid).ok());
    }
    absl::Status cleaned = f.writer.CleanupClaim(c.namespace_name, c.claim_name, c.uid);
    ASSERT_TRUE(cleaned.ok()) << cleaned;
    EXPECT_FALSE(std::filesystem::exists(f.plugin_dir / "dra-device-metadata" /
                                         absl::StrCat(c.namespace_name, "_", c.claim_name)));
    for (const Device& device : c.prepared) {
      const std::string base = device.requests[0].substr(0, device.requests[0].find('/'));
      EXPECT_FALSE(std::filesystem::exists(f.writer.CdiSpecFile(c.uid, base)));
    }
    EXPECT_TRUE(std::filesystem::exists(f.writer.MetadataFile(kNamespace, "other", kRequest)));
    EXPECT_TRUE(std::filesystem::exists(f.writer.CdiSpecFile("claim-uid-12345", kRequest)));
  }
}

TEST(MetadataWriterTest, TestUpdateRequestMetadata) {
  const Json attributes = {{"pciBusID", {{"string", "0000:03:00.0"}}}};
  struct Case {
    std::string name;
    std::vector<Device> prepared = {};
    int updates_before = 0;
    std::string uid = kClaimUid;
    std::string request = kRequest;
    std::vector<Device> update = {};
    std::string error = {};  // a part of it
    int64_t generation = 0;
  };
  const std::vector<Case> cases = {
      {.name = "updates-file-and-generation",
       .prepared = {On(kRequest, "gpu-0")},
       .update = {On(kRequest, "gpu-0", attributes)},
       .generation = 2},
      {.name = "unknown-claim",
       .uid = "unknown-uid",
       .update = {On(kRequest, "gpu-0", attributes)},
       .error = "not found"},
      {.name = "unknown-request",
       .prepared = {On(kRequest, "gpu-0", attributes)},
       .request = "nonexistent-request",
       .update = {On(kRequest, "gpu-0", attributes)},
       .error = "not found"},
      {.name = "increments-generation-multiple-times",
       .prepared = {On(kRequest, "gpu-0")},
       .updates_before = 2,
       .update = {On(kRequest, "gpu-0", attributes)},
       .generation = 4},
      {.name = "subrequest-update",
       .prepared = {On(kSubrequest, "gpu-0")},
       .request = kSubrequest,
       .update = {On(kSubrequest, "gpu-0", attributes)},
       .generation = 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    if (!c.prepared.empty()) {
      ASSERT_TRUE(f.writer.ProcessPreparedClaim(TestClaim(), c.prepared).ok());
    }
    const std::filesystem::path file =
        f.writer.MetadataFile(kNamespace, kClaimName, c.request.substr(0, c.request.find('/')));
    struct stat before {};
    const bool existed = ::stat(file.c_str(), &before) == 0;
    for (int i = 0; i < c.updates_before; ++i) {
      ASSERT_TRUE(
          f.writer.UpdateRequestMetadata(kNamespace, kClaimName, kClaimUid, c.request, c.update)
              .ok());
    }
    absl::Status updated =
        f.writer.UpdateRequestMetadata(kNamespace, kClaimName, c.uid, c.request, c.update);
    if (!c.error.empty()) {
      EXPECT_THAT(updated.message(), HasSubstr(c.error)) << updated;
      EXPECT_EQ(updated.code(), absl::StatusCode::kNotFound);
      continue;
    }
    ASSERT_TRUE(updated.ok()) << updated;
    const std::vector<Json> stream = ReadStream(file);
    ASSERT_EQ(stream.size(), 1u);
    EXPECT_EQ(stream[0], Expected(c.request, c.update, c.generation)) << stream[0].dump(2);
    struct stat after {};
    ASSERT_TRUE(existed);
    ASSERT_EQ(::stat(file.c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino) << "rewritten in place: a bind mount sees it";
  }
}

// A driver's attribute that is not UTF-8 (read from sysfs) is written as Go's encoder writes it,
// the bad byte as U+FFFD. Before, writing it threw on the driver's prepare thread, which ended
// the driver.
TEST(MetadataWriterTest, AnAttributeThatIsNotUtf8IsWrittenAsGoWritesIt) {
  Fixture f;
  absl::StatusOr<std::map<std::string, std::string>> ids = f.writer.ProcessPreparedClaim(
      TestClaim(), {On(kRequest, "gpu-0", {{"model", {{"string", "A\xff"}}}})});
  ASSERT_TRUE(ids.ok()) << ids.status();
  const std::vector<Json> stream =
      ReadStream(f.writer.MetadataFile(kNamespace, kClaimName, kRequest));
  ASSERT_EQ(stream.size(), 1u);
  EXPECT_EQ(stream[0]["requests"][0]["devices"][0]["attributes"]["model"]["string"],
            "A\xEF\xBF\xBD")
      << stream[0].dump(2);
}

// The pod's claim name is kept through an update; names that would leave the folders are
// refused and nothing is written.
TEST(MetadataWriterTest, KeepsThePodClaimNameAndRefusesNamesThatAreNotFileNames) {
  Fixture f;
  dra::ResourceClaim claim = TestClaim();
  claim.pod_claim_name = "my-gpu";
  ASSERT_TRUE(f.writer.ProcessPreparedClaim(claim, {On(kRequest, "gpu-0")}).ok());
  ASSERT_TRUE(f.writer
                  .UpdateRequestMetadata(kNamespace, kClaimName, kClaimUid, kRequest,
                                         {On(kRequest, "gpu-0")})
                  .ok());
  EXPECT_EQ(ReadStream(f.writer.MetadataFile(kNamespace, kClaimName, kRequest))[0]["podClaimName"],
            "my-gpu");

  for (auto [field, value] : {std::pair{"namespace", ".."}, std::pair{"name", "a/../../b"},
                              std::pair{"uid", "../x"}, std::pair{"pod", "../../etc"}}) {
    dra::ResourceClaim hostile = TestClaim();
    hostile.name = "hostile";
    if (std::string(field) == "namespace") hostile.namespace_name = value;
    if (std::string(field) == "name") hostile.name = value;
    if (std::string(field) == "uid") hostile.uid = value;
    if (std::string(field) == "pod") hostile.pod_claim_name = value;
    absl::StatusOr<std::map<std::string, std::string>> refused =
        f.writer.ProcessPreparedClaim(hostile, {On(kRequest, "gpu-0")});
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << field;
  }
  EXPECT_EQ(f.writer.ProcessPreparedClaim(TestClaim(), {On("../up", "gpu-0")}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.writer.CleanupClaim("..", "x", kClaimUid).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(f.dir.Sub("etc")));
  EXPECT_FALSE(std::filesystem::exists(f.plugin_dir / "x"));
}

}  // namespace
}  // namespace devmgr::kubeletplugin
