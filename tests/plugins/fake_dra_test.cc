// The fake DRA driver of `devmgr plugin fake-dra`, in process, called as a kubelet calls a
// driver: GetInfo on its registrar socket, then its DRAPlugin service through dra::DriverRegistry
// (which picks v1 or v1beta1 from the registration). Claims come from a lookup the test fills,
// or from a stand-in for the daemon's admin API (AdminClaimLookup).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/file_store.h"
#include "common/unix_socket.h"
#include "devmgr/admin/v1/api.grpc.pb.h"
#include "dra/driver_registry.h"
#include "dra/health_stream.h"
#include "dra/v1/api.grpc.pb.h"
#include "kubeletplugin/admin_claim_lookup.h"
#include "nlohmann/json.hpp"
#include "pluginregistration/v1/api.grpc.pb.h"
#include "plugins/fakedra/fake_driver.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::plugins {
namespace {

namespace v1 = dra::draapi::v1;
namespace admin = devmgr::admin::v1;
using ::devmgr::kubeletplugin::AdminClaimLookup;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

constexpr char kDriver[] = "gpu.example.com";
constexpr char kPool[] = "node-a";
constexpr char kNamespace[] = "default";

dra::DeviceRequestAllocationResult Result(const std::string& request, const std::string& device,
                                          std::optional<std::string> share_id = std::nullopt,
                                          const std::string& driver = kDriver,
                                          const std::string& pool = kPool) {
  return {.request = request,
          .driver = driver,
          .pool = pool,
          .device = device,
          .share_id = std::move(share_id)};
}

dra::ResourceClaim Claim(const std::string& name, const std::string& uid,
                         std::optional<std::vector<dra::DeviceRequestAllocationResult>> results) {
  dra::ResourceClaim claim;
  claim.namespace_name = kNamespace;
  claim.name = name;
  claim.uid = uid;
  claim.allocation = std::move(results);
  return claim;
}

template <typename Request>
void AddClaim(Request& request, const std::string& name, const std::string& uid) {
  auto* claim = request.add_claims();
  claim->set_namespace_(kNamespace);
  claim->set_name(name);
  claim->set_uid(uid);
}

// The claims the driver's lookup finds, by "namespace/name", as an API server would hold them.
class ClaimBook {
 public:
  void Put(dra::ResourceClaim claim) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    const std::string key = claim.namespace_name + "/" + claim.name;
    claims_[key] = std::move(claim);
  }

  int lookups() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return lookups_;
  }

  // The book must outlive the driver that uses the lookup.
  ClaimLookup Lookup() {
    return [this](const std::string& ns, const std::string& name) { return Find(ns, name); };
  }

 private:
  absl::StatusOr<dra::ResourceClaim> Find(const std::string& ns, const std::string& name)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++lookups_;
    auto it = claims_.find(ns + "/" + name);
    if (it == claims_.end()) {
      return absl::NotFoundError("resourceclaims \"" + name + "\" not found");
    }
    return it->second;
  }

  mutable absl::Mutex mu_;
  std::map<std::string, dra::ResourceClaim> claims_ ABSL_GUARDED_BY(mu_);
  int lookups_ ABSL_GUARDED_BY(mu_) = 0;
};

dra::DriverRegistryOptions TenSecondCalls() {
  dra::DriverRegistryOptions options;
  options.call_timeout = absl::Seconds(10);
  return options;
}

class FakeDraDriverTest : public ::testing::Test {
 protected:
  // WatchHealthAndFlip: see ReportsDeviceHealthAndFlipsIt.
  void WatchHealthAndFlip(const std::string& service);

  // A node's health stream to the started driver (v1), retrying quickly; on_response unset.
  dra::HealthStreamOptions HealthStreamOptions() const {
    dra::HealthStreamOptions options;
    options.driver_name = kDriver;
    options.endpoint = driver_->service_socket().string();
    options.service = dra::kDraResourceHealthServiceV1;
    options.retry_period = absl::Milliseconds(20);
    return options;
  }

  FakeDraOptions Options() {
    FakeDraOptions options;
    options.driver_name = kDriver;
    options.root_dir = dir_.path();
    options.pool = kPool;
    options.devices = 4;
    options.claim_lookup = book_.Lookup();
    return options;
  }

  void StartDriver(FakeDraOptions options) {
    absl::StatusOr<std::unique_ptr<FakeDraDriver>> started =
        FakeDraDriver::Start(std::move(options));
    ASSERT_TRUE(started.ok()) << started.status();
    driver_ = *std::move(started);
  }

  // GetInfo on the registrar socket, as the plugin watcher asks it.
  pluginregistration::PluginInfo GetInfo() {
    auto stub = pluginregistration::Registration::NewStub(grpc::CreateChannel(
        UnixTarget(driver_->registrar_socket()), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pluginregistration::PluginInfo info;
    grpc::Status status = stub->GetInfo(&context, pluginregistration::InfoRequest(), &info);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return info;
  }

  // Register registers the driver with a kubelet-side registry from what GetInfo says, and
  // returns the client calls go through; null (with a test failure) if that did not work.
  std::shared_ptr<const dra::DriverClient> Register() {
    pluginregistration::PluginInfo info = GetInfo();
    std::vector<std::string> versions(info.supported_versions().begin(),
                                      info.supported_versions().end());
    absl::Status registered = registry_.RegisterPlugin(info.name(), info.endpoint(), versions);
    EXPECT_TRUE(registered.ok()) << registered;
    absl::StatusOr<std::shared_ptr<const dra::DriverClient>> client = registry_.Get(kDriver);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *client : nullptr;
  }

  TempDir dir_;
  ClaimBook book_;
  dra::DriverRegistry registry_{TenSecondCalls()};
  // Last: stopped before the book its lookup reads.
  std::unique_ptr<FakeDraDriver> driver_;
};

TEST_F(FakeDraDriverTest, RegistersAsTheKubeletExpects) {
  ASSERT_NO_FATAL_FAILURE(StartDriver(Options()));
  EXPECT_EQ(driver_->service_socket(), dir_.path() / "plugins" / kDriver / "dra.sock");
  EXPECT_EQ(driver_->registrar_socket(),
            dir_.path() / "plugins_registry" / "gpu.example.com-reg.sock");
  EXPECT_TRUE(IsSocket(driver_->service_socket()));
  EXPECT_TRUE(IsSocket(driver_->registrar_socket()));

  pluginregistration::PluginInfo info = GetInfo();
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), kDriver);
  EXPECT_EQ(info.endpoint(), driver_->service_socket().string());
  EXPECT_EQ(
      std::vector<std::string>(info.supported_versions().begin(), info.supported_versions().end()),
      (std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
                                "v1alpha1.DRAResourceHealth"}));

  std::shared_ptr<const dra::DriverClient> client = Register();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->service(), "v1.DRAPlugin");
  EXPECT_TRUE(WaitFor([&] { return client->Connected(); }));

  // The kubelet's verdict reaches the driver.
  auto stub = pluginregistration::Registration::NewStub(grpc::CreateChannel(
      UnixTarget(driver_->registrar_socket()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(true);
  pluginregistration::RegistrationStatusResponse response;
  ASSERT_TRUE(stub->NotifyRegistrationStatus(&context, status, &response).ok());
  FakeDraRegistration registration = driver_->registration();
  EXPECT_EQ(registration.notifications, 1);
  EXPECT_TRUE(registration.registered);
  EXPECT_EQ(registration.error, "");
}

TEST_F(FakeDraDriverTest, PreparesClaimsWithTheirDevicesAndUnpreparesThem) {
  book_.Put(Claim("a", "uid-a",
                  std::vector{Result("gpu", "dev-0"), Result("gpu/large", "dev-1"),
                              Result("nic", "eth0", std::nullopt, "net.example.com", "pool-x")}));
  book_.Put(Claim("b", "uid-b", std::vector{Result("shared", "dev-3", "share-1")}));
  ASSERT_NO_FATAL_FAILURE(StartDriver(Options()));
  std::shared_ptr<const dra::DriverClient> client = Register();
  ASSERT_NE(client, nullptr);

  v1::NodePrepareResourcesRequest request;
  AddClaim(request, "a", "uid-a");
  AddClaim(request, "b", "uid-b");
  absl::StatusOr<v1::NodePrepareResourcesResponse> prepared = client->NodePrepareResources(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ(prepared->claims().size(), 2u);

  const v1::NodePrepareResourceResponse& a = prepared->claims().at("uid-a");
  EXPECT_EQ(a.error(), "");
  // The other driver's result is not this driver's business.
  ASSERT_EQ(a.devices_size(), 2);
  EXPECT_EQ(std::vector<std::string>(a.devices(0).request_names().begin(),
                                     a.devices(0).request_names().end()),
            std::vector<std::string>{"gpu"});
  EXPECT_EQ(a.devices(0).pool_name(), kPool);
  EXPECT_EQ(a.devices(0).device_name(), "dev-0");
  EXPECT_EQ(std::vector<std::string>(a.devices(0).cdi_device_ids().begin(),
                                     a.devices(0).cdi_device_ids().end()),
            std::vector<std::string>{"gpu.example.com/device=dev-0"});
  EXPECT_FALSE(a.devices(0).has_share_id());
  // A subrequest's result counts for its request.
  EXPECT_EQ(std::vector<std::string>(a.devices(1).request_names().begin(),
                                     a.devices(1).request_names().end()),
            std::vector<std::string>{"gpu"});
  EXPECT_EQ(a.devices(1).device_name(), "dev-1");
  EXPECT_EQ(a.devices(1).cdi_device_ids(0), driver_->CdiDeviceId("dev-1"));

  const v1::NodePrepareResourceResponse& b = prepared->claims().at("uid-b");
  EXPECT_EQ(b.error(), "");
  ASSERT_EQ(b.devices_size(), 1);
  EXPECT_EQ(b.devices(0).device_name(), "dev-3");
  ASSERT_TRUE(b.devices(0).has_share_id());
  EXPECT_EQ(b.devices(0).share_id(), "share-1");

  EXPECT_EQ(driver_->prepare_calls(), 1);
  EXPECT_EQ(driver_->PreparedClaims(), (std::vector<std::string>{"uid-a", "uid-b"}));

  // Preparing again answers the same: the kubelet does that after a restart.
  absl::StatusOr<v1::NodePrepareResourcesResponse> again = client->NodePrepareResources(request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->claims().at("uid-a").SerializeAsString(), a.SerializeAsString());

  // A claim that was never prepared is no error either.
  v1::NodeUnprepareResourcesRequest unprepare;
  AddClaim(unprepare, "a", "uid-a");
  AddClaim(unprepare, "b", "uid-b");
  AddClaim(unprepare, "c", "uid-c");
  absl::StatusOr<v1::NodeUnprepareResourcesResponse> unprepared =
      client->NodeUnprepareResources(unprepare);
  ASSERT_TRUE(unprepared.ok()) << unprepared.status();
  ASSERT_EQ(unprepared->claims().size(), 3u);
  for (const auto& [uid, answer] : unprepared->claims()) {
    EXPECT_EQ(answer.error(), "") << uid;
  }
  EXPECT_TRUE(driver_->PreparedClaims().empty());
  EXPECT_EQ(driver_->unprepare_calls(), 1);
}

// As upstream's helper: a claim that cannot be read, is not allocated or was replaced fails the
// whole call (the helper reads the claims before the driver sees them), with the helper's texts;
// a device that is not the driver's fails only its claim.
TEST_F(FakeDraDriverTest, ClaimsTheHelperCannotUseFailTheCallDevicesFailTheirClaim) {
  book_.Put(Claim("good", "uid-good", std::vector{Result("gpu", "dev-0")}));
  book_.Put(Claim("replaced", "uid-new", std::vector{Result("gpu", "dev-1")}));
  book_.Put(Claim("pending", "uid-pending", std::nullopt));
  book_.Put(Claim("too-far", "uid-far", std::vector{Result("gpu", "dev-4")}));
  book_.Put(Claim("other-pool", "uid-pool",
                  std::vector{Result("gpu", "dev-0", std::nullopt, kDriver, "node-b")}));
  ASSERT_NO_FATAL_FAILURE(StartDriver(Options()));
  std::shared_ptr<const dra::DriverClient> client = Register();
  ASSERT_NE(client, nullptr);

  for (const auto& [name, uid, error] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"missing", "uid-missing",
            "get resource claims: retrieve claim default/missing: resourceclaims \"missing\" not "
            "found"},
           {"replaced", "uid-old", "get resource claims: claim default/replaced got replaced"},
           {"pending", "uid-pending",
            "get resource claims: claim default/pending not allocated"}}) {
    v1::NodePrepareResourcesRequest request;
    AddClaim(request, "good", "uid-good");
    AddClaim(request, name, uid);
    absl::StatusOr<v1::NodePrepareResourcesResponse> prepared =
        client->NodePrepareResources(request);
    EXPECT_EQ(prepared.status().code(), absl::StatusCode::kUnknown) << name;
    // The helper's text, as the kubelet's grpc-go client prints the error it came in.
    EXPECT_EQ(prepared.status().message(),
              absl::StrCat("rpc error: code = Unknown desc = ", error));
  }
  EXPECT_EQ(driver_->prepare_calls(), 0) << "the driver never saw those calls";
  EXPECT_TRUE(driver_->PreparedClaims().empty());

  v1::NodePrepareResourcesRequest request;
  AddClaim(request, "good", "uid-good");
  AddClaim(request, "too-far", "uid-far");
  AddClaim(request, "other-pool", "uid-pool");
  absl::StatusOr<v1::NodePrepareResourcesResponse> prepared = client->NodePrepareResources(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ(prepared->claims().size(), 3u);
  EXPECT_EQ(prepared->claims().at("uid-good").error(), "");
  EXPECT_EQ(prepared->claims().at("uid-good").devices_size(), 1);
  EXPECT_EQ(prepared->claims().at("uid-far").error(),
            "claim default/too-far: device node-a/dev-4 is not one of DRA driver "
            "gpu.example.com's devices");
  EXPECT_EQ(prepared->claims().at("uid-pool").error(),
            "claim default/other-pool: device node-b/dev-0 is not one of DRA driver "
            "gpu.example.com's devices");
  EXPECT_EQ(prepared->claims().at("uid-far").devices_size(), 0);
  EXPECT_EQ(driver_->PreparedClaims(), std::vector<std::string>{"uid-good"});
}

TEST_F(FakeDraDriverTest, ServesV1beta1Alone) {
  book_.Put(Claim("a", "uid-a", std::vector{Result("gpu", "dev-2")}));
  FakeDraOptions options = Options();
  options.serve_v1 = false;
  options.serve_health = false;
  ASSERT_NO_FATAL_FAILURE(StartDriver(std::move(options)));
  pluginregistration::PluginInfo info = GetInfo();
  ASSERT_EQ(info.supported_versions_size(), 1);
  EXPECT_EQ(info.supported_versions(0), "v1beta1.DRAPlugin");

  std::shared_ptr<const dra::DriverClient> client = Register();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->service(), "v1beta1.DRAPlugin");
  v1::NodePrepareResourcesRequest request;
  AddClaim(request, "a", "uid-a");
  absl::StatusOr<v1::NodePrepareResourcesResponse> prepared = client->NodePrepareResources(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ(prepared->claims().at("uid-a").devices_size(), 1);
  EXPECT_EQ(prepared->claims().at("uid-a").devices(0).device_name(), "dev-2");

  // v1 is not there.
  auto v1_stub = v1::DRAPlugin::NewStub(grpc::CreateChannel(UnixTarget(driver_->service_socket()),
                                                            grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::NodePrepareResourcesResponse response;
  EXPECT_EQ(v1_stub->NodePrepareResources(&context, request, &response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(FakeDraDriverTest, InjectedErrorFailsEveryClaim) {
  book_.Put(Claim("a", "uid-a", std::vector{Result("gpu", "dev-0")}));
  FakeDraOptions options = Options();
  options.prepare_error = "injected failure";
  ASSERT_NO_FATAL_FAILURE(StartDriver(std::move(options)));
  std::shared_ptr<const dra::DriverClient> client = Register();
  ASSERT_NE(client, nullptr);

  book_.Put(Claim("b", "uid-b", std::vector{Result("gpu", "dev-1")}));
  v1::NodePrepareResourcesRequest request;
  AddClaim(request, "a", "uid-a");
  AddClaim(request, "b", "uid-b");
  absl::StatusOr<v1::NodePrepareResourcesResponse> prepared = client->NodePrepareResources(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ(prepared->claims().size(), 2u);
  for (const auto& [uid, answer] : prepared->claims()) {
    EXPECT_EQ(answer.error(), "injected failure") << uid;
    EXPECT_EQ(answer.devices_size(), 0) << uid;
  }
  EXPECT_TRUE(driver_->PreparedClaims().empty());
}

TEST_F(FakeDraDriverTest, InjectedUnprepareErrorFailsEveryClaimAndKeepsItPrepared) {
  book_.Put(Claim("a", "uid-a", std::vector{Result("gpu", "dev-0")}));
  FakeDraOptions options = Options();
  options.unprepare_error = "injected failure";
  ASSERT_NO_FATAL_FAILURE(StartDriver(std::move(options)));
  std::shared_ptr<const dra::DriverClient> client = Register();
  ASSERT_NE(client, nullptr);

  v1::NodePrepareResourcesRequest request;
  AddClaim(request, "a", "uid-a");
  absl::StatusOr<v1::NodePrepareResourcesResponse> prepared = client->NodePrepareResources(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->claims().at("uid-a").error(), "");

  v1::NodeUnprepareResourcesRequest unprepare;
  AddClaim(unprepare, "a", "uid-a");
  AddClaim(unprepare, "c", "uid-c");
  absl::StatusOr<v1::NodeUnprepareResourcesResponse> unprepared =
      client->NodeUnprepareResources(unprepare);
  ASSERT_TRUE(unprepared.ok()) << unprepared.status();
  ASSERT_EQ(unprepared->claims().size(), 2u);
  for (const auto& [uid, answer] : unprepared->claims()) {
    EXPECT_EQ(answer.error(), "injected failure") << uid;
  }
  EXPECT_EQ(driver_->PreparedClaims(), (std::vector<std::string>{"uid-a"}));
}

TEST_F(FakeDraDriverTest, LatencyDelaysPrepare) {
  book_.Put(Claim("a", "uid-a", std::vector{Result("gpu", "dev-0")}));
  FakeDraOptions options = Options();
  options.prepare_latency = absl::Milliseconds(300);
  ASSERT_NO_FATAL_FAILURE(StartDriver(std::move(options)));
  std::shared_ptr<const dra::DriverClient> client = Register();
  ASSERT_NE(client, nullptr);

  v1::NodePrepareResourcesRequest request;
  AddClaim(request, "a", "uid-a");
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::NodePrepareResourcesResponse> prepared = client->NodePrepareResources(request);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300));
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->claims().at("uid-a").devices_size(), 1);
}

// A hung prepare answers, normally, once released.
TEST_F(FakeDraDriverTest, HungPrepareAnswersOnRelease) {
  book_.Put(Claim("a", "uid-a", std::vector{Result("gpu", "dev-0")}));
  FakeDraOptions options = Options();
  options.prepare_hang = true;
  ASSERT_NO_FATAL_FAILURE(StartDriver(std::move(options)));
  std::shared_ptr<const dra::DriverClient> client = Register();
  ASSERT_NE(client, nullptr);

  v1::NodePrepareResourcesRequest request;
  AddClaim(request, "a", "uid-a");
  std::atomic<bool> answered{false};
  absl::StatusOr<v1::NodePrepareResourcesResponse> prepared;
  std::thread caller([&] {
    prepared = client->NodePrepareResources(request);
    answered = true;
  });
  EXPECT_TRUE(WaitFor([&] { return driver_->prepare_calls() == 1; }));
  EXPECT_FALSE(answered.load());
  EXPECT_EQ(book_.lookups(), 1) << "the helper reads the claims before the driver hangs";
  driver_->Release();
  EXPECT_TRUE(WaitFor([&] { return answered.load(); }));
  caller.join();
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  EXPECT_EQ(prepared->claims().at("uid-a").devices_size(), 1);
}

// Stop does not wait for a release that never comes: it ends the hang itself, and the
// sockets are gone afterwards.
TEST_F(FakeDraDriverTest, StopEndsAHungPrepare) {
  book_.Put(Claim("a", "uid-a", std::vector{Result("gpu", "dev-0")}));
  FakeDraOptions options = Options();
  options.prepare_hang = true;
  ASSERT_NO_FATAL_FAILURE(StartDriver(std::move(options)));
  std::shared_ptr<const dra::DriverClient> client = Register();
  ASSERT_NE(client, nullptr);

  v1::NodePrepareResourcesRequest request;
  AddClaim(request, "a", "uid-a");
  std::atomic<bool> answered{false};
  std::thread caller([&] {
    (void)client->NodePrepareResources(request);  // answered or cancelled: either is fine
    answered = true;
  });
  EXPECT_TRUE(WaitFor([&] { return driver_->prepare_calls() == 1; }));
  EXPECT_FALSE(answered.load());
  driver_->Stop();
  EXPECT_TRUE(WaitFor([&] { return answered.load(); }));
  caller.join();
  EXPECT_FALSE(std::filesystem::exists(driver_->service_socket()));
  EXPECT_FALSE(std::filesystem::exists(driver_->registrar_socket()));
}

TEST_F(FakeDraDriverTest, WritesTheCdiSpecAndRemovesItAtStop) {
  FakeDraOptions options = Options();
  options.cdi_dir = dir_.Sub("cdi");
  ASSERT_NO_FATAL_FAILURE(StartDriver(std::move(options)));
  EXPECT_EQ(driver_->CdiSpecPath(), dir_.Sub("cdi") / "gpu.example.com-device.json");
  absl::StatusOr<std::string> text = ReadWholeFile(driver_->CdiSpecPath());
  ASSERT_TRUE(text.ok()) << text.status();
  nlohmann::json spec = nlohmann::json::parse(*text, nullptr, false);
  ASSERT_FALSE(spec.is_discarded()) << *text;
  EXPECT_EQ(spec["cdiVersion"], "0.5.0");
  // The kind of the CDI device IDs prepare answers.
  EXPECT_EQ(spec["kind"], "gpu.example.com/device");
  EXPECT_EQ(driver_->CdiDeviceId("dev-0"), "gpu.example.com/device=dev-0");
  ASSERT_EQ(spec["devices"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const nlohmann::json& device = spec["devices"][static_cast<size_t>(i)];
    EXPECT_EQ(device["name"], "dev-" + std::to_string(i));
    EXPECT_EQ(device["containerEdits"]["env"],
              nlohmann::json::array({"DEVMGR_FAKE_DRA_GPU_EXAMPLE_COM_" + std::to_string(i) +
                                     "=node-a/dev-" + std::to_string(i)}));
  }

  driver_->Stop();
  EXPECT_FALSE(std::filesystem::exists(driver_->CdiSpecPath()));
  EXPECT_FALSE(std::filesystem::exists(driver_->service_socket()));
  EXPECT_FALSE(std::filesystem::exists(driver_->registrar_socket()));
  driver_->Stop();  // idempotent
}

TEST(FakeDraDriverStartTest, RefusesBadOptions) {
  TempDir dir;
  ClaimBook book;
  auto base = [&] {
    FakeDraOptions options;
    options.driver_name = kDriver;
    options.root_dir = dir.path();
    options.claim_lookup = book.Lookup();
    return options;
  };
  std::vector<std::pair<std::string, FakeDraOptions>> cases;
  cases.emplace_back("driver with a slash", base()).second.driver_name = "../x";
  cases.emplace_back("pool", base()).second.pool = "node/a";
  cases.emplace_back("negative devices", base()).second.devices = -1;
  {
    FakeDraOptions& options = cases.emplace_back("no version", base()).second;
    options.serve_v1 = false;
    options.serve_v1beta1 = false;
  }
  cases.emplace_back("negative latency", base()).second.prepare_latency = absl::Seconds(-1);
  cases.emplace_back("no lookup", base()).second.claim_lookup = nullptr;
  cases.emplace_back("socket path too long", base()).second.root_dir =
      dir.path() / std::string(100, 'r');
  for (auto& [description, options] : cases) {
    absl::StatusOr<std::unique_ptr<FakeDraDriver>> started =
        FakeDraDriver::Start(std::move(options));
    EXPECT_EQ(started.status().code(), absl::StatusCode::kInvalidArgument)
        << description << ": " << started.status();
  }
  // Refused before anything was made.
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "plugins_registry"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "plugins"));
}

// A stand-in for the daemon's admin API: GetResourceClaim only.
class FakeAdmin final : public admin::Admin::Service {
 public:
  grpc::Status GetResourceClaim(grpc::ServerContext* /*context*/,
                                const admin::GetResourceClaimRequest* request,
                                admin::GetResourceClaimResponse* response) override {
    if (request->namespace_() != kNamespace) return NotFound(*request);
    admin::ResourceClaim* claim = response->mutable_claim();
    claim->set_namespace_(request->namespace_());
    claim->set_name(request->name());
    if (request->name() == "a") {
      claim->set_uid("uid-a");
      claim->set_allocated(true);
      admin::DeviceAllocationResult* gpu = claim->add_results();
      gpu->set_request("gpu");
      gpu->set_driver(kDriver);
      gpu->set_pool(kPool);
      gpu->set_device("dev-1");
      gpu->set_share_id("share-9");
      admin::DeviceAllocationResult* nic = claim->add_results();
      nic->set_request("nic");
      nic->set_driver("net.example.com");
      nic->set_pool("pool-x");
      nic->set_device("eth0");
      nic->set_admin_access(true);
      (*nic->mutable_consumed_capacity())["bandwidth"] = "10G";
      nic->add_skip_node_operations("NodeUnprepareResources");
      admin::DeviceAllocationConfiguration* config = claim->add_config();
      config->set_source("FromClaim");
      config->add_requests("gpu");
      config->set_driver(kDriver);
      config->set_parameters_json(R"({"mode":"fast"})");
      claim->add_reserved_for_pod_uids("pod-1");
      return grpc::Status::OK;
    }
    if (request->name() == "pending") {
      claim->set_uid("uid-pending");
      return grpc::Status::OK;
    }
    return NotFound(*request);
  }

 private:
  static grpc::Status NotFound(const admin::GetResourceClaimRequest& request) {
    return grpc::Status(
        grpc::StatusCode::NOT_FOUND,
        "no admitted pod brought claim " + request.namespace_() + "/" + request.name());
  }
};

TEST(AdminClaimLookupTest, ReadsClaimsFromTheDaemon) {
  TempDir dir;
  const std::filesystem::path socket = dir.Sub("devmgr.sock");
  FakeAdmin admin_service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(socket), grpc::InsecureServerCredentials());
  builder.RegisterService(&admin_service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ClaimLookup lookup = AdminClaimLookup(socket, absl::Seconds(10));

  absl::StatusOr<dra::ResourceClaim> a = lookup(kNamespace, "a");
  ASSERT_TRUE(a.ok()) << a.status();
  dra::ResourceClaim want =
      Claim("a", "uid-a",
            std::vector{Result("gpu", "dev-1", "share-9"),
                        Result("nic", "eth0", std::nullopt, "net.example.com", "pool-x")});
  want.allocation->back().admin_access = true;
  want.allocation->back().consumed_capacity = {{"bandwidth", "10G"}};
  want.allocation->back().skip_node_operations = {"NodeUnprepareResources"};
  want.allocation_config = {{.source = "FromClaim",
                             .requests = {"gpu"},
                             .driver = kDriver,
                             .parameters = R"({"mode":"fast"})"}};
  want.reserved_for = {{.api_group = "", .resource = "pods", .name = "", .uid = "pod-1"}};
  EXPECT_EQ(*a, want);

  absl::StatusOr<dra::ResourceClaim> pending = lookup(kNamespace, "pending");
  ASSERT_TRUE(pending.ok()) << pending.status();
  EXPECT_FALSE(pending->allocation.has_value());

  absl::StatusOr<dra::ResourceClaim> missing = lookup(kNamespace, "missing");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "no admitted pod brought claim default/missing");

  // The whole path, as `devmgr plugin fake-dra` runs it: the driver reads the daemon's claims.
  FakeDraOptions options;
  options.driver_name = kDriver;
  options.root_dir = dir.path();
  options.pool = kPool;
  options.devices = 2;
  options.claim_lookup = lookup;
  absl::StatusOr<std::unique_ptr<FakeDraDriver>> driver = FakeDraDriver::Start(std::move(options));
  ASSERT_TRUE(driver.ok()) << driver.status();
  dra::DriverClient client(kDriver, (*driver)->service_socket().string(), "v1.DRAPlugin",
                           absl::Seconds(10));
  v1::NodePrepareResourcesRequest request;
  AddClaim(request, "a", "uid-a");
  absl::StatusOr<v1::NodePrepareResourcesResponse> prepared = client.NodePrepareResources(request);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ(prepared->claims().at("uid-a").devices_size(), 1);
  EXPECT_EQ(prepared->claims().at("uid-a").devices(0).share_id(), "share-9");
  v1::NodePrepareResourcesRequest unknown;
  AddClaim(unknown, "missing", "uid-missing");
  EXPECT_EQ(client.NodePrepareResources(unknown).status().message(),
            "rpc error: code = Unknown desc = get resource claims: retrieve claim default/missing: "
            "no admitted pod brought claim default/missing");
  (*driver)->Stop();
  server->Shutdown();
}

// A daemon that restarted is reached by the first lookup after it listens again: gRPC's
// reconnect backoff, begun by a lookup while it was away, would have refused lookups for a
// second after the first failure, up to two minutes after more (and a pod's admission with
// them). Before, a driver's prepare right after the daemon's restart failed with "No such file
// or directory".
TEST(AdminClaimLookupTest, ADaemonThatCameBackIsReachedAtOnce) {
  TempDir dir;
  const std::filesystem::path socket = dir.Sub("devmgr.sock");
  FakeAdmin admin_service;
  auto serve = [&] {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(UnixTarget(socket), grpc::InsecureServerCredentials());
    builder.RegisterService(&admin_service);
    return builder.BuildAndStart();
  };
  std::unique_ptr<grpc::Server> server = serve();
  ASSERT_NE(server, nullptr);
  ClaimLookup lookup = AdminClaimLookup(socket, absl::Seconds(10));
  ASSERT_TRUE(lookup(kNamespace, "a").ok());

  server->Shutdown();
  server.reset();
  EXPECT_EQ(lookup(kNamespace, "a").status().code(), absl::StatusCode::kUnavailable);
  server = serve();
  ASSERT_NE(server, nullptr);
  const absl::StatusOr<dra::ResourceClaim> again = lookup(kNamespace, "a");
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST(AdminClaimLookupTest, NoDaemonIsUnavailable) {
  TempDir dir;
  ClaimLookup lookup = AdminClaimLookup(dir.Sub("devmgr.sock"), absl::Seconds(10));
  absl::StatusOr<dra::ResourceClaim> claim = lookup(kNamespace, "a");
  EXPECT_EQ(claim.status().code(), absl::StatusCode::kUnavailable) << claim.status();
}

// The health stream: every device healthy when it opens, then FlipHealth turns dev-0
// unhealthy with a message, as the node's health stream reads it; as v1 and, for a kubelet
// before it, as v1alpha1.
TEST_F(FakeDraDriverTest, ReportsDeviceHealthAndFlipsIt) {
  ASSERT_NO_FATAL_FAILURE(StartDriver(Options()));
  for (const char* service :
       {dra::kDraResourceHealthServiceV1, dra::kDraResourceHealthServiceV1alpha1}) {
    SCOPED_TRACE(service);
    ASSERT_NO_FATAL_FAILURE(WatchHealthAndFlip(service));
  }
}

void FakeDraDriverTest::WatchHealthAndFlip(const std::string& service) {
  std::vector<dra::DeviceHealth> seen;
  absl::Mutex mu;
  dra::HealthStreamOptions options = HealthStreamOptions();
  options.service = service;
  options.on_response = [&](const dra::healthapi::NodeWatchResourcesResponse& response) {
    absl::MutexLock lock(&mu);
    seen = dra::BuildDeviceHealths(response, kDriver);
  };
  dra::HealthStream stream(std::move(options));
  auto health_of_dev0 = [&] {
    absl::MutexLock lock(&mu);
    return seen.empty() ? std::optional<dra::DeviceHealthStatus>() : seen[0].health;
  };
  ASSERT_TRUE(WaitFor([&] { return health_of_dev0() == dra::DeviceHealthStatus::kHealthy; }));
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(seen.size(), 4u) << "every device";
    EXPECT_EQ(seen[0].pool_name, kPool);
  }
  driver_->FlipHealth();
  ASSERT_TRUE(WaitFor([&] { return health_of_dev0() == dra::DeviceHealthStatus::kUnhealthy; }));
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(seen[0].device_name, "dev-0");
    EXPECT_FALSE(seen[0].message.empty());
  }
  stream.Stop();
  // Two rounds of the 4 devices (this one's flip and 7 more) leave every device healthy again,
  // dev-0 flipped next.
  for (int i = 0; i < 7; ++i) driver_->FlipHealth();
}

// With nothing to say, the stream still reports every device again each interval: the node
// reads a report older than the device's health check timeout as Unknown. Before, the health
// went Unknown on the node 30 s after the stream opened.
TEST_F(FakeDraDriverTest, ReportsTheHealthAgainEachInterval) {
  FakeDraOptions driver_options = Options();
  driver_options.health_report_interval = absl::Milliseconds(30);
  ASSERT_NO_FATAL_FAILURE(StartDriver(std::move(driver_options)));
  std::atomic<int> reports{0};
  dra::HealthStreamOptions options = HealthStreamOptions();
  options.on_response = [&](const dra::healthapi::NodeWatchResourcesResponse& response) {
    if (response.devices_size() == 4) ++reports;
  };
  dra::HealthStream stream(std::move(options));
  EXPECT_TRUE(WaitFor([&] { return reports.load() >= 3; }));
  stream.Stop();
}

}  // namespace
}  // namespace devmgr::plugins
