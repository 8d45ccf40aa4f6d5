// ManagerMetrics hooks and GetResourceSummaries against a real Manager and real gRPC fake
// plugins on temporary unix sockets: a registration is counted on arrival (refused ones too),
// each plugin Allocate call is timed per resource, every refused Allocate/AdmitPod gives one
// reason, checkpoint writes report success and failure, and endpoints go running -> stopped ->
// expired -> gone with their device counts.
#include "devicemanager/metrics.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/file_store.h"
#include "devicemanager/checkpoint_store_impl.h"
#include "devicemanager/manager_impl.h"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/pods.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::devicemanager {
namespace {

using ::devmgr::testing::FakeClock;
using ::devmgr::testing::FakeDevicePlugin;
using ::devmgr::testing::MakeContainer;
using ::devmgr::testing::MakeDevice;
using ::devmgr::testing::MakeDevices;
using ::devmgr::testing::MakePod;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;
using PluginPtr = std::unique_ptr<FakeDevicePlugin>;

constexpr char kResource1[] = "domain1.com/resource1";
constexpr char kResource2[] = "domain2.com/resource2";

// Records every call, for the test to inspect.
class RecordingMetrics final : public ManagerMetrics {
 public:
  void PluginRegistered(absl::string_view resource_name) override {
    absl::MutexLock lock(&mu_);
    registrations_.emplace_back(resource_name);
  }
  void AllocationDone(absl::string_view resource_name, absl::Duration duration) override {
    absl::MutexLock lock(&mu_);
    allocations_.emplace_back(std::string(resource_name), duration);
  }
  void AdmissionRefused(absl::string_view reason) override {
    absl::MutexLock lock(&mu_);
    refusals_.emplace_back(reason);
  }
  void CheckpointWritten(absl::Duration duration, bool ok) override {
    absl::MutexLock lock(&mu_);
    writes_.emplace_back(duration, ok);
  }

  std::vector<std::string> registrations() const {
    absl::MutexLock lock(&mu_);
    return registrations_;
  }
  std::vector<std::pair<std::string, absl::Duration>> allocations() const {
    absl::MutexLock lock(&mu_);
    return allocations_;
  }
  std::vector<std::string> refusals() const {
    absl::MutexLock lock(&mu_);
    return refusals_;
  }
  std::vector<std::pair<absl::Duration, bool>> writes() const {
    absl::MutexLock lock(&mu_);
    return writes_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> registrations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<std::string, absl::Duration>> allocations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> refusals_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<absl::Duration, bool>> writes_ ABSL_GUARDED_BY(mu_);
};

class ManagerMetricsTest : public ::testing::Test {
 protected:
  ManagerOptions Options() {
    ManagerOptions options;
    options.plugin_dir = dir_.path();
    options.clock = &clock_;
    options.dial_timeout = absl::Seconds(5);
    options.plugin_call_timeout = absl::Seconds(5);
    options.checkpoint_write_delay = absl::Milliseconds(1);
    options.metrics = &metrics_;
    options.checkpoint_store = &store_;
    return options;
  }

  void StartManager(ManagerOptions options) {
    manager_ = std::make_unique<ManagerImpl>(std::move(options));
    ASSERT_TRUE(
        manager_
            ->Start([this] { return std::vector<std::string>(active_.begin(), active_.end()); },
                    [] { return true; })
            .ok());
  }
  void StartManager() { StartManager(Options()); }

  // Starts a plugin, registers it and waits until the manager sees all its devices.
  PluginPtr StartPlugin(const std::string& socket_name, const std::string& resource,
                        std::vector<v1beta1::Device> devices,
                        FakeDevicePlugin::Options options = {}) {
    const size_t total = devices.size();
    auto plugin = std::make_unique<FakeDevicePlugin>(dir_.Sub(socket_name), resource,
                                                     std::move(devices), options);
    EXPECT_TRUE(plugin->Start().ok());
    EXPECT_TRUE(plugin->Register(manager_->KubeletSocket()).ok());
    EXPECT_TRUE(WaitFor(
        [&] { return manager_->GetCapacity().capacity[resource] == static_cast<int64_t>(total); }));
    return plugin;
  }

  TempDir dir_;
  FakeClock clock_;
  RecordingMetrics metrics_;
  std::atomic<bool> fail_writes_{false};
  // The checkpoint in dir_, as the manager keeps it by default, failing on demand.
  CheckpointStoreImpl store_{FileStore(dir_.path(), [this](FileStore::WriteStep step) {
    if (fail_writes_ && step == FileStore::WriteStep::kRename) {
      return absl::InternalError("injected write failure");
    }
    return absl::OkStatus();
  })};
  // Set before the manager starts; read by its active-pods function.
  std::set<std::string> active_ = {"pod1", "pod2", "pod3"};
  std::unique_ptr<ManagerImpl> manager_;
};

TEST_F(ManagerMetricsTest, CountsEveryRegisterRequestOnArrivalAsUpstream) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(1));
  // Refused (unsupported version), but counted: upstream counts before validating.
  EXPECT_FALSE(plugin->Register(manager_->KubeletSocket(), "v1alpha0", kResource2, "p1.sock").ok());
  EXPECT_EQ(metrics_.registrations(), (std::vector<std::string>{kResource1, kResource2}));
}

// A name that is not a resource name is refused uncounted and logged cut short: each distinct
// one would otherwise stay a metric series (of its own size) and write a log line of its size.
TEST_F(ManagerMetricsTest, ANameThatIsNotAResourceNameIsNeitherCountedNorLoggedWhole) {
  std::ostringstream log;
  ManagerOptions options = Options();
  options.logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  StartManager(std::move(options));
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(1));
  // Large enough to be cut in the log, small enough for the refusal's text to fit in gRPC's
  // trailers (a megabyte-long one is refused all the same; its client then reads gRPC's error).
  const std::string long_name = "x/" + std::string(4000, 'a');
  const absl::Status refused =
      plugin->Register(manager_->KubeletSocket(), "v1beta1", long_name, "p1.sock");
  EXPECT_TRUE(refused.message() == absl::StrCat("the ResourceName \"", long_name, "\" is invalid"))
      << "the answer is upstream's whole text: " << refused.message().substr(0, 100);
  EXPECT_EQ(metrics_.registrations(), (std::vector<std::string>{kResource1}));
  manager_.reset();  // it logs until it stops
  EXPECT_EQ(log.str().find(long_name), std::string::npos) << "the name was logged whole";
  EXPECT_NE(log.str().find("... (4032 bytes)"), std::string::npos) << log.str().substr(0, 2000);
}

TEST_F(ManagerMetricsTest, TimesEachAllocateCallPerResourceFailedOrNot) {
  StartManager();
  PluginPtr p1 = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  PluginPtr p2 = StartPlugin("p2.sock", kResource2, MakeDevices(1, "b"));
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}, {kResource2, 1}})});
  ASSERT_TRUE(manager_->Allocate(pod, pod.containers[0]).ok());
  p1->OnAllocate([](const v1beta1::AllocateRequest&, v1beta1::AllocateResponse*) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "broken");
  });
  Pod failing = MakePod("pod2", {MakeContainer("c", {{kResource1, 1}})});
  EXPECT_FALSE(manager_->Allocate(failing, failing.containers[0]).ok());

  const auto allocations = metrics_.allocations();
  ASSERT_EQ(allocations.size(), 3u);
  EXPECT_EQ(allocations[0].first, kResource1);
  EXPECT_EQ(allocations[1].first, kResource2);
  EXPECT_EQ(allocations[2].first, kResource1);
  for (const auto& [resource, duration] : allocations) {
    EXPECT_GT(duration, absl::ZeroDuration()) << resource;
    EXPECT_LT(duration, absl::Seconds(5)) << resource;
  }
  EXPECT_EQ(p1->allocate_calls(), 2);
}

TEST_F(ManagerMetricsTest, ReportsOneReasonPerRefusedAdmission) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  Pod pod1 = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  ASSERT_TRUE(manager_->Allocate(pod1, pod1.containers[0]).ok());
  EXPECT_TRUE(metrics_.refusals().empty());

  // Not in the pod.
  EXPECT_FALSE(manager_->Allocate(pod1, MakeContainer("other", {{kResource1, 1}})).ok());
  // More than what is free.
  Pod greedy = MakePod("pod2", {MakeContainer("c", {{kResource1, 2}})});
  EXPECT_TRUE(absl::IsResourceExhausted(manager_->Allocate(greedy, greedy.containers[0])));
  // The container holds one device, and now asks for two.
  Pod changed = MakePod("pod1", {MakeContainer("c", {{kResource1, 2}})});
  EXPECT_TRUE(absl::IsFailedPrecondition(manager_->Allocate(changed, changed.containers[0])));
  // The plugin fails.
  plugin->OnAllocate([](const v1beta1::AllocateRequest&, v1beta1::AllocateResponse*) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no");
  });
  Pod pod3 = MakePod("pod3", {MakeContainer("c", {{kResource1, 1}})});
  EXPECT_FALSE(manager_->Allocate(pod3, pod3.containers[0]).ok());
  plugin->OnAllocate(nullptr);
  // The checkpoint cannot be written.
  fail_writes_ = true;
  EXPECT_FALSE(manager_->Allocate(pod3, pod3.containers[0]).ok());
  fail_writes_ = false;
  // AdmitPod stops at its first refused container: one reason, not one per container.
  Pod two = MakePod("pod2",
                    {MakeContainer("a", {{kResource1, 1}}), MakeContainer("b", {{kResource1, 1}})});
  EXPECT_FALSE(manager_->AdmitPod(two).ok());
  // Not running any more.
  manager_->Stop();
  EXPECT_FALSE(manager_->Allocate(pod3, pod3.containers[0]).ok());

  EXPECT_EQ(metrics_.refusals(),
            (std::vector<std::string>{
                std::string(kRefusedNotFound), std::string(kRefusedNotEnoughDevices),
                std::string(kRefusedStaleAllocation), std::string(kRefusedPluginError),
                std::string(kRefusedCheckpointWrite), std::string(kRefusedNotEnoughDevices),
                std::string(kRefusedNotRunning)}));
}

TEST_F(ManagerMetricsTest, ReportsAbortedAndTimedOutAdmissions) {
  ManagerOptions options = Options();
  options.plugin_call_timeout = absl::Seconds(1);
  StartManager(options);
  FakeDevicePlugin::Options hang;
  hang.hang_allocate = true;
  PluginPtr hung = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"), hang);
  Pod pod = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  absl::Status first;
  std::thread thread([&] { first = manager_->Allocate(pod, pod.containers[0]); });
  ASSERT_TRUE(WaitFor([&] { return hung->allocate_calls() == 1; }));
  EXPECT_TRUE(absl::IsAborted(manager_->Allocate(pod, pod.containers[0])));
  thread.join();
  EXPECT_TRUE(absl::IsDeadlineExceeded(first)) << first;
  EXPECT_EQ(metrics_.refusals(), (std::vector<std::string>{std::string(kRefusedAborted),
                                                           std::string(kRefusedPluginError)}));
  // The call that timed out was timed too.
  ASSERT_EQ(metrics_.allocations().size(), 1u);
  EXPECT_GE(metrics_.allocations()[0].second, absl::Milliseconds(900));
}

TEST_F(ManagerMetricsTest, RefusesAResourceWhosePluginIsGoneAsNoPlugin) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  Pod pod1 = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  ASSERT_TRUE(manager_->Allocate(pod1, pod1.containers[0]).ok());
  plugin->Stop();
  ASSERT_TRUE(WaitFor([&] { return manager_->GetCapacity().allocatable[kResource1] == 0; }));
  clock_.Advance(kEndpointStopGracePeriod + absl::Seconds(1));
  ASSERT_EQ(manager_->GetCapacity().removed, (std::vector<std::string>{kResource1}));
  // pod1 still holds a device, so the resource is still a device-plugin resource.
  Pod pod2 = MakePod("pod2", {MakeContainer("c", {{kResource1, 1}})});
  EXPECT_TRUE(absl::IsNotFound(manager_->Allocate(pod2, pod2.containers[0])));
  EXPECT_EQ(metrics_.refusals(), (std::vector<std::string>{std::string(kRefusedNoPlugin)}));
}

TEST_F(ManagerMetricsTest, ReportsEachDurableCheckpointWrite) {
  StartManager();
  PluginPtr plugin = StartPlugin("p1.sock", kResource1, MakeDevices(2, "a"));
  // Allocate returns only once the checkpoint is durable, so its write has been reported.
  const size_t before = metrics_.writes().size();
  Pod pod1 = MakePod("pod1", {MakeContainer("c", {{kResource1, 1}})});
  ASSERT_TRUE(manager_->Allocate(pod1, pod1.containers[0]).ok());
  auto writes = metrics_.writes();
  ASSERT_GT(writes.size(), before);
  EXPECT_TRUE(writes.back().second);
  EXPECT_GT(writes.back().first, absl::ZeroDuration());

  fail_writes_ = true;
  Pod pod2 = MakePod("pod2", {MakeContainer("c", {{kResource1, 1}})});
  EXPECT_FALSE(manager_->Allocate(pod2, pod2.containers[0]).ok());
  writes = metrics_.writes();
  EXPECT_FALSE(writes.back().second);
}

TEST_F(ManagerMetricsTest, SummariesFollowEndpointStateAndDeviceHealth) {
  StartManager();
  EXPECT_TRUE(manager_->GetResourceSummaries().empty());
  PluginPtr p1 = StartPlugin("p1.sock", kResource1,
                             {MakeDevice("a0"), MakeDevice("a1"), MakeDevice("a2", false)});
  PluginPtr p2 = StartPlugin("p2.sock", kResource2, MakeDevices(1, "b"));
  EXPECT_EQ(manager_->GetResourceSummaries(),
            (std::vector<ResourceSummary>{{kResource1, EndpointState::kRunning, 2, 1},
                                          {kResource2, EndpointState::kRunning, 1, 0}}));

  // Gone: every device unhealthy, in its grace period, then past it, then removed.
  p1->Stop();
  ASSERT_TRUE(WaitFor([&] {
    return manager_->GetResourceSummaries()[0] ==
           ResourceSummary{kResource1, EndpointState::kStopped, 0, 3};
  }));
  clock_.Advance(kEndpointStopGracePeriod + absl::Seconds(1));
  EXPECT_EQ(manager_->GetResourceSummaries()[0],
            (ResourceSummary{kResource1, EndpointState::kExpired, 0, 3}));
  manager_->GetCapacity();
  EXPECT_EQ(manager_->GetResourceSummaries(),
            (std::vector<ResourceSummary>{{kResource2, EndpointState::kRunning, 1, 0}}));

  // Restored from the checkpoint: a stopped endpoint without devices until its plugin is back.
  manager_->Stop();
  StartManager();
  EXPECT_EQ(manager_->GetResourceSummaries(),
            (std::vector<ResourceSummary>{{kResource2, EndpointState::kStopped, 0, 0}}));
}

}  // namespace
}  // namespace devmgr::devicemanager
