// When the node's ResourceSlices are wiped: the start-up wipe of every driver, a driver's wipe a
// wiping delay after its last endpoint stopped being usable (cancelled when it comes back), the
// retries with upstream's backoff; the connection events behind "usable"; and upstream's
// TestRegistrationHandler/manage-resource-slices through dra::Manager.
#include "dra/slice_cleanup.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/plugin_channel.h"
#include "dra/connection_monitor.h"
#include "dra/driver_registry.h"
#include "dra/manager.h"
#include "tests/dra/fake_driver.h"
#include "tests/testlib/closing_peer.h"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::dra {
namespace {

using ::devmgr::testing::ClosingPeer;
using ::devmgr::testing::FakeClock;
using ::devmgr::testing::FakeDriver;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;

// FakeWiper: the node's ResourceSlices as a set of driver names, and every wipe asked for. The
// first `failures` calls fail with `failure`.
class FakeWiper final : public SliceWiper {
 public:
  absl::Status WipeResourceSlices(const std::string& driver_name) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back(driver_name);
    if (failures_ > 0) {
      --failures_;
      return failure_;
    }
    if (driver_name.empty()) {
      slices_.clear();
    } else {
      slices_.erase(driver_name);
    }
    return absl::OkStatus();
  }

  void Publish(const std::string& driver_name) {
    absl::MutexLock lock(&mu_);
    slices_.insert(driver_name);
  }
  void Fail(int times, absl::Status status) {
    absl::MutexLock lock(&mu_);
    failures_ = times;
    failure_ = std::move(status);
  }
  std::vector<std::string> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  std::set<std::string> slices() const {
    absl::MutexLock lock(&mu_);
    return slices_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> slices_ ABSL_GUARDED_BY(mu_);
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

using Calls = std::vector<std::string>;

class SliceCleanupTest : public ::testing::Test {
 protected:
  std::unique_ptr<SliceCleanup> Start() {
    SliceCleanupOptions options;
    options.wiper = &wiper_;
    options.clock = &clock_;
    options.random = [] { return 0.0; };
    return std::make_unique<SliceCleanup>(std::move(options));
  }
  // Advance moves the clock and lets the cleanup see it.
  void Advance(SliceCleanup& cleanup, absl::Duration d) {
    clock_.Advance(d);
    cleanup.Wake();
  }

  FakeClock clock_;
  FakeWiper wiper_;
};

TEST_F(SliceCleanupTest, StartUpWipesEveryDriver) {
  wiper_.Publish("gpu.example.com");
  std::unique_ptr<SliceCleanup> cleanup = Start();
  ASSERT_TRUE(WaitFor([&] { return wiper_.calls() == Calls{""}; }));
  EXPECT_TRUE(WaitFor([&] { return !cleanup->NextAttempt("").has_value(); }));
  EXPECT_TRUE(wiper_.slices().empty());
}

TEST_F(SliceCleanupTest, ADriverWithoutAConnectedEndpointIsWipedAfterTheDelay) {
  std::unique_ptr<SliceCleanup> cleanup = Start();
  ASSERT_TRUE(WaitFor([&] { return !cleanup->NextAttempt("").has_value(); }));
  wiper_.Publish("gpu.example.com");
  cleanup->DriverUsable("gpu.example.com", false);
  EXPECT_TRUE(cleanup->NextAttempt("gpu.example.com").has_value());
  Advance(*cleanup, absl::Seconds(20));
  // Not usable again: the first delay still applies, not a new one.
  cleanup->DriverUsable("gpu.example.com", false);
  Advance(*cleanup, absl::Seconds(9));
  EXPECT_EQ(wiper_.calls(), Calls{""});
  EXPECT_TRUE(cleanup->NextAttempt("gpu.example.com").has_value());
  Advance(*cleanup, absl::Seconds(1));
  ASSERT_TRUE(WaitFor([&] { return wiper_.calls() == (Calls{"", "gpu.example.com"}); }));
  EXPECT_TRUE(WaitFor([&] { return !cleanup->NextAttempt("gpu.example.com").has_value(); }));
  EXPECT_TRUE(wiper_.slices().empty());
}

// A driver that registers is not usable until its endpoint connects, a moment later: its wipe is
// scheduled then as well, but only a driver that was usable and is no longer is news at info.
// Before, every registration logged at info that the driver's slices would be wiped.
TEST_F(SliceCleanupTest, OnlyADriverThatWasUsableIsLoggedAsGoneAtInfo) {
  std::ostringstream log;
  auto logger = std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_level(spdlog::level::info);
  SliceCleanupOptions options;
  options.wiper = &wiper_;
  options.clock = &clock_;
  options.logger = logger;
  SliceCleanup cleanup(std::move(options));
  // The start-up wipe logs at info; once it is done the thread logs no more here.
  ASSERT_TRUE(WaitFor([&] { return !cleanup.NextAttempt("").has_value(); }));
  log.str("");
  cleanup.DriverUsable("gpu.example.com", false);
  EXPECT_TRUE(cleanup.NextAttempt("gpu.example.com").has_value());
  EXPECT_EQ(log.str(), "");
  cleanup.DriverUsable("gpu.example.com", true);
  cleanup.DriverUsable("gpu.example.com", false);
  EXPECT_NE(log.str().find("DRA driver has no connected endpoint"), std::string::npos) << log.str();
}

TEST_F(SliceCleanupTest, ADriverThatComesBackKeepsItsSlices) {
  std::unique_ptr<SliceCleanup> cleanup = Start();
  ASSERT_TRUE(WaitFor([&] { return !cleanup->NextAttempt("").has_value(); }));
  wiper_.Publish("gpu.example.com");
  cleanup->DriverUsable("gpu.example.com", false);
  Advance(*cleanup, absl::Seconds(29));
  cleanup->DriverUsable("gpu.example.com", true);
  EXPECT_FALSE(cleanup->NextAttempt("gpu.example.com").has_value());
  Advance(*cleanup, absl::Minutes(5));
  // A usable driver schedules nothing either.
  cleanup->DriverUsable("gpu.example.com", true);
  EXPECT_FALSE(cleanup->NextAttempt("gpu.example.com").has_value());
  EXPECT_EQ(wiper_.calls(), Calls{""});
  EXPECT_EQ(wiper_.slices(), std::set<std::string>{"gpu.example.com"});
}

// Upstream's backoff: 1 s, then twice as long each time (no jitter here); NotFound is done.
TEST_F(SliceCleanupTest, FailedWipesAreRetriedWithUpstreamsBackoff) {
  wiper_.Fail(3, absl::UnavailableError("apiserver down"));
  const absl::Time start = clock_.Now();
  std::unique_ptr<SliceCleanup> cleanup = Start();
  ASSERT_TRUE(WaitFor([&] { return wiper_.calls().size() == 1; }));
  absl::Time due = start;
  for (const auto& [wait, calls] : std::vector<std::pair<absl::Duration, size_t>>{
           {absl::Seconds(1), 2}, {absl::Seconds(2), 3}, {absl::Seconds(4), 4}}) {
    // The clock stands still between attempts: each failure is at the last one's due time.
    due += wait;
    ASSERT_TRUE(WaitFor([&] { return cleanup->NextAttempt("") == due; })) << "after " << wait;
    Advance(*cleanup, wait - absl::Milliseconds(1));
    EXPECT_EQ(wiper_.calls().size(), calls - 1) << "before " << wait;
    Advance(*cleanup, absl::Milliseconds(1));
    ASSERT_TRUE(WaitFor([&, calls = calls] { return wiper_.calls().size() == calls; }));
  }
  EXPECT_TRUE(WaitFor([&] { return !cleanup->NextAttempt("").has_value(); }));

  wiper_.Fail(1, absl::NotFoundError("no ResourceSlices"));
  cleanup->DriverUsable("gpu.example.com", false);
  Advance(*cleanup, kDefaultWipingDelay);
  ASSERT_TRUE(WaitFor([&] { return wiper_.calls().size() == 5; }));
  EXPECT_TRUE(WaitFor([&] { return !cleanup->NextAttempt("gpu.example.com").has_value(); }))
      << "NotFound: nothing to delete";
}

// The schedule ends once the wait would pass 5 minutes: 9 attempts, upstream's
// ExponentialBackoff with {1s, 2, 0.2, 100 steps, cap 5m}.
TEST_F(SliceCleanupTest, AWipeThatKeepsFailingIsGivenUpAfterNineAttempts) {
  wiper_.Fail(1000, absl::InternalError("boom"));
  std::unique_ptr<SliceCleanup> cleanup = Start();
  for (size_t attempts = 1; attempts <= 9; ++attempts) {
    ASSERT_TRUE(WaitFor([&] { return wiper_.calls().size() == attempts; })) << attempts;
    Advance(*cleanup, absl::Minutes(5));
  }
  EXPECT_TRUE(WaitFor([&] { return !cleanup->NextAttempt("").has_value(); }));
  Advance(*cleanup, absl::Hours(1));
  EXPECT_EQ(wiper_.calls().size(), 9u);
}

TEST_F(SliceCleanupTest, ADriverThatComesBackStopsTheRetries) {
  std::unique_ptr<SliceCleanup> cleanup = Start();
  ASSERT_TRUE(WaitFor([&] { return !cleanup->NextAttempt("").has_value(); }));
  wiper_.Fail(1000, absl::InternalError("boom"));
  cleanup->DriverUsable("gpu.example.com", false);
  Advance(*cleanup, kDefaultWipingDelay);
  ASSERT_TRUE(WaitFor([&] { return wiper_.calls().size() == 2; }));
  ASSERT_TRUE(cleanup->NextAttempt("gpu.example.com").has_value()) << "retrying";
  cleanup->DriverUsable("gpu.example.com", true);
  EXPECT_FALSE(cleanup->NextAttempt("gpu.example.com").has_value());
  Advance(*cleanup, absl::Minutes(10));
  EXPECT_EQ(wiper_.calls().size(), 2u);
}

// What the registry reports as usable follows the endpoint's connection: registered without a
// server (not usable), the driver starts serving (usable), stops (not usable), deregistered.
TEST(DriverRegistryUsableTest, ConnectionsOfEndpointsMakeADriverUsable) {
  TempDir dir;
  const std::string socket = dir.Sub("dra.sock").string();
  absl::Mutex mu;
  std::vector<bool> reports;
  DriverRegistryOptions options;
  options.on_usable_change = [&](const std::string& driver_name, bool usable) {
    EXPECT_EQ(driver_name, "gpu.example.com");
    absl::MutexLock lock(&mu);
    reports.push_back(usable);
  };
  DriverRegistry registry(std::move(options));
  auto last = [&]() -> std::optional<bool> {
    absl::MutexLock lock(&mu);
    if (reports.empty()) return std::nullopt;
    return reports.back();
  };
  ASSERT_TRUE(registry.RegisterPlugin("gpu.example.com", socket, {"v1.DRAPlugin"}).ok());
  EXPECT_EQ(last(), false);
  {
    FakeDriver driver(socket);
    ASSERT_TRUE(driver.started());
    ASSERT_TRUE(WaitFor([&] { return last() == true; }, std::chrono::seconds(30)));
  }
  ASSERT_TRUE(WaitFor([&] { return last() == false; }));
  FakeDriver again(socket);
  ASSERT_TRUE(again.started());
  ASSERT_TRUE(WaitFor([&] { return last() == true; }, std::chrono::seconds(30)))
      << "a driver that restarts is seen without a call";
  registry.DeRegisterPlugin("gpu.example.com", socket);
  EXPECT_EQ(last(), false);
}

// A channel ready when its watch starts is reported from the monitor's thread, as every later
// change is. Before, Watch reported it itself after letting go of its lock, so a change the
// monitor's thread saw meanwhile (the driver gone at once) could be reported first and then
// overtaken by that stale "ready", which stayed.
TEST(ConnectionMonitorTest, AChannelReadyAtTheStartIsReportedFromTheMonitorsThread) {
  TempDir dir;
  const std::string socket = dir.Sub("dra.sock").string();
  FakeDriver driver(socket);
  ASSERT_TRUE(driver.started());
  const std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  ASSERT_TRUE(
      channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(30)));
  absl::Mutex mu;
  std::vector<std::pair<bool, std::thread::id>> reports;
  ConnectionMonitor monitor;
  monitor.Watch(channel, socket, [&](bool ready) {
    absl::MutexLock lock(&mu);
    reports.emplace_back(ready, std::this_thread::get_id());
  });
  ASSERT_TRUE(WaitFor([&] {
    absl::MutexLock lock(&mu);
    return !reports.empty();
  }));
  absl::MutexLock lock(&mu);
  EXPECT_TRUE(reports[0].first);
  EXPECT_NE(reports[0].second, std::this_thread::get_id());
}

// A channel to `socket` that, once a connection failed, would wait an hour before the next.
std::shared_ptr<grpc::Channel> ChannelWithAnHoursBackoff(const std::string& socket) {
  grpc::ChannelArguments args = PluginChannelArguments();
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 3600 * 1000);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 3600 * 1000);
  return PluginChannel(socket, args);
}

// A driver that comes back is seen as soon as it listens, even while the channel would wait out
// a reconnect backoff (an hour here, where gRPC's grows to two minutes): before, its slices
// could be wiped after the wiping delay although it was back, and the newest of two endpoints
// passed over.
TEST(ConnectionMonitorTest, ADriverThatComesBackIsSeenDespiteTheBackoff) {
  TempDir dir;
  const std::string socket = dir.Sub("dra.sock").string();
  auto driver = std::make_unique<FakeDriver>(socket);
  ASSERT_TRUE(driver->started());
  const std::shared_ptr<grpc::Channel> channel = ChannelWithAnHoursBackoff(socket);
  absl::Mutex mu;
  std::vector<bool> reports;
  ConnectionMonitor monitor(absl::Milliseconds(20));
  monitor.Watch(channel, socket, [&](bool ready) {
    absl::MutexLock lock(&mu);
    reports.push_back(ready);
  });
  const auto reported = [&](std::vector<bool> want) {
    return WaitFor([&] {
      absl::MutexLock lock(&mu);
      return reports == want;
    });
  };
  ASSERT_TRUE(reported({true}));
  driver.reset();
  ASSERT_TRUE(reported({true, false}));
  // The monitor asks the idle channel to connect; that fails, and the backoff begins.
  ASSERT_TRUE(WaitFor([&] {
    return channel->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_TRANSIENT_FAILURE;
  }));
  driver = std::make_unique<FakeDriver>(socket);
  ASSERT_TRUE(driver->started());
  EXPECT_TRUE(reported({true, false, true}));
}

// A peer that accepts connections and closes them (a frozen driver, a process that is no gRPC
// server) has its backoff cut once, not at every check: the channel then tries it at gRPC's
// backoff (an hour here). Before, every check (here every 20 ms) sent it a test connection and
// a reconnect.
TEST(ConnectionMonitorTest, APeerThatNeverServesIsTriedAtTheBackoffAfterOneCut) {
  TempDir dir;
  const std::string socket = dir.Sub("dra.sock").string();
  ClosingPeer peer(socket);
  ASSERT_TRUE(peer.listening());
  const std::shared_ptr<grpc::Channel> channel = ChannelWithAnHoursBackoff(socket);
  ConnectionMonitor monitor(absl::Milliseconds(20));
  monitor.Watch(channel, socket, [](bool) {});
  // The first connection, the cut's test connection and its reconnect.
  ASSERT_TRUE(WaitFor([&] { return peer.accepted() >= 3; })) << peer.accepted();
  EXPECT_FALSE(WaitFor([&] { return peer.accepted() > 3; }, std::chrono::milliseconds(500)))
      << peer.accepted() << " connections";
}

// NoClaims: a ClaimSource for a manager that prepares nothing.
class NoClaims final : public ClaimSource {
 public:
  absl::StatusOr<ResourceClaim> GetClaim(const std::string&, const std::string&) override {
    return absl::NotFoundError("no claims here");
  }
};

// Upstream's TestRegistrationHandler/manage-resource-slices: the manager wipes every slice of
// the node at start; plugin B, registered beside plugin A, publishes a slice and deregisters:
// its slices are wiped after the (short) wiping delay, and so are A's, whose endpoint never
// connected.
TEST(SliceCleanupManagerTest, TestRegistrationHandlerManageResourceSlices) {
  TempDir dir;
  FakeWiper wiper;
  wiper.Publish("pluginA");
  NoClaims claims;
  ManagerOptions options;
  options.state_dir = dir.path();
  options.claims = &claims;
  options.slice_wiper = &wiper;
  options.wiping_delay = absl::Milliseconds(200);
  absl::StatusOr<std::unique_ptr<Manager>> manager = Manager::Create(std::move(options));
  ASSERT_TRUE(manager.ok()) << manager.status();
  ASSERT_TRUE(WaitFor([&] { return wiper.slices().empty(); }));
  EXPECT_EQ(wiper.calls(), Calls{""});

  DriverRegistry& drivers = (*manager)->drivers();
  ASSERT_TRUE(drivers.RegisterPlugin("pluginA", "/run/dra/endpointA", {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(drivers.ValidatePlugin("pluginB", "/run/dra/endpointB", {"v1.DRAPlugin"}).ok());
  ASSERT_TRUE(drivers.RegisterPlugin("pluginB", "/run/dra/endpointB", {"v1.DRAPlugin"}).ok());
  wiper.Publish("pluginB");
  drivers.DeRegisterPlugin("pluginB", "/run/dra/endpointB");
  drivers.DeRegisterPlugin("pluginB", "/run/dra/endpointB");  // a no-op
  ASSERT_TRUE(WaitFor([&] { return wiper.slices().empty(); }));
  ASSERT_TRUE(WaitFor([&] { return wiper.calls().size() == 3; }));
  std::vector<std::string> calls = wiper.calls();
  std::sort(calls.begin(), calls.end());
  EXPECT_EQ(calls, (Calls{"", "pluginA", "pluginB"}));
}

}  // namespace
}  // namespace devmgr::dra
