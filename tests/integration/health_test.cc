// Device health in pod status (KEP-4680) through the real binary: `devmgr serve`, a fake plugin
// whose device turns unhealthy on SIGUSR1, and the places a user looks: `pods list` (its HEALTH
// column and the admin API's health field), `pods options`, a PodResources Watch event, and
// the metric counting affected containers.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/metrics_scrape.h"
#include "nlohmann/json.hpp"
#include "tests/integration/daemon_harness.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using Json = nlohmann::json;
using testing::BackgroundProcess;
using testing::DaemonHarness;
using testing::PodManifest;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr char kGpu[] = "example.com/gpu";

// The health `pods list -o json` gives the first device of pod `uid`, or "" if none.
std::string ListedHealth(const DaemonHarness& h, const std::string& uid) {
  const Json pods = h.ListPods();
  if (pods.is_null()) return "";
  for (const auto& pod : pods.value("pods", Json::array())) {
    if (pod["pod"].value("uid", "") != uid) continue;
    for (const auto& container : pod.value("containers", Json::array())) {
      for (const auto& resource : container.value("resources", Json::array())) {
        for (const auto& device : resource.value("devices", Json::array())) {
          return device.value("health", "");
        }
      }
    }
  }
  return "";
}

// The JSON lines the watch client printed so far.
std::vector<Json> Events(const BackgroundProcess& watch) {
  std::vector<Json> events;
  for (absl::string_view line : absl::StrSplit(watch.out(), '\n', absl::SkipEmpty())) {
    Json event = Json::parse(line, nullptr, false);
    if (!event.is_discarded()) events.push_back(std::move(event));
  }
  return events;
}

// The health of device `id` in one Watch event, or "" if the event does not carry it.
std::string EventHealth(const Json& event, const std::string& id) {
  for (const auto& pod : event.value("podHealth", Json::array())) {
    for (const auto& container : pod.value("containers", Json::array())) {
      for (const auto& status : container.value("allocatedResourcesStatus", Json::array())) {
        for (const auto& device : status.value("resources", Json::array())) {
          if (device.value("resourceId", "") == id) return device.value("health", "");
        }
      }
    }
  }
  return "";
}

TEST(HealthTest, UnhealthyDeviceShowsInPodsListWatchAndMetrics) {
  DaemonHarness h;
  const std::string metrics = h.Path("metrics.sock").string();
  auto serve = h.StartServe({"--metrics-address", "unix:" + metrics});
  ASSERT_NE(serve, nullptr);
  auto plugin = h.StartPlugin(kGpu, 1, {"--id-prefix", "gpu"});
  ASSERT_TRUE(WaitFor([&] { return h.Allocatable(kGpu) == 1; }, 20s)) << plugin->err();
  ASSERT_EQ(h.Admit(PodManifest("pod-a", kGpu, 1)).exit_code, 0);
  EXPECT_EQ(ListedHealth(h, "pod-a"), "Healthy");

  // The watch sees the pod healthy in its snapshot before the device changes.
  BackgroundProcess watch({testing::DevmgrBinary(), "podresources", "watch", "--root-dir", h.Root(),
                           "-o", "json", "--count", "2"});
  ASSERT_TRUE(WaitFor([&] { return Events(watch).size() == 1; }, 20s)) << watch.err();
  EXPECT_EQ(EventHealth(Events(watch)[0], "gpu0"), "Healthy") << watch.out();

  plugin->Signal(SIGUSR1);
  ASSERT_TRUE(WaitFor([&] { return ListedHealth(h, "pod-a") == "Unhealthy"; }, 20s));
  const std::optional<int> watched = watch.Wait(20000ms);
  ASSERT_TRUE(watched.has_value()) << "no second event: " << watch.out();
  EXPECT_EQ(*watched, 0) << watch.err();
  const std::vector<Json> events = Events(watch);
  ASSERT_EQ(events.size(), 2u) << watch.out();
  EXPECT_EQ(events[1].value("kind", ""), "UPDATED");
  EXPECT_EQ(events[1].value("podUid", ""), "pod-a");
  EXPECT_EQ(EventHealth(events[1], "gpu0"), "Unhealthy") << watch.out();

  // The table a user reads, and the run options.
  testing::ProcessResult listed = h.Run({"pods", "list", "--root-dir", h.Root()});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_TRUE(absl::StrContains(listed.out, "HEALTH")) << listed.out;
  EXPECT_TRUE(absl::StrContains(listed.out, "gpu0=Unhealthy")) << listed.out;
  testing::ProcessResult options = h.Run({"pods", "options", "--root-dir", h.Root(), "pod-a", "c"});
  ASSERT_EQ(options.exit_code, 0) << options.err;
  EXPECT_TRUE(absl::StrContains(options.out, "example.com/gpu/gpu0=Unhealthy")) << options.out;

  absl::StatusOr<std::string> scraped = ScrapeMetrics(metrics);
  ASSERT_TRUE(scraped.ok()) << scraped.status();
  EXPECT_TRUE(absl::StrContains(*scraped, "devmgr_device_health_affected_containers_total 1\n"))
      << *scraped;
  EXPECT_TRUE(absl::StrContains(*scraped, "devmgr_device_health_updates_dropped_total 0\n"));

  // The plugin goes away: its device's health is no longer known.
  DaemonHarness::Stop(*plugin);
  EXPECT_TRUE(WaitFor([&] { return ListedHealth(h, "pod-a") == "Unknown"; }, 20s));
  DaemonHarness::Stop(*serve);
}

}  // namespace
}  // namespace devmgr
