// DRA driver registration and calls: upstream's TestRegistrationHandler (which service is
// chosen, refusals with upstream's texts, several endpoints per driver, deregistration), and
// calls through v1 and v1beta1 to a fake driver, its deadline included.
#include "dra/driver_registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "tests/dra/fake_driver.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::dra {
namespace {

using ::devmgr::testing::FakeDriver;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

constexpr char kPluginA[] = "pluginA";
constexpr char kPluginB[] = "pluginB";

// Upstream's TestRegistrationHandler, with the services devmgr speaks (v1 and v1beta1): with
// plugin A registered, plugin B (or A on another endpoint) validates and registers, or is
// refused with upstream's text; the service chosen is the first of the plugin's list that
// devmgr speaks.
TEST(DriverRegistryTest, TestRegistrationHandler) {
  struct Case {
    const char* description;
    const char* plugin_name;
    const char* endpoint;
    std::vector<std::string> supported_services;
    std::string error;  // empty: no error
    std::string chosen_service;
  };
  const std::vector<Case> cases = {
      {"no-services-provided",
       kPluginB,
       "/run/dra/endpointB",
       {},
       "invalid supported gRPC versions of DRA driver plugin pluginB at endpoint "
       "/run/dra/endpointB: "
       "empty list of supported gRPC services (aka supported versions)",
       ""},
      {"current-service", kPluginB, "/run/dra/endpointB", {"v1.DRAPlugin"}, "", "v1.DRAPlugin"},
      {"beta-service",
       kPluginB,
       "/run/dra/endpointB",
       {"v1beta1.DRAPlugin"},
       "",
       "v1beta1.DRAPlugin"},
      {"two-services",
       kPluginB,
       "/run/dra/endpointB",
       {"v1alpha4.Node", "v1beta1.DRAPlugin"},
       "",
       "v1beta1.DRAPlugin"},
      {"plugin-order",
       kPluginB,
       "/run/dra/endpointB",
       {"v1beta1.DRAPlugin", "v1.DRAPlugin"},
       "",
       "v1beta1.DRAPlugin"},
      {"old-service",
       kPluginB,
       "/run/dra/endpointB",
       {"v1alpha4.Node"},
       "invalid supported gRPC versions of DRA driver plugin pluginB at endpoint "
       "/run/dra/endpointB: "
       "none of services supported by the plugin ([\"v1alpha4.Node\"]) are supported by the "
       "kubelet ([\"v1.DRAPlugin\" \"v1beta1.DRAPlugin\"])",
       ""},
      // The versions are quoted as Go's %q quotes them: the refusal stays one line.
      {"quoted-services",
       kPluginB,
       "/run/dra/endpointB",
       {"a\"b\nc\\"},
       "invalid supported gRPC versions of DRA driver plugin pluginB at endpoint "
       "/run/dra/endpointB: "
       "none of services supported by the plugin ([\"a\\\"b\\nc\\\\\"]) are supported by the "
       "kubelet ([\"v1.DRAPlugin\" \"v1beta1.DRAPlugin\"])",
       ""},
      {"replace", kPluginA, "/run/dra/endpointB", {"v1.DRAPlugin"}, "", "v1.DRAPlugin"},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.description);
    DriverRegistry registry;
    ASSERT_TRUE(registry.RegisterPlugin(kPluginA, "/run/dra/endpointA", {"v1.DRAPlugin"}).ok());

    absl::Status validated =
        registry.ValidatePlugin(test.plugin_name, test.endpoint, test.supported_services);
    EXPECT_EQ(validated.message(), test.error);
    if (!test.error.empty()) {
      EXPECT_EQ(registry.RegisterPlugin(test.plugin_name, test.endpoint, test.supported_services)
                    .message(),
                test.error);
      EXPECT_FALSE(registry.Get(test.plugin_name).ok()) << "refused, so not registered";
      continue;
    }
    if (test.plugin_name != std::string(kPluginA)) {
      EXPECT_EQ(registry.Get(test.plugin_name).status().message(),
                absl::StrCat("DRA driver ", test.plugin_name, " is not registered"))
          << "not registered yet";
    }
    ASSERT_TRUE(
        registry.RegisterPlugin(test.plugin_name, test.endpoint, test.supported_services).ok());
    absl::StatusOr<std::shared_ptr<const DriverClient>> plugin = registry.Get(test.plugin_name);
    ASSERT_TRUE(plugin.ok()) << plugin.status();
    EXPECT_EQ((*plugin)->endpoint(), test.endpoint);
    EXPECT_EQ((*plugin)->service(), test.chosen_service);

    registry.DeRegisterPlugin(test.plugin_name, test.endpoint);
    registry.DeRegisterPlugin(test.plugin_name, test.endpoint);  // a no-op
    if (test.plugin_name == std::string(kPluginA)) {
      EXPECT_EQ((*registry.Get(kPluginA))->endpoint(), "/run/dra/endpointA")
          << "the other endpoint stays";
    } else {
      EXPECT_FALSE(registry.Get(test.plugin_name).ok());
    }
  }
}

// Upstream's TestRegisterPluginRejectsUntrustedInput: a driver's name and endpoint come from its
// GetInfo answer, which anyone who can create a socket in plugins_registry/ writes; a name the
// API would refuse (another path's parts, spaces, over 63 bytes) and an endpoint that is not an
// absolute socket address are refused by ValidatePlugin and RegisterPlugin alike, with
// upstream's texts, and nothing is registered.
TEST(DriverRegistryTest, TestRegisterPluginRejectsUntrustedInput) {
  struct Case {
    const char* description;
    std::string driver_name;
    std::string endpoint;
    std::string error;
  };
  const std::string socket = "/var/lib/kubelet/plugins/foo/plugin.sock";
  const std::string long_endpoint =
      "/var/lib/kubelet/plugins/example.com/"
      "very_long_endpoint_name_that_exceeds_the_unix_socket_limit_108_bytes.sock";
  const std::vector<Case> cases = {
      {"empty-driver", "", socket,
       "invalid DRA driver name \"\": [driverName: Required value, driverName: Invalid value: "
       "\"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
       "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
       "'example.com', regex used for validation is "
       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')]"},
      {"driver-with-slash", "../evil", socket,
       "invalid DRA driver name \"../evil\": driverName: Invalid value: \"../evil\": a lowercase "
       "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
       "must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
       "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"},
      {"driver-with-space", "evil driver", socket, "invalid DRA driver name \"evil driver\""},
      {"driver-too-long", std::string(64, 'a'), socket,
       absl::StrCat("invalid DRA driver name \"", std::string(64, 'a'),
                    "\": driverName: Too long: may not be more than 63 bytes")},
      {"empty-endpoint", "good.example.com", "",
       "empty DRA plugin endpoint for DRA driver good.example.com"},
      {"relative-endpoint", "good.example.com", "plugin.sock",
       "DRA plugin endpoint \"plugin.sock\" must be an absolute path"},
      {"endpoint-too-long", "good.example.com", long_endpoint,
       absl::StrCat("DRA plugin endpoint \"", long_endpoint,
                    "\" is longer than 107 bytes, the most a unix socket address holds")},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.description);
    DriverRegistry registry;
    const absl::Status validated =
        registry.ValidatePlugin(test.driver_name, test.endpoint, {"v1.DRAPlugin"});
    EXPECT_EQ(validated.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(validated.message(), test.error)) << validated.message();
    const absl::Status registered =
        registry.RegisterPlugin(test.driver_name, test.endpoint, {"v1.DRAPlugin"});
    EXPECT_EQ(registered, validated);
    EXPECT_FALSE(registry.Get(test.driver_name).ok()) << "refused, so not registered";
  }
}

// Upstream's TestRegisterPluginAcceptsEndpointInsideRootDir: the layouts drivers use (a socket
// of their own under plugins/, one beside the registration socket), and a path whose ".." stays
// inside, are taken; so is a path elsewhere, which the newest kubelet refuses (see
// ValidatePlugin).
TEST(DriverRegistryTest, TestRegisterPluginAcceptsEndpointInsideRootDir) {
  for (const char* endpoint : {
           "/var/lib/kubelet/plugins/example.com/dra.sock",
           "/var/lib/kubelet/plugins/example.com/rolling/dra.sock",
           "/var/lib/kubelet/plugins_registry/example.com-common.sock",
           "/var/lib/kubelet/plugins/./example.com/../dra.sock",
           "/run/some-other/socket.sock",
       }) {
    SCOPED_TRACE(endpoint);
    DriverRegistry registry;
    EXPECT_TRUE(registry.ValidatePlugin("example.com", endpoint, {"v1.DRAPlugin"}).ok());
    // Upper case is lowered before the check, as for CSI drivers.
    EXPECT_TRUE(registry.ValidatePlugin("Example.com", endpoint, {"v1.DRAPlugin"}).ok());
  }
}

TEST(DriverRegistryTest, SameEndpointTwiceIsRefused) {
  DriverRegistry registry;
  ASSERT_TRUE(registry.RegisterPlugin(kPluginA, "/run/a.sock", {"v1.DRAPlugin"}).ok());
  absl::Status again = registry.RegisterPlugin(kPluginA, "/run/a.sock", {"v1.DRAPlugin"});
  EXPECT_EQ(again.message(),
            "endpoint /run/a.sock already registered for DRA driver plugin pluginA");
  EXPECT_EQ(registry.Get("").status().message(), "DRA driver name is empty");
}

// Records what the health streams report, by driver.
class RecordingHealthSink final : public HealthSink {
 public:
  void HealthReported(const std::string& driver_name,
                      const healthapi::NodeWatchResourcesResponse& /*response*/) override {
    absl::MutexLock lock(&mu_);
    ++reports_[driver_name];
  }
  void HealthStreamEnded(const std::string& driver_name, const HealthStreamEnd& /*end*/) override {
    absl::MutexLock lock(&mu_);
    ++ends_[driver_name];
  }
  int reports(const std::string& driver_name) const {
    absl::MutexLock lock(&mu_);
    auto it = reports_.find(driver_name);
    return it == reports_.end() ? 0 : it->second;
  }
  int ends(const std::string& driver_name) const {
    absl::MutexLock lock(&mu_);
    auto it = ends_.find(driver_name);
    return it == ends_.end() ? 0 : it->second;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, int> reports_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> ends_ ABSL_GUARDED_BY(mu_);
};

// Two drivers registered at one endpoint each get a health stream, and the second's
// registration and deregistration leave the first's stream as it was, as upstream keeps one
// stream per plugin. Before, the streams were kept by endpoint alone: the second registration
// ended the first driver's stream (whose end cleared that driver's health), and the second's
// deregistration then removed the only stream left.
TEST(DriverRegistryTest, AnotherDriverAtTheSameEndpointLeavesTheHealthStreamAlone) {
  TempDir dir;
  const std::string socket = dir.Sub("d.sock").string();
  FakeDriver::Options serving;
  serving.serve_health_v1 = true;
  FakeDriver driver(socket, serving);
  ASSERT_TRUE(driver.started());
  driver.PushHealth(::v1::NodeWatchResourcesResponse());
  RecordingHealthSink sink;
  DriverRegistryOptions options;
  options.health = &sink;
  DriverRegistry registry(options);
  const std::vector<std::string> versions = {"v1.DRAPlugin", "v1.DRAResourceHealth"};
  ASSERT_TRUE(registry.RegisterPlugin(kPluginA, socket, versions).ok());
  ASSERT_TRUE(WaitFor([&] { return sink.reports(kPluginA) == 1; }));
  ASSERT_TRUE(registry.RegisterPlugin(kPluginB, socket, versions).ok());
  ASSERT_TRUE(WaitFor([&] { return sink.reports(kPluginB) == 1; }));
  EXPECT_EQ(driver.open_health_streams(), 2);
  EXPECT_EQ(sink.ends(kPluginA), 0);
  registry.DeRegisterPlugin(kPluginB, socket);
  ASSERT_TRUE(WaitFor([&] { return driver.open_health_streams() == 1; }));
  EXPECT_EQ(sink.ends(kPluginA), 0);
  driver.PushHealth(::v1::NodeWatchResourcesResponse());
  EXPECT_TRUE(WaitFor([&] { return sink.reports(kPluginA) == 2; }));
  EXPECT_EQ(sink.reports(kPluginB), 1);
}

// A rolling update: two endpoints of one driver. Calls go to the newest connected one; with
// none connected, to the newest.
TEST(DriverRegistryTest, NewestConnectedEndpointIsUsed) {
  TempDir dir;
  const std::string old_socket = dir.Sub("old.sock").string();
  const std::string new_socket = dir.Sub("new.sock").string();
  DriverRegistry registry;
  FakeDriver old_driver(old_socket);
  ASSERT_TRUE(old_driver.started());
  ASSERT_TRUE(registry.RegisterPlugin(kPluginA, old_socket, {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(registry.RegisterPlugin(kPluginA, new_socket, {"v1.DRAPlugin"}).ok());
  // The new endpoint has no server yet: the old, connected one is chosen.
  ASSERT_TRUE(WaitFor([&] { return (*registry.Get(kPluginA))->endpoint() == old_socket; }));
  {
    FakeDriver new_driver(new_socket);
    ASSERT_TRUE(new_driver.started());
    EXPECT_TRUE(WaitFor([&] { return (*registry.Get(kPluginA))->endpoint() == new_socket; }));
  }
  registry.DeRegisterPlugin(kPluginA, old_socket);
  EXPECT_EQ((*registry.Get(kPluginA))->endpoint(), new_socket) << "the newest, even unconnected";
}

const std::vector<std::string> kWithHealth = {"v1.DRAPlugin", "v1.DRAResourceHealth"};

// A driver's rolling update: its old endpoint, which serves health and has a report for each
// stream, the new one, and a registry whose health streams report to a recording sink.
class RollingUpdateHealthTest : public ::testing::Test {
 protected:
  // Starts both drivers; the new one serves health when asked to.
  void StartDrivers(bool new_serves_health) {
    FakeDriver::Options serving;
    serving.serve_health_v1 = true;
    old_driver_ = std::make_unique<FakeDriver>(OldSocket(), serving);
    serving.serve_health_v1 = new_serves_health;
    new_driver_ = std::make_unique<FakeDriver>(NewSocket(), serving);
    ASSERT_TRUE(old_driver_->started() && new_driver_->started());
    old_driver_->PushHealth(::v1::NodeWatchResourcesResponse());
  }
  std::string OldSocket() const { return dir_.Sub("old.sock").string(); }
  std::string NewSocket() const { return dir_.Sub("new.sock").string(); }

  TempDir dir_;
  std::unique_ptr<FakeDriver> old_driver_;
  std::unique_ptr<FakeDriver> new_driver_;
  RecordingHealthSink sink_;
  DriverRegistry registry_{HealthTo(&sink_)};

 private:
  static DriverRegistryOptions HealthTo(HealthSink* sink) {
    DriverRegistryOptions options;
    options.health = sink;
    return options;
  }
};

// Upstream's TestHealthStreamUsesLatestPlugin (kubernetes issue 140818): in a rolling update the
// driver's health comes from its newest endpoint alone. The new endpoint takes the stream over
// without ending the driver's health, the old one's deregistration leaves it alone, and the
// last one's ends it. Before, every endpoint streamed at once into the one per-driver cache,
// and the old endpoint's deregistration ended its stream, which cleared the new one's health.
TEST_F(RollingUpdateHealthTest, TestHealthStreamUsesLatestPlugin) {
  StartDrivers(/*new_serves_health=*/true);
  new_driver_->PushHealth(::v1::NodeWatchResourcesResponse());
  ASSERT_TRUE(registry_.RegisterPlugin(kPluginA, OldSocket(), kWithHealth).ok());
  ASSERT_TRUE(WaitFor([&] { return sink_.reports(kPluginA) == 1; }));
  ASSERT_TRUE(registry_.RegisterPlugin(kPluginA, NewSocket(), kWithHealth).ok());
  ASSERT_TRUE(WaitFor([&] { return sink_.reports(kPluginA) == 2; }));
  EXPECT_EQ(new_driver_->open_health_streams(), 1);
  EXPECT_TRUE(WaitFor([&] { return old_driver_->open_health_streams() == 0; }))
      << "the old endpoint still streams";
  EXPECT_EQ(sink_.ends(kPluginA), 0) << "the handover ended the driver's health";

  registry_.DeRegisterPlugin(kPluginA, OldSocket());
  EXPECT_EQ(sink_.ends(kPluginA), 0);
  EXPECT_EQ(new_driver_->health_streams(), 1) << "the new endpoint's stream was replaced";
  new_driver_->PushHealth(::v1::NodeWatchResourcesResponse());
  EXPECT_TRUE(WaitFor([&] { return sink_.reports(kPluginA) == 3; }));

  registry_.DeRegisterPlugin(kPluginA, NewSocket());
  EXPECT_EQ(sink_.ends(kPluginA), 1);
  EXPECT_TRUE(WaitFor([&] { return new_driver_->open_health_streams() == 0; }));
}

// Upstream's TestHealthStreamDoesNotFallBackFromPreferredPlugin: when the newest endpoint serves
// no health, the driver streams none: the old endpoint's stream ends, and so does the health it
// reported. Once that newest endpoint goes, the old one is the newest again and streams.
TEST_F(RollingUpdateHealthTest, TestHealthStreamDoesNotFallBackFromPreferredPlugin) {
  StartDrivers(/*new_serves_health=*/false);
  ASSERT_TRUE(registry_.RegisterPlugin(kPluginA, OldSocket(), kWithHealth).ok());
  ASSERT_TRUE(WaitFor([&] { return sink_.reports(kPluginA) == 1; }));
  ASSERT_TRUE(registry_.RegisterPlugin(kPluginA, NewSocket(), {"v1.DRAPlugin"}).ok());
  EXPECT_EQ(sink_.ends(kPluginA), 1);
  EXPECT_TRUE(WaitFor([&] { return old_driver_->open_health_streams() == 0; }));

  registry_.DeRegisterPlugin(kPluginA, NewSocket());
  EXPECT_TRUE(WaitFor([&] { return sink_.reports(kPluginA) == 2; }));
  EXPECT_EQ(old_driver_->open_health_streams(), 1);
}

// The newest endpoint goes first (a rolled-back update, or a restart that registered the
// endpoints in another order): the one before it takes the stream over, and the driver's
// health is not ended meanwhile.
TEST_F(RollingUpdateHealthTest, TheNewestEndpointsDeregistrationHandsTheHealthStreamBack) {
  StartDrivers(/*new_serves_health=*/true);
  ASSERT_TRUE(registry_.RegisterPlugin(kPluginA, OldSocket(), kWithHealth).ok());
  ASSERT_TRUE(registry_.RegisterPlugin(kPluginA, NewSocket(), kWithHealth).ok());
  ASSERT_TRUE(WaitFor([&] { return new_driver_->open_health_streams() == 1; }));
  registry_.DeRegisterPlugin(kPluginA, NewSocket());
  EXPECT_TRUE(WaitFor([&] { return old_driver_->open_health_streams() == 1; }));
  EXPECT_TRUE(WaitFor([&] { return new_driver_->open_health_streams() == 0; }));
  EXPECT_EQ(sink_.ends(kPluginA), 0);
}

draapi::v1::NodePrepareResourcesRequest OneClaim(const std::string& uid) {
  draapi::v1::NodePrepareResourcesRequest request;
  auto* claim = request.add_claims();
  claim->set_namespace_("default");
  claim->set_uid(uid);
  claim->set_name("claim-" + uid);
  return request;
}

// A driver's new instance binds its socket path while the old one still serves a connection a
// caller holds: the new registration's calls reach the new instance, through a connection of
// their own.
TEST(DriverRegistryTest, ANewInstanceAtTheSameSocketIsReachedWhileTheOldOneStillServes) {
  TempDir dir;
  const std::string socket = dir.Sub("dra.sock").string();
  DriverRegistry registry;
  FakeDriver old_driver(socket);
  ASSERT_TRUE(old_driver.started());
  ASSERT_TRUE(registry.RegisterPlugin(kPluginA, socket, {"v1.DRAPlugin"}).ok());
  auto old_client = registry.Get(kPluginA);
  ASSERT_TRUE(old_client.ok());
  ASSERT_TRUE((*old_client)->NodePrepareResources(OneClaim("uid-1")).ok());

  FakeDriver new_driver(socket);
  ASSERT_TRUE(new_driver.started());
  registry.DeRegisterPlugin(kPluginA, socket);
  ASSERT_TRUE(registry.RegisterPlugin(kPluginA, socket, {"v1.DRAPlugin"}).ok());
  auto new_client = registry.Get(kPluginA);
  ASSERT_TRUE(new_client.ok());
  ASSERT_TRUE((*new_client)->NodePrepareResources(OneClaim("uid-2")).ok());
  EXPECT_EQ(new_driver.prepare_calls(), 1);
  EXPECT_EQ(old_driver.prepare_calls(), 1);
}

// Endpoints whose names gRPC's URI parsing would read as another path ("%2E%2E%2F" decodes to
// "../", '?' and '#' end a URI's path) are reached at the path as named, never at the other.
TEST(DriverRegistryTest, EndpointNamesThatDecodeToAnotherPathReachTheirOwnSocket) {
  TempDir dir;
  std::filesystem::create_directories(dir.Sub("plugins"));
  std::filesystem::create_directories(dir.Sub("out"));
  FakeDriver decoy_outside(dir.Sub("out/p.sock").string());
  FakeDriver decoy_cut(dir.Sub("plugins/x").string());
  ASSERT_TRUE(decoy_outside.started());
  ASSERT_TRUE(decoy_cut.started());
  for (const char* name : {"%2E%2E%2Fout%2Fp.sock", "x?y.sock", "x#y.sock"}) {
    SCOPED_TRACE(name);
    const std::string socket = (dir.Sub("plugins") / name).string();
    FakeDriver driver(socket);
    ASSERT_TRUE(driver.started());
    DriverRegistry registry;
    ASSERT_TRUE(registry.RegisterPlugin(kPluginA, socket, {"v1.DRAPlugin"}).ok());
    auto client = registry.Get(kPluginA);
    ASSERT_TRUE(client.ok());
    EXPECT_TRUE((*client)->NodePrepareResources(OneClaim("uid-1")).ok());
    EXPECT_EQ(driver.prepare_calls(), 1);
  }
  EXPECT_EQ(decoy_outside.prepare_calls(), 0);
  EXPECT_EQ(decoy_cut.prepare_calls(), 0);
}

// gRPC's unix resolver splits a decoded path at ',' and dials the first part, so "x,y.sock"
// would reach the driver at x. Such an endpoint is refused, at validation and at registration.
TEST(DriverRegistryTest, EndpointsWithACommaAreRefused) {
  TempDir dir;
  FakeDriver cut(dir.Sub("x").string());
  ASSERT_TRUE(cut.started());
  const std::string socket = dir.Sub("x,y.sock").string();
  const std::string refusal = "invalid endpoint of DRA driver plugin pluginA: socket path \"" +
                              socket +
                              "\" contains ',', which gRPC reads as a separator between addresses";
  DriverRegistry registry;
  const absl::Status validated = registry.ValidatePlugin(kPluginA, socket, {"v1.DRAPlugin"});
  EXPECT_EQ(validated.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(validated.message(), refusal);
  EXPECT_EQ(registry.RegisterPlugin(kPluginA, socket, {"v1.DRAPlugin"}).message(), refusal);
  EXPECT_FALSE(registry.Get(kPluginA).ok()) << "nothing registered";
  EXPECT_EQ(cut.prepare_calls(), 0);
}

// The calls reach the driver through the service chosen, and come back as v1 messages.
TEST(DriverRegistryTest, CallsGoThroughTheChosenService) {
  for (const char* service : {"v1.DRAPlugin", "v1beta1.DRAPlugin"}) {
    SCOPED_TRACE(service);
    TempDir dir;
    const std::string socket = dir.Sub("dra.sock").string();
    FakeDriver driver(socket);
    ASSERT_TRUE(driver.started());
    driver.OnPrepare([](const draapi::v1::NodePrepareResourcesRequest& request) {
      draapi::v1::NodePrepareResourcesResponse response;
      auto& claim = (*response.mutable_claims())[request.claims(0).uid()];
      auto* device = claim.add_devices();
      device->set_pool_name("pool");
      device->set_device_name("gpu-0");
      device->add_cdi_device_ids("example.com/gpu=gpu-0");
      device->set_share_id("share-1");
      return response;
    });
    DriverRegistry registry;
    ASSERT_TRUE(registry.RegisterPlugin("gpu.example.com", socket, {service}).ok());
    auto client = registry.Get("gpu.example.com");
    ASSERT_TRUE(client.ok());
    absl::StatusOr<draapi::v1::NodePrepareResourcesResponse> prepared =
        (*client)->NodePrepareResources(OneClaim("uid-1"));
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    const auto& device = prepared->claims().at("uid-1").devices(0);
    EXPECT_EQ(device.device_name(), "gpu-0");
    EXPECT_EQ(device.cdi_device_ids(0), "example.com/gpu=gpu-0");
    EXPECT_EQ(device.share_id(), "share-1");

    draapi::v1::NodeUnprepareResourcesRequest unprepare;
    *unprepare.add_claims() = OneClaim("uid-1").claims(0);
    absl::StatusOr<draapi::v1::NodeUnprepareResourcesResponse> unprepared =
        (*client)->NodeUnprepareResources(unprepare);
    ASSERT_TRUE(unprepared.ok()) << unprepared.status();
    EXPECT_TRUE(unprepared->claims().contains("uid-1"));
    const std::string version = std::string(service) == "v1.DRAPlugin" ? "v1" : "v1beta1";
    EXPECT_EQ(driver.versions(), (std::vector<std::string>{version, version}));
  }
}

// Upstream's "should timeout" of TestPrepareResources at this level: a driver that does not
// answer within the call timeout gives DeadlineExceeded.
TEST(DriverRegistryTest, SlowDriverTimesOut) {
  TempDir dir;
  const std::string socket = dir.Sub("dra.sock").string();
  FakeDriver driver(socket);
  ASSERT_TRUE(driver.started());
  // Shared with the driver's handler, which may still run after the call timed out.
  auto release = std::make_shared<absl::Notification>();
  driver.OnPrepare([release](const draapi::v1::NodePrepareResourcesRequest&) {
    release->WaitForNotification();
    return draapi::v1::NodePrepareResourcesResponse();
  });
  DriverRegistryOptions options;
  options.call_timeout = absl::Milliseconds(20);
  DriverRegistry registry(options);
  ASSERT_TRUE(registry.RegisterPlugin("slow.example.com", socket, {"v1.DRAPlugin"}).ok());
  absl::StatusOr<draapi::v1::NodePrepareResourcesResponse> prepared =
      (*registry.Get("slow.example.com"))->NodePrepareResources(OneClaim("uid-1"));
  EXPECT_EQ(prepared.status().code(), absl::StatusCode::kDeadlineExceeded) << prepared.status();
  release->Notify();
}

}  // namespace
}  // namespace devmgr::dra
