// The SDK plugins used as libraries, in process: the generic plugin's config and scanner over a
// folder of stand-in device files, and the fake plugin's injected Allocate faults. The same
// plugins run as `devmgr plugin ...` in tests/cmd/plugin_cmd_test.cc.
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "plugins/fake/fake_plugin.h"
#include "plugins/generic/generic_plugin.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::plugins {
namespace {

using deviceplugin::Health;

TEST(GenericPluginLibraryTest, ScannerReportsMatchesAndKeepsVanishedOnesUnhealthy) {
  testing::TempDir dir;
  for (const char* name : {"tty0", "tty1"}) std::ofstream(dir.Sub(name)) << "";
  absl::StatusOr<GenericConfig> config = ParseGenericConfig(
      "namespace: example.com\n"
      "groups:\n"
      "  - name: serial\n"
      "    paths: [\"" +
      dir.Sub("tty*").string() + "\"]\n");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->resource_namespace, "example.com");

  GenericScanner scanner(*config, GenericScannerOptions{});
  absl::StatusOr<deviceplugin::DeviceTree> tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ(tree->DeviceTypeCount("serial"), 2u);
  EXPECT_EQ(tree->HealthyCount("serial"), 2u);

  std::filesystem::remove(dir.Sub("tty1"));
  tree = scanner.ScanOnce();
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_EQ(tree->DeviceTypeCount("serial"), 2u);
  EXPECT_EQ(tree->HealthyCount("serial"), 1u);
}

TEST(GenericPluginLibraryTest, ConfigWithoutGroupsIsRefused) {
  absl::StatusOr<GenericConfig> config = ParseGenericConfig("namespace: example.com\n");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FakePluginLibraryTest, InjectedAllocateErrorIsTheAnswer) {
  FakeHookOptions options;
  options.allocate_error = "injected";
  FakeHooks hooks(options);
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("dev-0");
  auto answer = hooks.Allocate("gpu", request);
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().message(), "injected");
}

TEST(FakePluginLibraryTest, WithoutFaultsTheSdkAnswers) {
  FakeHooks hooks(FakeHookOptions{});
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("dev-0");
  auto answer = hooks.Allocate("gpu", request);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_FALSE(answer->has_value());  // UseDefault: the SDK's own Allocate runs
}

// A hang or a delay that the plugin's stop ends fails its call, as a plugin that goes away
// mid-call does: before, the call went on to the SDK's answer, and a pod was admitted with
// devices of a plugin that had stopped.
TEST(FakePluginLibraryTest, ACallHeldWhenThePluginStopsFails) {
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("dev-0");
  v1beta1::PreferredAllocationRequest preferred;
  preferred.add_container_requests()->add_available_deviceids("dev-0");
  FakeHookOptions hang;
  hang.allocate_hang = true;
  hang.preferred_hang = true;
  hang.preferred = PreferredPolicy::kFirst;
  FakeHookOptions slow;
  slow.allocate_latency = absl::Hours(1);
  for (const FakeHookOptions& options : {hang, slow}) {
    FakeHooks hooks(options);
    // The stop comes during the call or just before it: either way the call fails.
    std::thread stopper([&] { hooks.Release(); });
    auto answer = hooks.Allocate("gpu", request);
    stopper.join();
    EXPECT_EQ(answer.status().code(), absl::StatusCode::kUnavailable) << answer.status();
    EXPECT_EQ(answer.status().message(), "the plugin stopped during the call");
    if (options.preferred_hang) {
      EXPECT_EQ(hooks.GetPreferredAllocation("gpu", preferred).status().code(),
                absl::StatusCode::kUnavailable);
    }
  }
}

}  // namespace
}  // namespace devmgr::plugins
