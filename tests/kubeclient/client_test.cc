// The API client against the fake API server of tests/testlib (HTTPS, its own CA): TLS and
// credentials, the ResourceSlice calls with the server's rules, the version fallback, watches,
// retries and the errors a caller acts on.
#include "kubeclient/client.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <future>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "kubeclient/api_status.h"
#include "tests/testlib/fake_api_server.h"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/recording_client_metrics.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::kubeclient {
namespace {

using ::devmgr::testing::FakeApiServer;
using ::devmgr::testing::FakeApiServerOptions;
using ::devmgr::testing::FakeFailure;
using ::devmgr::testing::FakeRequest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

std::unique_ptr<Client> Connect(const RestConfig& config, ClientOptions options = {}) {
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(config, std::move(options));
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

ListOptions Selecting(const std::string& field_selector) {
  ListOptions options;
  options.field_selector = field_selector;
  return options;
}

ListOptions From(const std::string& resource_version) {
  ListOptions options;
  options.resource_version = resource_version;
  return options;
}

FakeApiServerOptions Versions(std::vector<std::string> versions) {
  FakeApiServerOptions options;
  options.resource_versions = std::move(versions);
  return options;
}

FakeFailure Failure(const std::string& method, int code, const std::string& reason,
                    int retry_after_seconds, int times, bool garbage = false) {
  FakeFailure failure;
  failure.method = method;
  failure.code = code;
  failure.reason = reason;
  failure.retry_after_seconds = retry_after_seconds;
  failure.times = times;
  failure.garbage = garbage;
  return failure;
}

ClientOptions Sleeping(std::function<void(absl::Duration)> sleep) {
  ClientOptions options;
  options.sleep = std::move(sleep);
  return options;
}

kubeapi::ResourceSlice Slice(const std::string& driver, const std::string& node,
                             const std::vector<std::string>& devices) {
  kubeapi::ResourceSlice slice;
  slice.metadata.generate_name = node + "-" + driver + "-";
  slice.spec.driver = driver;
  slice.spec.node_name = node;
  slice.spec.pool = {.name = node, .generation = 1, .resource_slice_count = 1, .extra = {}};
  for (const std::string& name : devices) {
    kubeapi::Device& device = slice.spec.devices.emplace_back();
    device.name = name;
    device.extra = {{"attributes", {{"model", {{"string", "a100"}}}}}};
  }
  return slice;
}

TEST(ClientTest, CreatesGetsUpdatesAndDeletesWithTheServersRules) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  ASSERT_NE(client, nullptr);

  absl::StatusOr<kubeapi::ResourceSlice> created =
      client->CreateResourceSlice(Slice("gpu.example.com", "worker-1", {"gpu-0", "gpu-1"}));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_THAT(created->metadata.name, HasSubstr("worker-1-gpu.example.com-"));
  EXPECT_FALSE(created->metadata.uid.empty());
  EXPECT_FALSE(created->metadata.resource_version.empty());
  ASSERT_EQ(created->spec.devices.size(), 2u);
  EXPECT_EQ(created->spec.devices[1].extra["attributes"]["model"]["string"], "a100");

  absl::StatusOr<kubeapi::ResourceSlice> got = client->GetResourceSlice(created->metadata.name);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, *created);

  kubeapi::ResourceSlice changed = *got;
  changed.spec.devices.pop_back();
  absl::StatusOr<kubeapi::ResourceSlice> updated = client->UpdateResourceSlice(changed);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_NE(updated->metadata.resource_version, got->metadata.resource_version);
  EXPECT_EQ(updated->spec.devices.size(), 1u);

  // The copy read before the update is stale now: 409 Conflict, which a caller reads again for.
  absl::StatusOr<kubeapi::ResourceSlice> stale = client->UpdateResourceSlice(*got);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted) << stale.status();
  EXPECT_THAT(stale.status().message(), HasSubstr("the object has been modified"));
  ASSERT_TRUE(ApiErrorOf(stale.status()).has_value());
  EXPECT_EQ(ApiErrorOf(stale.status())->http_code, 409);
  EXPECT_EQ(ApiErrorOf(stale.status())->reason, "Conflict");

  absl::Status wrong_uid = client->DeleteResourceSlice(updated->metadata.name, {"not-its-uid", ""});
  EXPECT_EQ(wrong_uid.code(), absl::StatusCode::kAborted) << wrong_uid;
  EXPECT_THAT(wrong_uid.message(), HasSubstr("Precondition failed: UID in precondition"));
  absl::Status old_version =
      client->DeleteResourceSlice(updated->metadata.name, {"", got->metadata.resource_version});
  EXPECT_EQ(old_version.code(), absl::StatusCode::kAborted) << old_version;
  EXPECT_EQ(server.Slices().size(), 1u);

  ASSERT_TRUE(client
                  ->DeleteResourceSlice(updated->metadata.name,
                                        {updated->metadata.uid, updated->metadata.resource_version})
                  .ok());
  EXPECT_TRUE(server.Slices().empty());
  absl::StatusOr<kubeapi::ResourceSlice> gone = client->GetResourceSlice(updated->metadata.name);
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(gone.status().message(), HasSubstr("not found"));
}

// The client speaks HTTP/1.1, the protocol this fake server speaks: libcurl with nghttp2 would
// otherwise offer HTTP/2 at the TLS handshake (a path no test exercises), and the watch of
// a real API server would then run over a protocol the client was never tested on.
TEST(ClientTest, SpeaksHttp11AndNeverOffersHttp2) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->CreateResourceSlice(Slice("gpu.example.com", "worker-1", {"gpu-0"})).ok());
  ListOptions list;
  list.field_selector = "spec.driver=gpu.example.com";
  ASSERT_TRUE(client->ListResourceSlices(list).ok());
  EXPECT_EQ(server.http2_offers(), 0);
}

TEST(ClientTest, CreatingATakenNameIsAlreadyExistsNotAConflict) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  kubeapi::ResourceSlice slice = Slice("gpu.example.com", "worker-1", {"gpu-0"});
  slice.metadata.name = "fixed";
  ASSERT_TRUE(client->CreateResourceSlice(slice).ok());
  absl::StatusOr<kubeapi::ResourceSlice> again = client->CreateResourceSlice(slice);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  EXPECT_EQ(ApiErrorOf(again.status())->reason, "AlreadyExists");
}

TEST(ClientTest, ListsAndDeletesByFieldSelector) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  for (const auto& [driver, node] :
       std::vector<std::pair<std::string, std::string>>{{"gpu.example.com", "worker-1"},
                                                        {"gpu.example.com", "worker-2"},
                                                        {"nic.example.com", "worker-1"}}) {
    ASSERT_TRUE(client->CreateResourceSlice(Slice(driver, node, {"d"})).ok());
  }
  absl::StatusOr<SliceList> worker1 =
      client->ListResourceSlices(Selecting(SliceFieldSelector("", "worker-1")));
  ASSERT_TRUE(worker1.ok()) << worker1.status();
  EXPECT_EQ(worker1->items.size(), 2u);
  EXPECT_EQ(worker1->resource_version, server.resource_version());
  absl::StatusOr<SliceList> gpus =
      client->ListResourceSlices(Selecting(SliceFieldSelector("gpu.example.com", "worker-1")));
  ASSERT_TRUE(gpus.ok());
  ASSERT_EQ(gpus->items.size(), 1u);
  EXPECT_EQ(gpus->items[0].spec.driver, "gpu.example.com");

  ASSERT_TRUE(client->DeleteResourceSlices(Selecting(SliceFieldSelector("", "worker-1"))).ok());
  std::vector<Json> left = server.Slices();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0]["spec"]["nodeName"], "worker-2");
  EXPECT_EQ(server.CountRequests("DELETE",
                                 "/apis/resource.k8s.io/v1/resourceslices?"
                                 "fieldSelector=spec.nodeName%3Dworker-1"),
            1);
}

// SliceNamed: a slice as another writer would add it to the server, with `devices` devices.
Json SliceNamed(const std::string& name, int devices) {
  Json list = Json::array();
  for (int i = 0; i < devices; ++i) list.push_back({{"name", absl::StrCat("gpu-", i)}});
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"driver", "gpu.example.com"},
            {"nodeName", name},
            {"pool", {{"name", name}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", std::move(list)}}}};
}

// A list of the newest state goes in pages of 500, each after the first given the token the
// one before ended with and no resourceVersion (the fake refuses both together, as the API
// server does), as client-go's pager reads them; a token that outlived the server's history
// (410) has the list read whole instead. A list from a resourceVersion is read whole.
TEST(ClientTest, ListsInPagesAndReadsWholeWhenTheTokenExpires) {
  FakeApiServer server;
  for (int i = 0; i < 1'100; ++i) server.AddSlice(SliceNamed(absl::StrCat("node-", 10'000 + i), 1));
  std::unique_ptr<Client> client = Connect(server.Config());
  absl::StatusOr<SliceList> listed = client->ListResourceSlices({});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->items.size(), 1'100u);
  for (size_t i = 0; i < listed->items.size(); ++i) {
    EXPECT_EQ(listed->items[i].metadata.name, absl::StrCat("node-", 10'000 + i));
  }
  EXPECT_EQ(listed->resource_version, server.resource_version());
  std::vector<std::string> targets;
  for (const testing::FakeRequest& request : server.Requests()) targets.push_back(request.target);
  ASSERT_EQ(targets.size(), 3u);
  EXPECT_EQ(targets[0], "/apis/resource.k8s.io/v1/resourceslices?limit=500");
  for (size_t page = 1; page < 3; ++page) {
    EXPECT_THAT(targets[page], ::testing::StartsWith(
                                   "/apis/resource.k8s.io/v1/resourceslices?limit=500&continue="));
  }

  server.ClearRequests();
  FakeFailure expired = Failure("GET", 410, "Expired", -1, 1);
  expired.target_prefix = "/apis/resource.k8s.io/v1/resourceslices?limit=500&continue=";
  server.FailNext(expired);
  absl::StatusOr<SliceList> whole = client->ListResourceSlices({});
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->items.size(), 1'100u);
  targets.clear();
  for (const testing::FakeRequest& request : server.Requests()) targets.push_back(request.target);
  ASSERT_EQ(targets.size(), 3u);
  EXPECT_EQ(targets[2], "/apis/resource.k8s.io/v1/resourceslices");

  // The list is of its first page's version, whatever a later page says.
  const std::string first_version = server.resource_version();
  FakeFailure later_page = Failure("GET", 200, "", -1, 1);
  later_page.target_prefix = "/apis/resource.k8s.io/v1/resourceslices?limit=500&continue=";
  later_page.body = R"({"kind":"ResourceSliceList","apiVersion":"resource.k8s.io/v1",)"
                    R"("metadata":{"resourceVersion":"999999"},"items":[]})";
  server.FailNext(later_page);
  absl::StatusOr<SliceList> two_pages = client->ListResourceSlices({});
  ASSERT_TRUE(two_pages.ok()) << two_pages.status();
  EXPECT_EQ(two_pages->items.size(), 500u);
  EXPECT_EQ(two_pages->resource_version, first_version);

  server.ClearRequests();
  absl::StatusOr<SliceList> from_cache = client->ListResourceSlices(From("0"));
  ASSERT_TRUE(from_cache.ok()) << from_cache.status();
  EXPECT_EQ(from_cache->items.size(), 1'100u);
  ASSERT_EQ(server.Requests().size(), 1u);
  EXPECT_EQ(server.Requests()[0].target,
            "/apis/resource.k8s.io/v1/resourceslices?resourceVersion=0");

  // A server that answers a page with the token it was asked for is not asked forever.
  FakeFailure same_token = Failure("GET", 200, "", -1, 2);
  same_token.target_prefix = "/apis/resource.k8s.io/v1/resourceslices?limit=500";
  same_token.body = R"({"metadata":{"continue":"t"},"items":[]})";
  server.FailNext(same_token);
  absl::StatusOr<SliceList> looping = client->ListResourceSlices({});
  EXPECT_EQ(looping.status().code(), absl::StatusCode::kInvalidArgument) << looping.status();
  EXPECT_THAT(looping.status().message(), HasSubstr("continue token it was asked for again"));
}

// As client-go, answers may come gzip'd (the fake compresses those of 128 KiB and more, as the
// API server does), unless the kubeconfig's cluster sets disable-compression.
TEST(ClientTest, TakesGzipUnlessTheClusterDisablesCompression) {
  FakeApiServer server;
  server.AddSlice(SliceNamed("big", 128));
  for (int i = 0; i < 99; ++i) server.AddSlice(SliceNamed(absl::StrCat("big-", i), 128));
  RestConfig config = server.Config();
  absl::StatusOr<SliceList> gzipped = Connect(config)->ListResourceSlices({});
  ASSERT_TRUE(gzipped.ok()) << gzipped.status();
  EXPECT_EQ(gzipped->items.size(), 100u);
  EXPECT_EQ(gzipped->items[99].spec.devices.size(), 128u);
  EXPECT_EQ(server.gzipped_answers(), 1);

  testing::TempDir dir;
  server.WriteKubeconfig(dir.Sub("config"));
  std::string text;
  {
    std::ifstream in(dir.Sub("config"));
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string server_line = absl::StrCat("server: ", server.url(), "\n");
  text.replace(text.find(server_line), server_line.size(),
               absl::StrCat(server_line, "      disable-compression: true\n"));
  std::ofstream(dir.Sub("config")) << text;
  absl::StatusOr<RestConfig> plain = LoadKubeconfig({dir.Sub("config")});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->disable_compression);
  absl::StatusOr<SliceList> uncompressed = Connect(*plain)->ListResourceSlices({});
  ASSERT_TRUE(uncompressed.ok()) << uncompressed.status();
  EXPECT_EQ(uncompressed->items.size(), 100u);
  EXPECT_EQ(server.gzipped_answers(), 1);
}

// Upstream's draclient: v1, then v1beta2, then v1beta1 on 404; the one that answered is kept.
TEST(ClientTest, FallsBackToTheVersionTheServerHasAndRemembersIt) {
  FakeApiServer server(Versions({"v1beta1"}));
  std::unique_ptr<Client> client = Connect(server.Config());
  absl::StatusOr<kubeapi::ResourceSlice> created =
      client->CreateResourceSlice(Slice("gpu.example.com", "worker-1", {"gpu-0"}));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(client->resource_version(), kubeapi::ResourceVersion::kV1beta1);
  std::vector<std::string> tried;
  for (const auto& request : server.Requests()) tried.push_back(request.target);
  EXPECT_THAT(tried, ElementsAre("/apis/resource.k8s.io/v1/resourceslices",
                                 "/apis/resource.k8s.io/v1beta2/resourceslices",
                                 "/apis/resource.k8s.io/v1beta1/resourceslices"));
  // v1beta1 keeps a device's fields under `basic`: the server got them there, and the client
  // hands them back in v1's shape.
  const Json posted = Json::parse(server.Requests().back().body);
  EXPECT_EQ(posted["spec"]["devices"][0]["basic"]["attributes"]["model"]["string"], "a100");
  EXPECT_EQ(created->spec.devices[0].extra["attributes"]["model"]["string"], "a100");
  EXPECT_EQ(created->api_version, "resource.k8s.io/v1");

  server.ClearRequests();
  ASSERT_TRUE(client->ListResourceSlices({}).ok());
  ASSERT_EQ(server.Requests().size(), 1u);
  EXPECT_EQ(server.Requests()[0].target, "/apis/resource.k8s.io/v1beta1/resourceslices?limit=500");
}

// A failure that says nothing of a version (503 here) met during the fallback does not pin the
// client to that version, as upstream's draclient would (it keeps the last version tried): the
// next call starts again from the version in use. Before, it was pinned too.
TEST(ClientTest, ATransientFailureDuringTheFallbackKeepsTheVersionInUse) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  FakeFailure unavailable = Failure("GET", 503, "ServiceUnavailable", -1, 1);
  unavailable.target_prefix = "/apis/resource.k8s.io/v1beta2/";
  server.FailNext(unavailable);
  // A slice that is not there: v1 answers 404 for it, so the client tries v1beta2.
  absl::StatusOr<kubeapi::ResourceSlice> missing = client->GetResourceSlice("no-such-slice");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnavailable) << missing.status();
  EXPECT_EQ(client->resource_version(), kubeapi::ResourceVersion::kV1);
  server.ClearRequests();
  ASSERT_TRUE(client->ListResourceSlices({}).ok());
  ASSERT_EQ(server.Requests().size(), 1u);
  EXPECT_EQ(server.Requests()[0].target, "/apis/resource.k8s.io/v1/resourceslices?limit=500");
}

TEST(ClientTest, ReadsClaimsInV1sShapeAndNodes) {
  FakeApiServer server(Versions({"v1beta1"}));
  server.AddClaim(Json::parse(R"({
    "kind": "ResourceClaim", "apiVersion": "resource.k8s.io/v1",
    "metadata": {"name": "gpus", "namespace": "team-a"},
    "spec": {"devices": {"requests": [{"name": "gpu",
      "exactly": {"deviceClassName": "gpu.example.com", "count": 2}}]}},
    "status": {"allocation": {"devices": {"results": [
      {"request": "gpu", "driver": "gpu.example.com", "pool": "worker-1", "device": "gpu-0"}]}}}
  })"));
  server.AddNode("worker-1", "node-uid-1");
  std::unique_ptr<Client> client = Connect(server.Config());

  absl::StatusOr<Json> claim = client->GetResourceClaim("team-a", "gpus");
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ((*claim)["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ((*claim)["spec"]["devices"]["requests"][0]["exactly"]["count"], 2);
  EXPECT_FALSE((*claim)["spec"]["devices"]["requests"][0].contains("deviceClassName"));
  EXPECT_EQ((*claim)["status"]["allocation"]["devices"]["results"][0]["device"], "gpu-0");

  absl::StatusOr<Json> missing = client->GetResourceClaim("team-a", "nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("resourceclaims.resource.k8s.io \"nope\" not found"));

  absl::StatusOr<Json> node = client->GetNode("worker-1");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)["metadata"]["uid"], "node-uid-1");
  EXPECT_EQ(client->GetNode("worker-9").status().code(), absl::StatusCode::kNotFound);
}

// A name or namespace that would make the request's path name another object (or a list) is
// refused before anything is sent, with client-go's words: "..", say, in a claim reference a
// kubelet passed on would read the namespace itself.
TEST(ClientTest, RefusesNamesThatWouldLeaveTheirPathSegment) {
  FakeApiServer server(Versions({"v1"}));
  std::unique_ptr<Client> client = Connect(server.Config());
  const auto message = [](const absl::Status& status) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    return std::string(status.message());
  };
  EXPECT_EQ(message(client->GetResourceClaim("team-a", "..").status()),
            "invalid resource name \"..\": [may not be '..']");
  EXPECT_EQ(message(client->GetResourceClaim(".", "gpus").status()),
            "invalid namespace \".\": [may not be '.']");
  EXPECT_EQ(message(client->GetResourceClaim("team-a", "a/b%2F").status()),
            "invalid resource name \"a/b%2F\": [may not contain '/' may not contain '%']");
  EXPECT_EQ(message(client->GetResourceClaim("team-a", "").status()),
            "resource name may not be empty");
  EXPECT_EQ(message(client->GetNode("..").status()),
            "invalid resource name \"..\": [may not be '..']");
  EXPECT_EQ(message(client->GetResourceSlice("a/b").status()),
            "invalid resource name \"a/b\": [may not contain '/']");
  EXPECT_EQ(message(client->DeleteResourceSlice("..", {})),
            "invalid resource name \"..\": [may not be '..']");
  kubeapi::ResourceSlice slice;
  slice.metadata.name = "..";
  EXPECT_EQ(message(client->UpdateResourceSlice(slice).status()),
            "invalid resource name \"..\": [may not be '..']");
  EXPECT_TRUE(server.Requests().empty());
}

TEST(ClientTest, RefusesAServerItsCaDidNotSign) {
  FakeApiServer server;
  RestConfig config = server.Config();
  config.certificate_authority_pem = server.pki().other_ca_pem;
  std::unique_ptr<Client> client = Connect(config);
  absl::StatusOr<SliceList> list = client->ListResourceSlices({});
  EXPECT_EQ(list.status().code(), absl::StatusCode::kUnavailable) << list.status();
  EXPECT_THAT(list.status().message(), HasSubstr("TLS with the API server failed"));
  EXPECT_TRUE(server.Requests().empty());

  // Only a kubeconfig's own insecure-skip-tls-verify turns the check off, and never beside a
  // CA (client-go's transport refuses the two together).
  config.insecure_skip_tls_verify = true;
  absl::StatusOr<std::unique_ptr<HttpTransport>> both = HttpTransport::Create(config);
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(both.status().message(),
            "specifying a root certificates file with the insecure flag is not allowed");
  config.certificate_authority_pem.clear();
  EXPECT_TRUE(Connect(config)->ListResourceSlices({}).ok());
}

TEST(ClientTest, ChecksTheServerNameItIsTold) {
  FakeApiServer server;
  RestConfig config = server.Config();
  // The certificate names 127.0.0.1, localhost and fake-apiserver.
  config.tls_server_name = "fake-apiserver";
  server.ClearRequests();
  EXPECT_TRUE(Connect(config)->ListResourceSlices({}).ok());
  // The name reaches TLS alone: the request's Host is the server's own, as client-go's.
  ASSERT_FALSE(server.Requests().empty());
  EXPECT_EQ("https://" + server.Requests().back().host, server.url());
  config.tls_server_name = "someone-else";
  absl::StatusOr<SliceList> list = Connect(config)->ListResourceSlices({});
  EXPECT_EQ(list.status().code(), absl::StatusCode::kUnavailable) << list.status();
  EXPECT_THAT(list.status().message(), HasSubstr("TLS"));
}

TEST(ClientTest, AuthenticatesWithATokenOrATokenFile) {
  FakeApiServerOptions with_token;
  with_token.token = "s3cret";
  FakeApiServer server(with_token);
  RestConfig config = server.Config();
  EXPECT_TRUE(Connect(config)->ListResourceSlices({}).ok());

  config.bearer_token = "expired";
  absl::StatusOr<SliceList> refused = Connect(config)->ListResourceSlices({});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated) << refused.status();
  EXPECT_EQ(refused.status().message(), "Unauthorized");

  testing::TempDir dir;
  std::ofstream(dir.Sub("token")) << "s3cret\n";
  config.bearer_token.clear();
  config.bearer_token_file = dir.Sub("token");
  EXPECT_TRUE(Connect(config)->ListResourceSlices({}).ok());

  // With both, the file's token wins.
  config.bearer_token = "expired";
  EXPECT_TRUE(Connect(config)->ListResourceSlices({}).ok());

  // Nothing to send: Unauthenticated (a missing file is not a missing object).
  config.bearer_token.clear();
  config.bearer_token_file = dir.Sub("missing");
  absl::StatusOr<SliceList> no_file = Connect(config)->ListResourceSlices({});
  EXPECT_EQ(no_file.status().code(), absl::StatusCode::kUnauthenticated) << no_file.status();
  EXPECT_THAT(no_file.status().message(), HasSubstr("cannot read the token file"));
  std::ofstream(dir.Sub("empty")) << "\n";
  config.bearer_token_file = dir.Sub("empty");
  absl::StatusOr<SliceList> empty = Connect(config)->ListResourceSlices({});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kUnauthenticated) << empty.status();
  EXPECT_THAT(empty.status().message(), HasSubstr("it is empty"));
  config.bearer_token = "s3cret";
  EXPECT_TRUE(Connect(config)->ListResourceSlices({}).ok()) << "the static token stands in";
}

// A kubeconfig for `server` whose user gets its credentials from the plugin `plugin.sh` beside
// it, which prints the ExecCredential status kept in `status.json` (read at each run, so a
// test changes what the next run gives; a `next.json` replaces it after the run that finds it)
// and counts its runs in `runs`.
std::filesystem::path ExecKubeconfig(const FakeApiServer& server, const testing::TempDir& dir,
                                     const std::string& status) {
  std::ofstream(dir.Sub("status.json")) << status;
  std::ofstream(dir.Sub("plugin.sh"))
      << "#!/bin/sh\ncd \"$(dirname \"$0\")\"\necho run >> runs\n"
      << "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":"
         "\"client.authentication.k8s.io/v1\",\"status\":'\ncat status.json\necho '}'\n"
      << "if [ -f next.json ]; then mv next.json status.json; fi\n";
  std::filesystem::permissions(dir.Sub("plugin.sh"), std::filesystem::perms::owner_all);
  std::ofstream(dir.Sub("config"))
      << "current-context: c\nclusters:\n- name: fake\n  cluster:\n    server: " << server.url()
      << "\n    certificate-authority-data: " << absl::Base64Escape(server.pki().ca_pem)
      << "\ncontexts:\n- name: c\n  context: {cluster: fake, user: plugin}\n"
      << "users:\n- name: plugin\n  user:\n    exec:\n"
      << "      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin.sh\n"
      << "      interactiveMode: Never\n";
  return dir.Sub("config");
}

int Runs(const testing::TempDir& dir) {
  std::ifstream in(dir.Sub("runs"));
  int runs = 0;
  for (std::string line; std::getline(in, line);) ++runs;
  return runs;
}

// The Authorization header of each request `server` was sent, oldest first.
std::vector<std::string> Authorizations(const FakeApiServer& server) {
  std::vector<std::string> sent;
  for (const FakeRequest& request : server.Requests()) {
    for (const auto& [name, value] : request.headers) {
      if (name == "Authorization") sent.push_back(value);
    }
  }
  return sent;
}

// A kubeconfig user's exec plugin gives the token. As client-go's: it runs at the first request,
// and again inside a request the server refuses, which still fails Unauthorized; the next
// requests carry the new token. A run that fails then is logged and keeps the refused token in
// hand: the next request carries it (refused again, and the plugin runs again) rather than
// failing for want of credentials.
TEST(ClientTest, AuthenticatesWithAnExecPluginsTokenAndRenewsItWhenRefused) {
  FakeApiServerOptions with_token;
  with_token.token = "s3cret";
  FakeApiServer server(with_token);
  testing::TempDir dir;
  absl::StatusOr<RestConfig> config =
      LoadKubeconfig({ExecKubeconfig(server, dir, R"({"token":"revoked"})")});
  ASSERT_TRUE(config.ok()) << config.status();
  std::ofstream(dir.Sub("next.json")) << R"({"token":"s3cret"})";
  std::ostringstream log;
  const LoggerPtr logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_pattern("%l %v");
  ClientOptions options;
  options.logger = logger;
  std::unique_ptr<Client> client = Connect(*config, options);
  absl::StatusOr<SliceList> refused = client->ListResourceSlices({});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated) << refused.status();
  EXPECT_EQ(refused.status().message(), "Unauthorized");
  EXPECT_EQ(Runs(dir), 2) << "the plugin runs again before the refused request returns";
  for (int request = 0; request < 3; ++request) {
    absl::StatusOr<SliceList> listed = client->ListResourceSlices({});
    EXPECT_TRUE(listed.ok()) << listed.status();
  }
  EXPECT_EQ(Runs(dir), 2);
  EXPECT_EQ(log.str(), "");

  // A refresh that fails: the refused token is sent again.
  server.ClearRequests();
  testing::TempDir failing_dir;
  config = LoadKubeconfig({ExecKubeconfig(server, failing_dir, R"({"token":"revoked"})")});
  ASSERT_TRUE(config.ok()) << config.status();
  std::ofstream(failing_dir.Sub("next.json")) << "{}";
  std::unique_ptr<Client> failing = Connect(*config, options);
  for (int request = 0; request < 2; ++request) {
    absl::StatusOr<SliceList> again = failing->ListResourceSlices({});
    EXPECT_EQ(again.status().code(), absl::StatusCode::kUnauthenticated) << again.status();
    EXPECT_EQ(again.status().message(), "Unauthorized");
  }
  EXPECT_EQ(Runs(failing_dir), 3);
  EXPECT_THAT(Authorizations(server), ElementsAre("Bearer revoked", "Bearer revoked"));
  const std::vector<std::string> logged = absl::StrSplit(log.str(), '\n', absl::SkipEmpty());
  EXPECT_THAT(logged, ElementsAre("error \"refreshing credentials\" err=\"exec plugin didn't "
                                  "return a token or cert/key pair\"",
                                  "error \"refreshing credentials\" err=\"exec plugin didn't "
                                  "return a token or cert/key pair\""));
  // Once the plugin gives a token again, the refused request's run brings it.
  std::ofstream(failing_dir.Sub("status.json")) << R"({"token":"s3cret"})";
  EXPECT_EQ(failing->ListResourceSlices({}).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(failing->ListResourceSlices({}).ok());
  EXPECT_EQ(Runs(failing_dir), 4);

  // A plugin that fails with no credentials in hand is the request's error.
  std::ofstream(dir.Sub("status.json")) << "{}";
  config = LoadKubeconfig({dir.Sub("config")});
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<SliceList> no_credentials = Connect(*config)->ListResourceSlices({});
  EXPECT_EQ(no_credentials.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(no_credentials.status().message(),
            "getting credentials: exec plugin didn't return a token or cert/key pair");
}

// The client certificate an exec plugin gives is presented in TLS.
TEST(ClientTest, AuthenticatesWithAnExecPluginsClientCertificate) {
  FakeApiServerOptions with_certificates;
  with_certificates.require_client_certificate = true;
  FakeApiServer server(with_certificates);
  testing::TempDir dir;
  absl::StatusOr<RestConfig> config =
      LoadKubeconfig({ExecKubeconfig(server, dir,
                                     Json{{"clientCertificateData", server.pki().client_cert_pem},
                                          {"clientKeyData", server.pki().client_key_pem}}
                                         .dump())});
  ASSERT_TRUE(config.ok()) << config.status();
  std::unique_ptr<Client> client = Connect(*config);
  for (int request = 0; request < 2; ++request) {
    absl::StatusOr<SliceList> listed = client->ListResourceSlices({});
    EXPECT_TRUE(listed.ok()) << listed.status();
  }
  EXPECT_EQ(Runs(dir), 1);
}

// The user a configuration impersonates is named in every request's Impersonate-* headers, as
// client-go's impersonating round tripper names it: one Impersonate-Group per group, one
// Impersonate-Extra-KEY per value, KEY %-escaped and in Go's canonical form.
TEST(ClientTest, ActsAsTheUserItImpersonates) {
  FakeApiServer server;
  RestConfig config = server.Config();
  config.impersonate = {.user = "system:serviceaccount:dra:driver",
                        .uid = "1234",
                        .groups = {"system:serviceaccounts", " viewers\t", " "},
                        .extra = {{"acme.com/project", {"a", "b"}}, {"scopes", {"read"}}}};
  ASSERT_TRUE(Connect(config)->ListResourceSlices({}).ok());
  std::vector<std::pair<std::string, std::string>> impersonation;
  const FakeRequest listed = server.Requests().back();
  for (const auto& [name, value] : listed.headers) {
    if (absl::StartsWith(name, "Impersonate-")) impersonation.emplace_back(name, value);
  }
  EXPECT_THAT(
      impersonation,
      ElementsAre(std::pair{"Impersonate-User", "system:serviceaccount:dra:driver"},
                  std::pair{"Impersonate-Uid", "1234"},
                  std::pair{"Impersonate-Group", "system:serviceaccounts"},
                  std::pair{"Impersonate-Group", "viewers"}, std::pair{"Impersonate-Group", ""},
                  std::pair{"Impersonate-Extra-Acme.com%2fproject", "a"},
                  std::pair{"Impersonate-Extra-Acme.com%2fproject", "b"},
                  std::pair{"Impersonate-Extra-Scopes", "read"}));

  // Nothing is sent for an empty impersonation.
  server.ClearRequests();
  ASSERT_TRUE(Connect(server.Config())->ListResourceSlices({}).ok());
  const FakeRequest plain = server.Requests().back();
  for (const auto& [name, value] : plain.headers) {
    EXPECT_FALSE(absl::StartsWith(name, "Impersonate-")) << name;
  }
}

// A value that a header cannot carry (a line break would start another header on the wire) is
// refused in Go's transport's words, and nothing is sent.
TEST(ClientTest, AHeaderValueWithALineBreakIsRefused) {
  FakeApiServer server;
  RestConfig config = server.Config();
  config.impersonate.user = "driver\r\nImpersonate-Group: system:masters";
  absl::StatusOr<std::unique_ptr<Client>> impersonating = Client::Create(config, {});
  EXPECT_EQ(
      impersonating.status(),
      absl::InvalidArgumentError("net/http: invalid header field value for \"Impersonate-User\""));

  config = server.Config();
  config.bearer_token = "s3cret\nX-Injected: 1";
  absl::StatusOr<SliceList> listed = Connect(config)->ListResourceSlices({});
  EXPECT_EQ(listed.status(), absl::InvalidArgumentError(
                                 "net/http: invalid header field value for \"Authorization\""));
  EXPECT_TRUE(server.Requests().empty());
}

// An exec plugin that does not finish holds a request only until its cancellation (a
// reflector's or a controller's Stop) or its timeout, and the client's end kills it.
TEST(ClientTest, AHungExecPluginHoldsARequestOnlyUntilItIsCancelledOrTimesOut) {
  FakeApiServer server;
  testing::TempDir dir;
  absl::StatusOr<RestConfig> config = LoadKubeconfig({ExecKubeconfig(server, dir, "{}")});
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(::mkfifo(dir.Sub("never").c_str(), 0600), 0);
  std::ofstream(dir.Sub("plugin.sh")) << "#!/bin/sh\necho $$ > \"$(dirname \"$0\")/pid\"\n"
                                      << "read line < \"$(dirname \"$0\")/never\"\n";
  ClientOptions options;
  options.timeout = absl::Milliseconds(50);
  std::unique_ptr<Client> client = Connect(*config, options);
  EXPECT_EQ(client->ListResourceSlices({}).status().code(), absl::StatusCode::kDeadlineExceeded);

  ClientOptions no_timeout;
  no_timeout.timeout = absl::ZeroDuration();
  std::unique_ptr<Client> patient = Connect(*config, no_timeout);
  Cancellation cancel;
  auto waiting =
      std::async(std::launch::async, [&] { return patient->ListResourceSlices({}, &cancel); });
  // Cancelled however the test ends, before the future waits for the request.
  const absl::Cleanup cancel_at_end = [&cancel] { cancel.Cancel(); };
  ASSERT_TRUE(testing::WaitFor([&] { return cancel.waiting() == 1; }));
  cancel.Cancel();
  EXPECT_EQ(waiting.get().status().code(), absl::StatusCode::kCancelled);
  // Both clients' plugins run on; one of them wrote its pid.
  pid_t pid = 0;
  ASSERT_TRUE(testing::WaitFor([&] { return std::ifstream(dir.Sub("pid")) >> pid && pid > 0; }));
  EXPECT_EQ(::kill(pid, 0), 0);
  patient.reset();
  client.reset();
  EXPECT_EQ(::kill(pid, 0), -1) << "the plugin outlives its client";
}

// A refresh after a 401 that outlasts the refused request's timeout goes on for the next
// request, logged at debug, not as a failure; the answer is the 401.
TEST(ClientTest, ARefreshThatOutlastsItsRequestGoesOnForTheNext) {
  FakeApiServerOptions with_token;
  with_token.token = "s3cret";
  FakeApiServer server(with_token);
  testing::TempDir dir;
  absl::StatusOr<RestConfig> config = LoadKubeconfig({ExecKubeconfig(server, dir, "{}")});
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(::mkfifo(dir.Sub("go").c_str(), 0600), 0);
  // The first run gives a token the server refuses; the second waits for `go`, then gives the
  // right one.
  std::ofstream(dir.Sub("plugin.sh"))
      << "#!/bin/sh\ncd \"$(dirname \"$0\")\"\n"
      << "if [ -f runs ]; then read line < go; t=s3cret; else t=revoked; fi\necho run >> runs\n"
      << "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/"
         "v1\",\"status\":{\"token\":\"%s\"}}' \"$t\"\n";
  std::ostringstream log;
  const LoggerPtr logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_pattern("%l %v");
  logger->set_level(spdlog::level::debug);
  ClientOptions options;
  options.logger = logger;
  options.timeout = absl::Milliseconds(500);
  std::unique_ptr<Client> client = Connect(*config, options);
  const absl::Status refused = client->ListResourceSlices({}).status();
  EXPECT_EQ(refused.message(), "Unauthorized") << refused;
  EXPECT_THAT(log.str(), HasSubstr("debug \"Refreshing credentials goes on after the request\" "
                                   "err=\""));
  EXPECT_THAT(log.str(), HasSubstr("has not finished within"));
  EXPECT_THAT(log.str(), Not(HasSubstr("error")));
  // The run goes on; the next request waits for it and carries its token.
  auto next = std::async(std::launch::async, [&] { return client->ListResourceSlices({}); });
  ASSERT_TRUE(testing::WaitFor([&] { return Runs(dir) == 1; }));
  std::ofstream(dir.Sub("go")) << "go\n";
  absl::StatusOr<SliceList> listed = next.get();
  EXPECT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(Runs(dir), 2);
}

// ListenOnLoopback: a TCP socket listening on 127.0.0.1 at a port the system picks (`port`).
int ListenOnLoopback(uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  // NOLINTBEGIN(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API takes sockaddr*
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  // NOLINTEND(cppcoreguidelines-pro-type-reinterpret-cast)
  EXPECT_EQ(::listen(fd, 16), 0);
  port = ntohs(address.sin_port);
  return fd;
}

// A proxy on loopback that tunnels each connection to the port its client asks for on
// 127.0.0.1: an HTTP proxy taking CONNECT, or a SOCKS5 proxy (without authentication, taking
// an IPv4 address or a name). It keeps what each client asked for.
class TunnelProxy {
 public:
  enum class Kind { kHttpConnect, kSocks5 };

  explicit TunnelProxy(Kind kind) : kind_(kind) {
    fd_ = ListenOnLoopback(port_);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~TunnelProxy() {
    ::shutdown(fd_, SHUT_RDWR);
    acceptor_.join();
    {
      absl::MutexLock lock(&mu_);
      for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
    }
    for (std::thread& tunnel : tunnels_) tunnel.join();
    for (int fd : open_) ::close(fd);
    ::close(fd_);
  }
  TunnelProxy(const TunnelProxy&) = delete;
  TunnelProxy& operator=(const TunnelProxy&) = delete;

  std::string url() const {
    return absl::StrCat(kind_ == Kind::kSocks5 ? "socks5" : "http", "://127.0.0.1:", port_);
  }
  // "host:port" as each client asked for it.
  std::vector<std::string> targets() const {
    absl::MutexLock lock(&mu_);
    return targets_;
  }

 private:
  void Accept() {
    for (int client; (client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
      absl::MutexLock lock(&mu_);
      open_.push_back(client);
      tunnels_.emplace_back([this, client] { Tunnel(client); });
    }
  }

  // ReadExactly: `size` bytes from `fd`, or false.
  static bool ReadExactly(int fd, char* data, size_t size) {
    while (size > 0) {
      const ssize_t got = ::read(fd, data, size);
      if (got <= 0) return false;
      data += got;
      size -= static_cast<size_t>(got);
    }
    return true;
  }
  static bool WriteAll(int fd, const std::string& data) {
    return ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  }

  // Target: the "host:port" the client asks for, its answer already sent; "" when it asked for
  // nothing this proxy understands.
  std::string Target(int client) {
    if (kind_ == Kind::kHttpConnect) {
      std::string head;
      char byte = 0;
      while (head.find("\r\n\r\n") == std::string::npos && ReadExactly(client, &byte, 1)) {
        head.push_back(byte);
      }
      if (!absl::StartsWith(head, "CONNECT ")) return "";
      const std::string target = head.substr(8, head.find(' ', 8) - 8);
      return WriteAll(client, "HTTP/1.1 200 Connection established\r\n\r\n") ? target : "";
    }
    char greeting[2];
    if (!ReadExactly(client, greeting, 2) || greeting[0] != 5) return "";
    std::string methods(static_cast<unsigned char>(greeting[1]), '\0');
    if (!ReadExactly(client, methods.data(), methods.size())) return "";
    if (!WriteAll(client, std::string("\x05\x00", 2))) return "";
    char request[4];  // version, command (connect), reserved, address type
    if (!ReadExactly(client, request, 4) || request[1] != 1) return "";
    std::string name;
    if (request[3] == 1) {  // IPv4
      unsigned char ip[4];
      if (!ReadExactly(client, reinterpret_cast<char*>(ip), 4)) return "";  // NOLINT: bytes
      name = absl::StrCat(ip[0], ".", ip[1], ".", ip[2], ".", ip[3]);
    } else if (request[3] == 3) {  // a name, its length first
      char length = 0;
      if (!ReadExactly(client, &length, 1)) return "";
      name.resize(static_cast<unsigned char>(length));
      if (!ReadExactly(client, name.data(), name.size())) return "";
    } else {
      return "";
    }
    unsigned char port[2];
    if (!ReadExactly(client, reinterpret_cast<char*>(port), 2)) return "";  // NOLINT: bytes
    if (!WriteAll(client, std::string("\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10))) return "";
    return absl::StrCat(name, ":", port[0] * 256 + port[1]);
  }

  void Tunnel(int client) {
    const std::string target = Target(client);
    int upstream = -1;
    if (!target.empty()) {
      {
        absl::MutexLock lock(&mu_);
        targets_.push_back(target);
      }
      int port = 0;
      EXPECT_TRUE(absl::SimpleAtoi(target.substr(target.rfind(':') + 1), &port)) << target;
      upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      address.sin_port = htons(static_cast<uint16_t>(port));
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
      if (::connect(upstream, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
        ::close(upstream);
        upstream = -1;
      } else {
        absl::MutexLock lock(&mu_);
        open_.push_back(upstream);
      }
    }
    // Bytes both ways until either side ends.
    for (bool open = upstream >= 0; open;) {
      pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
      if (::poll(fds, 2, -1) <= 0) break;
      for (int side = 0; side < 2 && open; ++side) {
        if (fds[side].revents == 0) continue;
        char buffer[16384];
        const ssize_t got = ::read(fds[side].fd, buffer, sizeof(buffer));
        open = got > 0 && ::write(fds[1 - side].fd, buffer, static_cast<size_t>(got)) == got;
      }
    }
    absl::MutexLock lock(&mu_);
    for (int fd : {client, upstream}) {
      if (fd < 0) continue;
      ::shutdown(fd, SHUT_RDWR);
    }
  }

  const Kind kind_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  mutable absl::Mutex mu_;
  // Every socket ever opened here, closed at the end (shut down when a tunnel ends).
  std::vector<int> open_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> tunnels_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> targets_ ABSL_GUARDED_BY(mu_);
};

// A cluster's proxy-url carries every request, through an HTTP proxy (CONNECT) or a SOCKS5
// one that resolves the server's name itself, whatever no_proxy says, as client-go's
// http.ProxyURL.
TEST(ClientTest, GoesThroughTheClustersProxyUrl) {
  FakeApiServer server;
  server.AddSlice(SliceNamed("via-proxy", 1));
  const std::string port = server.url().substr(server.url().rfind(':') + 1);
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  // Unset however the test ends (an ASSERT returns early): later tests must not inherit it.
  const absl::Cleanup unset_no_proxy = [] { ::unsetenv("no_proxy"); };
  for (const TunnelProxy::Kind kind :
       {TunnelProxy::Kind::kHttpConnect, TunnelProxy::Kind::kSocks5}) {
    TunnelProxy proxy(kind);
    testing::TempDir dir;
    server.WriteKubeconfig(dir.Sub("config"));
    std::string text;
    {
      std::ifstream in(dir.Sub("config"));
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    // The server by name: a SOCKS5 proxy is given the name, as Go's socks5 proxies are.
    const std::string server_line = absl::StrCat("server: ", server.url(), "\n");
    text.replace(
        text.find(server_line), server_line.size(),
        absl::StrCat("server: https://localhost:", port, "\n      proxy-url: ", proxy.url(), "\n"));
    std::ofstream(dir.Sub("config")) << text;
    absl::StatusOr<RestConfig> config = LoadKubeconfig({dir.Sub("config")});
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->proxy_url, proxy.url());
    absl::StatusOr<SliceList> listed = Connect(*config)->ListResourceSlices({});
    ASSERT_TRUE(listed.ok()) << proxy.url() << ": " << listed.status();
    ASSERT_EQ(listed->items.size(), 1u);
    EXPECT_THAT(proxy.targets(), ElementsAre(absl::StrCat("localhost:", port))) << proxy.url();
  }
}

// A plain HTTP server that answers every request with a Node and keeps each request's head.
class PlainHttpServer {
 public:
  PlainHttpServer() {
    fd_ = ListenOnLoopback(port_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~PlainHttpServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  PlainHttpServer(const PlainHttpServer&) = delete;
  PlainHttpServer& operator=(const PlainHttpServer&) = delete;

  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  std::vector<std::string> heads() const {
    absl::MutexLock lock(&mu_);
    return heads_;
  }

 private:
  void Serve() {
    for (int connection; (connection = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
      std::string head;
      char buffer[4096];
      ssize_t got = 0;
      while (head.find("\r\n\r\n") == std::string::npos &&
             (got = ::read(connection, buffer, sizeof(buffer))) > 0) {
        head.append(buffer, static_cast<size_t>(got));
      }
      {
        absl::MutexLock lock(&mu_);
        heads_.push_back(head);
      }
      const std::string body = R"({"kind":"Node","metadata":{"name":"n","uid":"u"}})";
      const std::string answer = absl::StrCat(
          "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
          "\r\nConnection: close\r\n\r\n", body);
      EXPECT_EQ(::write(connection, answer.data(), answer.size()),
                static_cast<ssize_t>(answer.size()));
      ::close(connection);
    }
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  mutable absl::Mutex mu_;
  std::vector<std::string> heads_ ABSL_GUARDED_BY(mu_);
};

// To a plain http:// server (a `kubectl proxy`) a request goes without the token, the token
// file, the client certificate or an exec plugin's credentials: client-go reads no credentials
// for a server without TLS.
TEST(ClientTest, NoCredentialsGoToAServerWithoutTls) {
  PlainHttpServer server;
  testing::TempDir dir;
  std::ofstream(dir.Sub("token")) << "from-the-file\n";
  RestConfig config;
  config.server = server.url();
  config.bearer_token = "s3cret";
  for (const bool with_file : {false, true}) {
    if (with_file) config.bearer_token_file = dir.Sub("token");
    absl::StatusOr<Json> node = Connect(config)->GetNode("n");
    ASSERT_TRUE(node.ok()) << node.status();
    EXPECT_EQ((*node)["metadata"]["uid"], "u");
  }
  // Nor does an exec plugin run for one (this one cannot).
  config.bearer_token.clear();
  config.bearer_token_file.clear();
  config.exec = ExecCredentialConfig{.command = dir.Sub("no-such-plugin").string(),
                                     .args = {},
                                     .env = {},
                                     .api_version = "client.authentication.k8s.io/v1",
                                     .install_hint = {},
                                     .interactive_mode = "Never",
                                     .cluster_json = {}};
  absl::StatusOr<Json> without_plugin = Connect(config)->GetNode("n");
  EXPECT_TRUE(without_plugin.ok()) << without_plugin.status();
  const std::vector<std::string> heads = server.heads();
  ASSERT_EQ(heads.size(), 3u);
  for (const std::string& head : heads) {
    EXPECT_THAT(head, HasSubstr("GET /api/v1/nodes/n "));
    EXPECT_THAT(absl::AsciiStrToLower(head), Not(HasSubstr("authorization")));
  }
}

// A server named without a scheme is reached over https:// when TLS is configured and over
// plain http:// otherwise, as client-go completes it.
TEST(ClientTest, AServerWithoutASchemeGetsTlsOnlyWhenTlsIsConfigured) {
  FakeApiServer tls_server;
  RestConfig with_ca = tls_server.Config();
  ASSERT_TRUE(absl::StartsWith(with_ca.server, "https://"));
  with_ca.server.erase(0, std::string_view("https://").size());
  absl::StatusOr<SliceList> over_tls = Connect(with_ca)->ListResourceSlices({});
  EXPECT_TRUE(over_tls.ok()) << over_tls.status();

  PlainHttpServer plain_server;
  RestConfig plain;
  plain.server = plain_server.url().substr(std::string_view("http://").size());
  plain.bearer_token = "s3cret";
  absl::StatusOr<Json> node = Connect(plain)->GetNode("n");
  ASSERT_TRUE(node.ok()) << node.status();
  ASSERT_EQ(plain_server.heads().size(), 1u);
  EXPECT_THAT(absl::AsciiStrToLower(plain_server.heads()[0]), Not(HasSubstr("authorization")));

  // Without a CA but told not to verify, still https://; with no TLS setting at all, http://,
  // which the TLS server does not answer.
  RestConfig insecure = with_ca;
  insecure.certificate_authority_pem.clear();
  insecure.insecure_skip_tls_verify = true;
  absl::StatusOr<SliceList> unverified = Connect(insecure)->ListResourceSlices({});
  EXPECT_TRUE(unverified.ok()) << unverified.status();
  insecure.insecure_skip_tls_verify = false;
  ClientOptions once;
  once.max_retries = 0;
  EXPECT_FALSE(Connect(insecure, once)->ListResourceSlices({}).ok());
}

// A token file that cannot be read at a rotation (replaced by delete and create, briefly
// unreadable) keeps the token read last, and the file is read again at the next request.
TEST(ClientTest, ATokenFileThatCannotBeReadAgainKeepsTheLastToken) {
  FakeApiServerOptions with_token;
  with_token.token = "s3cret";
  FakeApiServer server(with_token);
  testing::TempDir dir;
  std::ofstream(dir.Sub("token")) << "s3cret\n";
  RestConfig config = server.Config();
  config.bearer_token.clear();
  config.bearer_token_file = dir.Sub("token");
  config.bearer_token_file_refresh = absl::ZeroDuration();  // read at every request
  std::unique_ptr<Client> client = Connect(config);
  ASSERT_TRUE(client->ListResourceSlices({}).ok());
  std::filesystem::remove(dir.Sub("token"));
  absl::StatusOr<SliceList> kept = client->ListResourceSlices({});
  EXPECT_TRUE(kept.ok()) << kept.status();
  std::ofstream(dir.Sub("token")) << "rotated\n";
  absl::StatusOr<SliceList> rotated = client->ListResourceSlices({});
  EXPECT_EQ(rotated.status().code(), absl::StatusCode::kUnauthenticated)
      << "the new token is sent (the server knows only the old one)";
}

TEST(ClientTest, AuthenticatesWithAClientCertificate) {
  FakeApiServerOptions with_certificates;
  with_certificates.require_client_certificate = true;
  FakeApiServer server(with_certificates);
  RestConfig config = server.Config();
  EXPECT_TRUE(Connect(config)->ListResourceSlices({}).ok());
  config.client_certificate_pem.clear();
  config.client_key_pem.clear();
  absl::StatusOr<SliceList> refused = Connect(config)->ListResourceSlices({});
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
}

// The client certificate and key named as files, as a kubeconfig names them, with their PEM
// read at load: `key_pem` in both the files and the configuration.
RestConfig WithCertificateFiles(const FakeApiServer& server, const testing::TempDir& dir,
                                const std::string& key_pem) {
  std::ofstream(dir.Sub("client.crt")) << server.pki().client_cert_pem;
  std::ofstream(dir.Sub("client.key")) << key_pem;
  RestConfig config = server.Config();
  config.client_key_pem = key_pem;
  config.client_certificate_file = dir.Sub("client.crt");
  config.client_key_file = dir.Sub("client.key");
  return config;
}

// A client certificate renewed on disk is presented from the next request after the refresh
// (here every request), without a new client; while the files cannot be read, the pair in
// hand is kept. The "renewal" here is a key that is not the certificate's, which no server
// accepts, and back.
TEST(ClientTest, AClientCertificateRenewedOnDiskIsPresented) {
  FakeApiServerOptions with_certificates;
  with_certificates.require_client_certificate = true;
  FakeApiServer server(with_certificates);
  testing::TempDir dir;
  RestConfig config = WithCertificateFiles(server, dir, server.pki().client_key_pem);
  config.client_certificate_refresh = absl::ZeroDuration();
  std::unique_ptr<Client> client = Connect(config);
  ASSERT_TRUE(client->ListResourceSlices({}).ok());

  std::ofstream(dir.Sub("client.key")) << server.pki().server_key_pem;
  EXPECT_FALSE(client->ListResourceSlices({}).ok()) << "the pair on disk is presented";
  std::ofstream(dir.Sub("client.key")) << server.pki().client_key_pem;
  absl::StatusOr<SliceList> renewed = client->ListResourceSlices({});
  EXPECT_TRUE(renewed.ok()) << renewed.status();

  std::filesystem::remove(dir.Sub("client.crt"));
  std::filesystem::remove(dir.Sub("client.key"));
  absl::StatusOr<SliceList> kept = client->ListResourceSlices({});
  EXPECT_TRUE(kept.ok()) << kept.status();
}

// A CA named as a file is read again (client-go's CA rotation): a cluster whose CA was replaced
// on disk is trusted without a restart, the connections made with the old CA closed; a file
// caught half written leaves the CA in hand.
TEST(ClientTest, ACaReplacedOnDiskIsTrusted) {
  FakeApiServer server;
  testing::TempDir dir;
  std::ofstream(dir.Sub("ca.crt")) << server.pki().other_ca_pem;
  RestConfig config = server.Config();
  config.certificate_authority_pem = server.pki().other_ca_pem;
  config.certificate_authority_file = dir.Sub("ca.crt");
  config.certificate_authority_refresh = absl::ZeroDuration();
  std::unique_ptr<Client> client = Connect(config);
  absl::StatusOr<SliceList> refused = client->ListResourceSlices({});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("TLS with the API server failed"));

  std::ofstream(dir.Sub("ca.crt"), std::ios::trunc) << server.pki().ca_pem;
  absl::StatusOr<SliceList> rotated = client->ListResourceSlices({});
  EXPECT_TRUE(rotated.ok()) << rotated.status();

  const std::string& ca = server.pki().other_ca_pem;
  std::ofstream(dir.Sub("ca.crt"), std::ios::trunc) << ca.substr(0, ca.size() / 2);
  absl::StatusOr<SliceList> kept = client->ListResourceSlices({});
  EXPECT_TRUE(kept.ok()) << kept.status();
  std::ofstream(dir.Sub("ca.crt"), std::ios::trunc)
      << "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n";
  kept = client->ListResourceSlices({});
  EXPECT_TRUE(kept.ok()) << kept.status() << ": a block that is not a certificate is no CA";
  std::filesystem::remove(dir.Sub("ca.crt"));
  kept = client->ListResourceSlices({});
  EXPECT_TRUE(kept.ok()) << kept.status();
}

// A pair that cannot be used (read between a rotation's replacement of the certificate and of
// the key) is read again at the next request, not after the five-minute refresh.
TEST(ClientTest, AClientCertificatePairThatCannotBeUsedIsReadAgainAtTheNextRequest) {
  FakeApiServerOptions with_certificates;
  with_certificates.require_client_certificate = true;
  FakeApiServer server(with_certificates);
  testing::TempDir dir;
  std::unique_ptr<Client> client =
      Connect(WithCertificateFiles(server, dir, server.pki().server_key_pem));
  absl::StatusOr<SliceList> refused = client->ListResourceSlices({});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("TLS with the API server failed"));

  std::ofstream(dir.Sub("client.key")) << server.pki().client_key_pem;
  absl::StatusOr<SliceList> read_again = client->ListResourceSlices({});
  EXPECT_TRUE(read_again.ok()) << read_again.status();
}

TEST(ClientTest, RetriesWhenTheServerSaysRetryAfterAndNotOtherwise) {
  FakeApiServer server;
  std::vector<absl::Duration> waits;
  std::unique_ptr<Client> client =
      Connect(server.Config(), Sleeping([&](absl::Duration wait) { waits.push_back(wait); }));
  server.FailNext(Failure("", 503, "ServiceUnavailable", 2, 2));
  EXPECT_TRUE(client->ListResourceSlices({}).ok());
  EXPECT_EQ(server.CountRequests("GET", "/apis/"), 3);
  EXPECT_THAT(waits, ElementsAre(absl::Seconds(2), absl::Seconds(2)));

  // A POST is tried again too when the server asks for it (429 from priority and fairness).
  waits.clear();
  server.FailNext(Failure("POST", 429, "TooManyRequests", 1, 1));
  EXPECT_TRUE(client->CreateResourceSlice(Slice("d.example.com", "n", {"x"})).ok());
  EXPECT_EQ(server.Slices().size(), 1u);
  EXPECT_THAT(waits, ElementsAre(absl::Seconds(1)));

  // Without Retry-After a 500 is the caller's to handle, at once.
  waits.clear();
  server.ClearRequests();
  server.FailNext(Failure("", 500, "InternalError", -1, 1));
  absl::StatusOr<SliceList> failed = client->ListResourceSlices({});
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal) << failed.status();
  EXPECT_EQ(server.Requests().size(), 1u);
  EXPECT_TRUE(waits.empty());

  // At most 10 retries, as client-go.
  server.ClearRequests();
  server.FailNext(Failure("", 503, "ServiceUnavailable", 0, 50));
  absl::StatusOr<SliceList> given_up = client->ListResourceSlices({});
  EXPECT_EQ(given_up.status().code(), absl::StatusCode::kUnavailable) << given_up.status();
  EXPECT_EQ(server.Requests().size(), 11u);
}

// A watch is tried again when the server asks for it before it streams (a 429 of priority and
// fairness), as client-go's watch goes through the same retries; without Retry-After its error
// is the caller's (the reflector's back-off).
TEST(ClientTest, AWatchIsTriedAgainWhenTheServerSaysRetryAfter) {
  FakeApiServer server;
  std::vector<absl::Duration> waits;
  std::unique_ptr<Client> client =
      Connect(server.Config(), Sleeping([&](absl::Duration wait) { waits.push_back(wait); }));
  ASSERT_NE(client, nullptr);
  const std::string before = server.resource_version();
  ASSERT_TRUE(client->CreateResourceSlice(Slice("gpu.example.com", "worker-1", {"g"})).ok());
  FakeFailure busy = Failure("GET", 429, "TooManyRequests", 2, 2);
  busy.target_prefix = "/apis/resource.k8s.io/v1/resourceslices?watch=true";
  server.FailNext(busy);
  int events = 0;
  const auto one_event = [&](const SliceEvent&) {
    ++events;
    return false;
  };
  absl::Status watched = client->WatchResourceSlices(From(before), one_event);
  EXPECT_TRUE(watched.ok()) << watched;
  EXPECT_EQ(events, 1);
  EXPECT_THAT(waits, ElementsAre(absl::Seconds(2), absl::Seconds(2)));

  waits.clear();
  FakeFailure broken = Failure("GET", 500, "InternalError", -1, 1);
  broken.target_prefix = busy.target_prefix;
  server.FailNext(broken);
  watched = client->WatchResourceSlices(From(before), one_event);
  EXPECT_EQ(watched.code(), absl::StatusCode::kInternal) << watched;
  EXPECT_TRUE(waits.empty());
}

// Requests are throttled as client-go's are: a token bucket of `qps` holding `burst`, each
// request taking a token and waiting for it when none is left; 0 takes client-go's defaults (5
// and 10), a negative qps none.
TEST(ClientTest, ThrottlesRequestsAsClientGoDoes) {
  FakeApiServer server;
  // Time stands still and the waits are not slept: each is the time of the tokens taken ahead,
  // however long the requests took.
  testing::FakeClock clock;
  const auto waits_of = [&](double qps, int burst, int requests) {
    std::vector<absl::Duration> waits;
    ClientOptions options = Sleeping([&](absl::Duration wait) { waits.push_back(wait); });
    options.qps = qps;
    options.burst = burst;
    options.clock = &clock;
    std::unique_ptr<Client> client = Connect(server.Config(), options);
    for (int i = 0; i < requests; ++i) EXPECT_TRUE(client->ListResourceSlices({}).ok());
    return waits;
  };
  EXPECT_THAT(waits_of(2, 3, 5), ElementsAre(absl::Milliseconds(500), absl::Seconds(1)));
  EXPECT_THAT(waits_of(0, 0, 12), ElementsAre(absl::Milliseconds(200), absl::Milliseconds(400)));
  EXPECT_TRUE(waits_of(-1, 0, 120).empty());

  // A request already cancelled takes no token, and one cancelled while it waits for a token
  // gives it back: the next request waits one token's time, not two or three.
  std::vector<absl::Duration> slow_waits;
  ClientOptions slow = Sleeping([&](absl::Duration wait) { slow_waits.push_back(wait); });
  slow.qps = 0.001;
  slow.burst = 1;
  slow.clock = &clock;
  std::unique_ptr<Client> client = Connect(server.Config(), slow);
  ASSERT_TRUE(client->ListResourceSlices({}).ok());
  server.ClearRequests();
  Cancellation before;
  before.Cancel();
  EXPECT_EQ(client->ListResourceSlices({}, &before).status().code(), absl::StatusCode::kCancelled);
  Cancellation during;
  std::future<absl::Status> waiting = std::async(
      std::launch::async, [&] { return client->ListResourceSlices({}, &during).status(); });
  // Cancelled however the test ends, before the future waits for the request.
  const absl::Cleanup cancel_at_end = [&during] { during.Cancel(); };
  ASSERT_TRUE(testing::WaitFor([&] { return during.waiting() == 1; }));
  during.Cancel();
  EXPECT_EQ(waiting.get().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(server.Requests().empty());
  EXPECT_TRUE(slow_waits.empty());
  EXPECT_TRUE(client->ListResourceSlices({}).ok());
  EXPECT_THAT(slow_waits, ElementsAre(absl::Seconds(1000)));
}

// A watch takes no token for its first try, as client-go's Watch; a try again after the
// server's Retry-After does.
TEST(ClientTest, AWatchWaitsForATokenOnlyToTryAgain) {
  FakeApiServer server;
  std::vector<absl::Duration> waits;
  testing::FakeClock clock;
  ClientOptions options = Sleeping([&](absl::Duration wait) { waits.push_back(wait); });
  options.qps = 0.001;
  options.burst = 1;
  options.clock = &clock;
  std::unique_ptr<Client> client = Connect(server.Config(), options);
  ASSERT_NE(client, nullptr);
  const std::string before = server.resource_version();
  ASSERT_TRUE(client->CreateResourceSlice(Slice("gpu.example.com", "worker-1", {"g"})).ok());
  const auto one_event = [](const SliceEvent&) { return false; };
  absl::Status watched = client->WatchResourceSlices(From(before), one_event);
  EXPECT_TRUE(watched.ok()) << watched;
  EXPECT_TRUE(waits.empty());

  FakeFailure busy = Failure("GET", 429, "TooManyRequests", 2, 1);
  busy.target_prefix = "/apis/resource.k8s.io/v1/resourceslices?watch=true";
  server.FailNext(busy);
  watched = client->WatchResourceSlices(From(before), one_event);
  EXPECT_TRUE(watched.ok()) << watched;
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_EQ(waits[0], absl::Seconds(2));
  EXPECT_EQ(waits[1], absl::Seconds(1000)) << "the retry's token";
}

// Every try, request and token is counted as client-go's rest client metrics count them: each
// try with its answer's code ("<error>" when it got none) and whether it retried, and but a
// watch's its body's size; each request but a watch once, with its answer's size; each token
// with its wait. The host is the server's host and port.
TEST(ClientTest, CountsItsRequestsAsClientGosMetricsDo) {
  FakeApiServer server;
  testing::RecordingClientMetrics metrics;
  // Time stands still: the retry's token, 2 s away, is waited for however long the try took.
  testing::FakeClock clock;
  ClientOptions options = Sleeping([](absl::Duration) {});
  options.clock = &clock;
  options.metrics = &metrics;
  options.qps = 0.5;
  options.burst = 1;
  std::unique_ptr<Client> client = Connect(server.Config(), options);
  ASSERT_NE(client, nullptr);
  const std::string host = std::string(absl::StripPrefix(server.url(), "https://"));
  server.FailNext(Failure("GET", 429, "TooManyRequests", 1, 1));
  ASSERT_TRUE(client->ListResourceSlices({}).ok());
  EXPECT_THAT(
      metrics.Lines(),
      ElementsAre(
          absl::StrCat("token GET ", host, " at hand"), absl::StrCat("sent GET ", host, " 0"),
          absl::StrCat("try GET ", host, " 429"), absl::StrCat("token GET ", host, " waited"),
          absl::StrCat("sent GET ", host, " 0"), absl::StrCat("try GET ", host, " 200 retry"),
          ::testing::MatchesRegex(absl::StrCat("read GET ", host, " [1-9][0-9]*")),
          absl::StrCat("request GET ", host)));

  // A watch: its tries alone, no token for its first.
  options.qps = -1;
  client = Connect(server.Config(), options);
  ASSERT_NE(client, nullptr);
  const std::string before = server.resource_version();
  ASSERT_TRUE(client->CreateResourceSlice(Slice("gpu.example.com", "worker-1", {"g"})).ok());
  EXPECT_THAT(metrics.Lines(),
              ElementsAre(::testing::MatchesRegex(absl::StrCat("sent POST ", host, " [1-9][0-9]*")),
                          absl::StrCat("try POST ", host, " 201"),
                          ::testing::MatchesRegex(absl::StrCat("read POST ", host, " [1-9][0-9]*")),
                          absl::StrCat("request POST ", host)));
  ASSERT_TRUE(
      client->WatchResourceSlices(From(before), [](const SliceEvent&) { return false; }).ok());
  EXPECT_THAT(metrics.Lines(), ElementsAre(absl::StrCat("try GET ", host, " 200")));

  // No answer: "<error>".
  auto stopped = std::make_unique<FakeApiServer>();
  const RestConfig gone = stopped->Config();
  const std::string gone_host = std::string(absl::StripPrefix(stopped->url(), "https://"));
  stopped.reset();
  client = Connect(gone, options);
  ASSERT_NE(client, nullptr);
  EXPECT_FALSE(client->ListResourceSlices({}).ok());
  EXPECT_THAT(metrics.Lines(), ElementsAre(absl::StrCat("sent GET ", gone_host, " 0"),
                                           absl::StrCat("try GET ", gone_host, " <error>"),
                                           absl::StrCat("request GET ", gone_host)));
}

// Waits for a token are logged as client-go's: over 50 ms at debug, over a second at info too
// but not again within 10 s; with the reason client-go gives, its own or the retry's.
TEST(ClientTest, LogsItsWaitsForATokenAsClientGoDoes) {
  FakeApiServer server;
  std::ostringstream log;
  const LoggerPtr logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_pattern("%l %v");
  logger->set_level(spdlog::level::info);
  // Time stands still: each wait is exactly the time of the tokens taken ahead.
  testing::FakeClock clock;
  ClientOptions options = Sleeping([](absl::Duration) {});
  options.clock = &clock;
  // 5 s a token: the second request waits 5 s, logged at info; the third's 10 s wait comes
  // within the interval of 10 s and is held back.
  options.qps = 0.2;
  options.burst = 1;
  options.logger = logger;
  std::unique_ptr<Client> client = Connect(server.Config(), options);
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client->ListResourceSlices({}).ok()) << i;
  const std::string url =
      absl::StrCat(server.Config().server, "/apis/resource.k8s.io/v1/resourceslices?limit=500");
  const std::vector<std::string> at_info = absl::StrSplit(log.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(at_info.size(), 1u) << log.str();
  EXPECT_THAT(at_info[0],
              HasSubstr(absl::StrCat("info \"Waited before sending request\" delay=\"5s\" "
                                     "reason=\"client-side throttling, not priority and fairness\" "
                                     "verb=\"GET\" URL=\"",
                                     url, "\"")));

  // At debug each wait over 50 ms; a retry's with its reason.
  log.str("");
  logger->set_level(spdlog::level::debug);
  // Under a second a token (952.380952 ms: Go's whole nanoseconds), so the retry's wait stays
  // under the info line's second.
  options.qps = 1.05;
  client = Connect(server.Config(), options);
  ASSERT_NE(client, nullptr);
  FakeFailure busy = Failure("GET", 429, "TooManyRequests", 3, 1);
  busy.flow_schema_uid = "4a2e0c83-7a4b-4f2b-9c55-0d6c1e1f9a10";
  server.FailNext(busy);
  ASSERT_TRUE(client->ListResourceSlices({}).ok());
  const std::vector<std::string> at_debug = absl::StrSplit(log.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(at_debug.size(), 1u) << log.str();
  EXPECT_THAT(at_debug[0],
              HasSubstr("debug \"Waited before sending request\" delay=\"952.380952ms\" "
                        "reason=\"retries: 1, retry-after: 3s - retry-reason: due to "
                        "server-side throttling, FlowSchema UID: \\\"4a2e0c83-7a4b-4f2b-9c55-"
                        "0d6c1e1f9a10\\\"\" verb=\"GET\""));
}

// A Retry-After longer than the request's own limit (30 s by default) is not waited out: the
// answer is the caller's at once, so a call never blocks past its timeout times the retries.
TEST(ClientTest, ARetryAfterLongerThanTheRequestTimeoutIsNotWaitedOut) {
  FakeApiServer server;
  std::vector<absl::Duration> waits;
  std::unique_ptr<Client> client =
      Connect(server.Config(), Sleeping([&](absl::Duration wait) { waits.push_back(wait); }));
  server.FailNext(Failure("", 503, "ServiceUnavailable", 31, 1));
  absl::StatusOr<SliceList> not_waited = client->ListResourceSlices({});
  EXPECT_EQ(not_waited.status().code(), absl::StatusCode::kUnavailable) << not_waited.status();
  EXPECT_EQ(server.Requests().size(), 1u);
  EXPECT_TRUE(waits.empty());
}

// A connection the server (or a proxy, or an idle timeout) closes without an answer and without
// TLS's close_notify: a GET is tried again after a second, as client-go's.
TEST(ClientTest, AGetWhoseConnectionClosedWithoutAnAnswerIsTriedAgain) {
  FakeApiServer server;
  std::vector<absl::Duration> waits;
  std::unique_ptr<Client> client =
      Connect(server.Config(), Sleeping([&](absl::Duration wait) { waits.push_back(wait); }));
  FakeFailure closed = Failure("GET", 0, "", -1, 1);
  closed.close_without_answer = true;
  server.FailNext(closed);
  absl::StatusOr<SliceList> listed = client->ListResourceSlices({});
  EXPECT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(server.CountRequests("GET", "/apis/"), 2);
  EXPECT_THAT(waits, ElementsAre(absl::Seconds(1)));
}

TEST(ClientTest, ReportsGarbageClearly) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  server.FailNext(Failure("", 200, "", -1, 1, true));
  absl::StatusOr<SliceList> not_json = client->ListResourceSlices({});
  EXPECT_EQ(not_json.status().code(), absl::StatusCode::kInvalidArgument) << not_json.status();
  EXPECT_THAT(not_json.status().message(), HasSubstr("not JSON"));

  server.FailNext(Failure("", 502, "", -1, 1, true));
  absl::StatusOr<SliceList> proxy = client->ListResourceSlices({});
  EXPECT_FALSE(proxy.ok());
  EXPECT_THAT(proxy.status().message(),
              HasSubstr("the server answered HTTP 502 with a body that is not a Status: <html>"));
}

// Answers of a shape no API server sends (a broken proxy, a hostile server): members of another
// type where the client reads a string, JSON nested a million levels deep. An error or an empty
// value, never an exception or a stack overflow.
TEST(ClientTest, AnswersOfTheWrongShapeAreNoCrash) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  for (const char* body : {R"({"kind":null})", R"({"kind":1,"message":2})",
                           R"({"kind":"Status","message":["x"],"reason":{}})"}) {
    SCOPED_TRACE(body);
    FakeFailure failure = Failure("", 500, "", -1, 1);
    failure.body = body;
    server.FailNext(failure);
    absl::StatusOr<SliceList> list = client->ListResourceSlices({});
    EXPECT_FALSE(list.ok());
    EXPECT_THAT(list.status().message(), HasSubstr("HTTP 500"));
  }
  // A million levels of brackets: refused before parsing (copying such a value recursed once
  // per level and overflowed the stack).
  FakeFailure deep = Failure("", 200, "", -1, 1);
  deep.body = absl::StrCat(R"({"items":[{"metadata":{"name":"a"},"spec":{"x":)",
                           std::string(1'000'000, '['), std::string(1'000'000, ']'), "}}]}");
  server.FailNext(deep);
  absl::StatusOr<SliceList> too_deep = client->ListResourceSlices({});
  EXPECT_EQ(too_deep.status().code(), absl::StatusCode::kInvalidArgument) << too_deep.status();
  EXPECT_THAT(too_deep.status().message(), HasSubstr("JSON nested deeper than 1000 levels"));

  // An answer that is not a list object is an error, not a list of nothing: a reflector would
  // have taken it as every slice deleted.
  for (const char* shape : {"[]", "\"x\"", "1", R"({"metadata": [], "items": []})"}) {
    FakeFailure not_a_list = Failure("", 200, "", -1, 1);
    not_a_list.body = shape;
    server.FailNext(not_a_list);
    absl::StatusOr<SliceList> refused = client->ListResourceSlices({});
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument)
        << shape << ": " << refused.status();
  }

  // A watch's ERROR event whose code is past an int32 is no code (500), not the code it wraps
  // to: 4294967706 read as an int was 410, which has the reflector list again at once.
  FakeFailure wrapped = Failure("GET", 200, "", -1, 1);
  wrapped.target_prefix = "/apis/resource.k8s.io/v1/resourceslices?watch=true";
  wrapped.body = R"({"type":"ERROR","object":{"kind":"Status","code":4294967706,)"
                 R"("reason":"Expired","message":"m"}})"
                 "\n";
  server.FailNext(wrapped);
  const absl::Status watched =
      client->WatchResourceSlices(From("1"), [](const SliceEvent&) { return true; });
  EXPECT_EQ(watched.code(), absl::StatusCode::kInternal) << watched;

  FakeFailure numeric_version = Failure("", 200, "", -1, 1);
  numeric_version.body = R"({"metadata":{"resourceVersion":5},"items":[]})";
  server.FailNext(numeric_version);
  absl::StatusOr<SliceList> list = client->ListResourceSlices({});
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->resource_version, "");
}

TEST(ClientTest, AHungServerEndsInTheDeadline) {
  FakeApiServer server;
  ClientOptions options;
  options.timeout = absl::Milliseconds(300);
  std::unique_ptr<Client> client = Connect(server.Config(), options);
  server.SetHang(true);
  const absl::Time start = absl::Now();
  absl::StatusOr<SliceList> list = client->ListResourceSlices({});
  EXPECT_EQ(list.status().code(), absl::StatusCode::kDeadlineExceeded) << list.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  server.SetHang(false);
}

TEST(ClientTest, WatchesEventsInOrderWithBookmarksAndResumes) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  absl::StatusOr<SliceList> list = client->ListResourceSlices({});
  ASSERT_TRUE(list.ok());

  std::vector<std::pair<WatchEventType, std::string>> events;
  std::string last_version;
  Cancellation cancel;
  std::atomic<bool> watching{true};
  absl::Status watched;
  std::thread watcher([&] {
    watched = client->WatchResourceSlices(
        From(list->resource_version),
        [&](const SliceEvent& event) {
          events.emplace_back(event.type, event.slice.metadata.name);
          last_version = event.resource_version;
          return event.type != WatchEventType::kBookmark;
        },
        &cancel);
    watching = false;
  });
  ASSERT_TRUE(testing::WaitFor([&] { return server.open_watches() == 1; }));
  absl::StatusOr<kubeapi::ResourceSlice> created =
      client->CreateResourceSlice(Slice("gpu.example.com", "worker-1", {"gpu-0"}));
  ASSERT_TRUE(created.ok());
  kubeapi::ResourceSlice changed = *created;
  changed.spec.pool.generation = 2;
  ASSERT_TRUE(client->UpdateResourceSlice(changed).ok());
  ASSERT_TRUE(client->DeleteResourceSlice(created->metadata.name, {}).ok());
  server.Bookmark();
  watcher.join();
  EXPECT_TRUE(watched.ok()) << watched;
  const std::string name = created->metadata.name;
  EXPECT_THAT(events, ElementsAre(std::pair{WatchEventType::kAdded, name},
                                  std::pair{WatchEventType::kModified, name},
                                  std::pair{WatchEventType::kDeleted, name},
                                  std::pair{WatchEventType::kBookmark, std::string()}));
  EXPECT_EQ(last_version, server.resource_version());

  // Resuming from the bookmark misses nothing and repeats nothing.
  events.clear();
  ASSERT_TRUE(client->CreateResourceSlice(Slice("nic.example.com", "worker-1", {"eth0"})).ok());
  absl::Status resumed =
      client->WatchResourceSlices(From(last_version), [&](const SliceEvent& event) {
        events.emplace_back(event.type, event.slice.spec.driver);
        return false;
      });
  EXPECT_TRUE(resumed.ok()) << resumed;
  EXPECT_THAT(events, ElementsAre(std::pair{WatchEventType::kAdded, "nic.example.com"}));
}

TEST(ClientTest, AWatchFromACompactedVersionIsOutOfRange) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  ASSERT_TRUE(client->CreateResourceSlice(Slice("gpu.example.com", "w", {"g"})).ok());
  const std::string old_version = server.resource_version();
  ASSERT_TRUE(client->CreateResourceSlice(Slice("gpu.example.com", "w2", {"g"})).ok());
  server.Compact();
  int events = 0;
  absl::Status watched = client->WatchResourceSlices(
      From(std::to_string(std::stoll(old_version) - 1)), [&](const SliceEvent&) {
        ++events;
        return true;
      });
  EXPECT_EQ(watched.code(), absl::StatusCode::kOutOfRange) << watched;
  EXPECT_THAT(watched.message(), HasSubstr("too old resource version"));
  EXPECT_EQ(ApiErrorOf(watched)->http_code, 410);
  EXPECT_EQ(events, 0);
}

// A watch event is read up to 16 MiB, as client-go's streaming decoder does: a server (or
// anything between) that sends a line without end cannot make the client hold all of it.
TEST(ClientTest, AWatchEventLongerThanTheLimitEndsTheWatch) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  ASSERT_TRUE(client->CreateResourceSlice(Slice("gpu.example.com", "a", {"g"})).ok());
  server.AddSlice(
      {{"metadata",
        {{"name", "b"}, {"annotations", {{"big", std::string(kMaxWatchEventBytes, 'x')}}}}},
       {"spec",
        {{"driver", "gpu.example.com"},
         {"nodeName", "b"},
         {"pool", {{"name", "b"}, {"generation", 1}, {"resourceSliceCount", 1}}}}}});
  std::vector<std::string> nodes;
  ListOptions options = From("0");
  options.watch_timeout = absl::Seconds(5);  // the server ends it, should the client not
  absl::Status watched = client->WatchResourceSlices(options, [&](const SliceEvent& event) {
    nodes.push_back(event.slice.spec.node_name.value_or(""));
    return true;
  });
  EXPECT_EQ(watched.code(), absl::StatusCode::kInvalidArgument) << watched.code();
  EXPECT_EQ(watched.message(), "a watch event longer than 16777216 bytes");
  EXPECT_THAT(nodes, ElementsAre("a")) << "the events before it were delivered";
}

// A watch that stays open past its timeoutSeconds with nothing on it (a stalled connection, a
// proxy that holds it) is ended by the client a tenth (and a second) later, where client-go
// would find the stall with HTTP/2 pings: an OK end, resumable from the last event, which the
// events before it reached.
TEST(ClientTest, AWatchOpenPastItsTimeoutEndsAtTheClientsDeadline) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  const std::string before = server.resource_version();
  ASSERT_TRUE(client->CreateResourceSlice(Slice("gpu.example.com", "w", {"g"})).ok());
  server.KeepWatchesPastTheirTimeout(true);
  ListOptions options = From(before);
  options.watch_timeout = absl::Seconds(1);
  std::vector<std::string> drivers;
  Cancellation cancel;
  std::atomic<bool> ended{false};
  absl::Status watched;
  std::thread watcher([&] {
    watched = client->WatchResourceSlices(
        options,
        [&](const SliceEvent& event) {
          drivers.push_back(event.slice.spec.driver);
          return true;
        },
        &cancel);
    ended = true;
  });
  const bool ended_in_time =
      testing::WaitFor([&] { return ended.load(); }, std::chrono::seconds(20));
  cancel.Cancel();
  watcher.join();
  ASSERT_TRUE(ended_in_time) << "the watch outlived its timeout";
  EXPECT_TRUE(watched.ok()) << watched;
  EXPECT_THAT(drivers, ElementsAre("gpu.example.com"));
}

// A stream that ends whole with its last event unterminated (a server that joins events with
// newlines) delivers that event too, as client-go's decoder reads it. Before, it was dropped.
TEST(ClientTest, AWatchsLastEventWithoutANewlineIsDelivered) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  const std::string before = server.resource_version();
  ASSERT_TRUE(client->CreateResourceSlice(Slice("gpu.example.com", "w", {"g"})).ok());
  ASSERT_TRUE(client->CreateResourceSlice(Slice("nic.example.com", "w", {"n"})).ok());
  server.JoinWatchEvents(true);
  ListOptions options = From(before);
  options.watch_timeout = absl::Seconds(1);
  std::vector<std::string> drivers;
  const absl::Status watched = client->WatchResourceSlices(options, [&](const SliceEvent& event) {
    drivers.push_back(event.slice.spec.driver);
    return true;
  });
  EXPECT_TRUE(watched.ok()) << watched;
  EXPECT_THAT(drivers, ElementsAre("gpu.example.com", "nic.example.com"));
}

TEST(ClientTest, AWatchCutMidEventDeliversOnlyWholeEvents) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  std::vector<std::string> names;
  absl::Status watched;
  std::thread watcher([&] {
    watched =
        client->WatchResourceSlices(From(server.resource_version()), [&](const SliceEvent& event) {
          names.push_back(event.slice.spec.driver);
          return true;
        });
  });
  ASSERT_TRUE(testing::WaitFor([&] { return server.open_watches() == 1; }));
  ASSERT_TRUE(client->CreateResourceSlice(Slice("gpu.example.com", "w", {"g"})).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return server.CountRequests("POST", "/") == 1; }));
  server.CutWatches();
  watcher.join();
  EXPECT_FALSE(watched.ok());
  EXPECT_EQ(watched.code(), absl::StatusCode::kUnavailable) << watched;
  EXPECT_TRUE(IsConnectionLost(watched)) << watched;
  // The event before the cut arrived once; the half one never.
  EXPECT_THAT(names, ElementsAre("gpu.example.com"));
}

// Neither the server nor the client would end the watch; Cancel does, at once (10 s allows for
// a loaded machine).
TEST(ClientTest, CancelEndsAQuietWatchAtOnce) {
  FakeApiServer server;
  std::unique_ptr<Client> client = Connect(server.Config());
  Cancellation cancel;
  absl::Status watched;
  std::thread watcher([&] {
    watched = client->WatchResourceSlices(
        From(server.resource_version()), [](const SliceEvent&) { return true; }, &cancel);
  });
  ASSERT_TRUE(testing::WaitFor([&] { return server.open_watches() == 1; }));
  const absl::Time start = absl::Now();
  cancel.Cancel();
  watcher.join();
  EXPECT_EQ(watched.code(), absl::StatusCode::kCancelled) << watched;
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  // A cancelled Cancellation ends every later request before it starts.
  EXPECT_EQ(client
                ->WatchResourceSlices(
                    {}, [](const SliceEvent&) { return true; }, &cancel)
                .code(),
            absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace devmgr::kubeclient
