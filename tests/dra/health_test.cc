// DRA device health (KEP-4680): the health cache and its `dra_health_state` file
// (healthinfo_test.go: TestNewHealthInfoCache, TestGetHealthInfo, TestGetHealthInfoRobust,
// TestUpdateHealthInfo, TestClearDriver), the conversions of manager_test.go
// (TestToDeviceHealthStatus, TestBuildDeviceHealth, TestToResourceHealthStatus,
// TestBuildResourceHealth, TestTruncateHealthMessage), the pod status
// (TestUpdateAllocatedResourcesStatus and its _Subrequest case), the choice of service
// (TestPickHealthService), and the NodeWatchResources stream against a fake driver
// (TestHandleWatchResourcesStream, TestUnimplementedHealthStreamIsNotRetried, reopening after
// the driver restarts, a prompt Stop).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/file_store.h"
#include "common/plugin_channel.h"
#include "dra/claim_health.h"
#include "dra/health_cache.h"
#include "dra/health_stream.h"
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

constexpr char kDriver[] = "test-driver";
constexpr char kPool[] = "test-pool";
constexpr char kDevice[] = "test-device";
constexpr char kNamespace[] = "test-namespace";
constexpr char kPodUid[] = "test-pod-uid";

DeviceHealth Health(absl::string_view pool, absl::string_view device, DeviceHealthStatus health,
                    absl::Duration timeout = kDefaultHealthTimeout,
                    absl::string_view message = "") {
  DeviceHealth result;
  result.pool_name = std::string(pool);
  result.device_name = std::string(device);
  result.health = health;
  result.health_check_timeout = timeout;
  result.message = std::string(message);
  return result;
}

// The test device, healthy, with the default timeout (upstream's testDeviceHealth).
DeviceHealth TestDeviceHealth() { return Health(kPool, kDevice, DeviceHealthStatus::kHealthy); }

// Compares change lists as upstream's assertDeviceHealthElementsMatchIgnoreTime: any order,
// LastUpdated ignored.
void ExpectChangedIgnoringTime(std::vector<DeviceHealth> expected,
                               std::vector<DeviceHealth> actual) {
  auto normalize = [](std::vector<DeviceHealth>& list) {
    for (DeviceHealth& device : list) device.last_updated = GoZeroTime();
    std::sort(list.begin(), list.end(), [](const DeviceHealth& a, const DeviceHealth& b) {
      return DeviceKey(a.pool_name, a.device_name) < DeviceKey(b.pool_name, b.device_name);
    });
  };
  normalize(expected);
  normalize(actual);
  EXPECT_EQ(actual, expected);
}

CheckpointDevice Device(absl::string_view pool, absl::string_view device,
                        GoStrings request_names = std::nullopt,
                        GoStrings cdi_device_ids = std::nullopt) {
  CheckpointDevice result;
  result.pool_name = std::string(pool);
  result.device_name = std::string(device);
  result.request_names = std::move(request_names);
  result.cdi_device_ids = std::move(cdi_device_ids);
  return result;
}

ClaimInfoState Claim(absl::string_view name, std::set<std::string> pods, absl::string_view driver,
                     std::vector<CheckpointDevice> devices) {
  ClaimInfoState claim;
  claim.claim_uid = absl::StrCat(name, "-uid");
  claim.claim_name = std::string(name);
  claim.namespace_name = kNamespace;
  claim.pod_uids = std::move(pods);
  claim.driver_state = std::map<std::string, DriverState>{};
  (*claim.driver_state)[std::string(driver)].devices = std::move(devices);
  return claim;
}

// --- The health cache (healthinfo_test.go). ---

HealthCacheOptions CacheOptions(const Clock* clock, std::filesystem::path state_dir = {}) {
  HealthCacheOptions options;
  options.clock = clock;
  options.state_dir = std::move(state_dir);
  return options;
}

// TestNewHealthInfoCache: a cache comes up with an (empty, hence broken) state file, and without
// a state folder at all.
TEST(HealthCacheTest, TestNewHealthInfoCache) {
  {
    SCOPED_TRACE("successfully created cache");
    TempDir dir;
    ASSERT_TRUE(FileStore(dir.path()).Write(kHealthStateName, "").ok());
    HealthCache cache(CacheOptions(nullptr, dir.path()));
    EXPECT_TRUE(cache.Snapshot().empty());
  }
  {
    SCOPED_TRACE("empty state file");
    HealthCache cache(HealthCacheOptions{});
    EXPECT_TRUE(cache.Snapshot().empty());
    // Without a folder nothing is written, and nothing fails.
    EXPECT_FALSE(cache.Update(kDriver, {TestDeviceHealth()}).empty());
    EXPECT_TRUE(cache.ClearDriver(kDriver).ok());
  }
}

// TestGetHealthInfo: Unknown before any report, the reported health after one, Unknown again
// once the report is older than the timeout.
TEST(HealthCacheTest, TestGetHealthInfo) {
  FakeClock clock;
  HealthCache cache(CacheOptions(&clock));
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kUnknown);

  cache.Update(kDriver, {TestDeviceHealth()});
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kHealthy);

  clock.Advance(kDefaultHealthTimeout + absl::Seconds(1));
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kUnknown);
}

// TestGetHealthInfoRobust: Get against a prepared state (written as a state file and loaded),
// with reports of various ages.
TEST(HealthCacheTest, TestGetHealthInfoRobust) {
  struct Case {
    const char* name;
    std::vector<std::pair<DeviceHealth, absl::Duration>> devices;  // health, age of its report
    std::string driver, pool, device;
    DeviceHealthStatus expected;
  };
  const DeviceHealth healthy = TestDeviceHealth();
  const DeviceHealth unhealthy = Health(kPool, kDevice, DeviceHealthStatus::kUnhealthy);
  const DeviceHealth device2 = Health(kPool, "device2", DeviceHealthStatus::kUnhealthy);
  const absl::Duration just_out = kDefaultHealthTimeout + absl::Seconds(1);
  const absl::Duration just_in = kDefaultHealthTimeout - absl::Seconds(1);
  const std::vector<Case> cases = {
      {"empty cache", {}, kDriver, kPool, kDevice, DeviceHealthStatus::kUnknown},
      {"device exists and is healthy",
       {{healthy, absl::ZeroDuration()}},
       kDriver,
       kPool,
       kDevice,
       DeviceHealthStatus::kHealthy},
      {"device exists and is unhealthy",
       {{unhealthy, absl::ZeroDuration()}},
       kDriver,
       kPool,
       kDevice,
       DeviceHealthStatus::kUnhealthy},
      {"device exists but timed out",
       {{healthy, just_out}},
       kDriver,
       kPool,
       kDevice,
       DeviceHealthStatus::kUnknown},
      {"device exists, just within timeout",
       {{healthy, just_in}},
       kDriver,
       kPool,
       kDevice,
       DeviceHealthStatus::kHealthy},
      {"device does not exist, just outside of timeout",
       {{healthy, just_out}},
       kDriver,
       kPool,
       "device2",
       DeviceHealthStatus::kUnknown},
      {"device does not exist",
       {{healthy, absl::ZeroDuration()}},
       kDriver,
       kPool,
       "device2",
       DeviceHealthStatus::kUnknown},
      {"driver does not exist",
       {{healthy, absl::ZeroDuration()}},
       "driver2",
       kPool,
       kDevice,
       DeviceHealthStatus::kUnknown},
      {"pool does not exist",
       {{healthy, absl::ZeroDuration()}},
       kDriver,
       "pool2",
       kDevice,
       DeviceHealthStatus::kUnknown},
      {"multiple devices",
       {{healthy, absl::ZeroDuration()}, {device2, absl::ZeroDuration()}},
       kDriver,
       kPool,
       "device2",
       DeviceHealthStatus::kUnhealthy},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.name);
    FakeClock clock;
    TempDir dir;
    DevicesHealthMap state;
    if (!test.devices.empty()) state[kDriver];
    for (auto [device, age] : test.devices) {
      device.last_updated = clock.Now() - age;
      state[kDriver][DeviceKey(device.pool_name, device.device_name)] = device;
    }
    ASSERT_TRUE(FileStore(dir.path()).Write(kHealthStateName, EncodeHealthState(state)).ok());
    HealthCache cache(CacheOptions(&clock, dir.path()));
    EXPECT_EQ(cache.Get(test.driver, test.pool, test.device).health, test.expected);
  }
}

// A timed-out device reads Unknown with its message gone and its names kept.
TEST(HealthCacheTest, TimedOutDeviceLosesItsMessage) {
  FakeClock clock;
  HealthCache cache(CacheOptions(&clock));
  cache.Update(kDriver, {Health(kPool, kDevice, DeviceHealthStatus::kUnhealthy,
                                kDefaultHealthTimeout, "ECC errors")});
  DeviceHealth fresh = cache.Get(kDriver, kPool, kDevice);
  EXPECT_EQ(fresh.message, "ECC errors");
  EXPECT_EQ(fresh.last_updated, clock.Now());
  clock.Advance(kDefaultHealthTimeout + absl::Nanoseconds(1));
  DeviceHealth stale = cache.Get(kDriver, kPool, kDevice);
  EXPECT_EQ(stale, Health(kPool, kDevice, DeviceHealthStatus::kUnknown, absl::ZeroDuration()));
}

// A device's own timeout replaces the default, both ways; zero (older files) means the default.
TEST(HealthCacheTest, PerDeviceTimeout) {
  FakeClock clock;
  HealthCache cache(CacheOptions(&clock));
  cache.Update(kDriver,
               {Health(kPool, "long", DeviceHealthStatus::kHealthy, absl::Seconds(120)),
                Health(kPool, "short", DeviceHealthStatus::kHealthy, absl::Seconds(5)),
                Health(kPool, "zero", DeviceHealthStatus::kHealthy, absl::ZeroDuration())});
  clock.Advance(absl::Seconds(6));
  EXPECT_EQ(cache.Get(kDriver, kPool, "short").health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(cache.Get(kDriver, kPool, "zero").health, DeviceHealthStatus::kHealthy);
  EXPECT_EQ(cache.Get(kDriver, kPool, "long").health, DeviceHealthStatus::kHealthy);
  clock.Advance(absl::Seconds(25));  // 31 s
  EXPECT_EQ(cache.Get(kDriver, kPool, "zero").health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(cache.Get(kDriver, kPool, "long").health, DeviceHealthStatus::kHealthy);
  clock.Advance(absl::Seconds(90));  // 121 s
  EXPECT_EQ(cache.Get(kDriver, kPool, "long").health, DeviceHealthStatus::kUnknown);
}

// TestUpdateHealthInfo: a new device, a repeat, a new health, a device left out past its
// timeout, persistence, and a timeout noticed by an empty report.
TEST(HealthCacheTest, TestUpdateHealthInfo) {
  FakeClock clock;
  TempDir dir;
  HealthCache cache(CacheOptions(&clock, dir.path()));

  // 1: a new device.
  std::vector<DeviceHealth> changed = cache.Update(kDriver, {TestDeviceHealth()});
  ExpectChangedIgnoringTime({TestDeviceHealth()}, changed);
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kHealthy);

  // 2: the same report again changes nothing.
  EXPECT_TRUE(cache.Update(kDriver, {TestDeviceHealth()}).empty());

  // 3: a new health.
  DeviceHealth new_health = TestDeviceHealth();
  new_health.health = DeviceHealthStatus::kUnhealthy;
  changed = cache.Update(kDriver, {new_health});
  ExpectChangedIgnoringTime({new_health}, changed);
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kUnhealthy);

  // 4: a second device, the first one left out after its timeout: it turns Unknown.
  clock.Advance(kDefaultHealthTimeout * 2);
  const DeviceHealth second = Health(kPool, "device2", DeviceHealthStatus::kHealthy);
  DeviceHealth first_as_unknown = new_health;
  first_as_unknown.health = DeviceHealthStatus::kUnknown;
  changed = cache.Update(kDriver, {second});
  ExpectChangedIgnoringTime({second, first_as_unknown}, changed);
  EXPECT_EQ(cache.Get(kDriver, kPool, "device2").health, DeviceHealthStatus::kHealthy);
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kUnknown);

  // 5: persistence.
  HealthCache cache2(CacheOptions(&clock, dir.path()));
  EXPECT_EQ(cache2.Get(kDriver, kPool, "device2").health, DeviceHealthStatus::kHealthy);
  EXPECT_EQ(cache2.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(cache2.Snapshot(), cache.Snapshot());

  // 6: an empty report notices a device that timed out.
  const DeviceHealth timeout_device =
      Health(kPool, "timeoutDevice", DeviceHealthStatus::kUnhealthy);
  cache.Update(kDriver, {timeout_device});
  clock.Advance(kDefaultHealthTimeout + absl::Seconds(1));
  changed = cache.Update(kDriver, {});
  // device2 timed out as well in the meantime.
  DeviceHealth timeout_as_unknown = timeout_device;
  timeout_as_unknown.health = DeviceHealthStatus::kUnknown;
  DeviceHealth second_as_unknown = second;
  second_as_unknown.health = DeviceHealthStatus::kUnknown;
  ExpectChangedIgnoringTime({timeout_as_unknown, second_as_unknown}, changed);
  EXPECT_EQ(cache.Snapshot()[kDriver][DeviceKey(kPool, "timeoutDevice")].health,
            DeviceHealthStatus::kUnknown);
}

// What a driver reports cannot grow the cache (and the file, written whole at each change)
// without bound: a message is kept cut as the pod status carries it, and devices beyond
// kMaxHealthDevicesPerDriver that the cache does not know yet are left out; the ones it knows
// are still updated.
TEST(HealthCacheTest, AReportKeepsItsMessagesCutAndItsDevicesBounded) {
  FakeClock clock;
  HealthCache cache(CacheOptions(&clock));
  DeviceHealth wordy = TestDeviceHealth();
  wordy.message = std::string(50'000, 'x');
  cache.Update(kDriver, {wordy});
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).message, TruncateHealthMessage(wordy.message));
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).message.size(), kMaxHealthMessageBytes);

  std::vector<DeviceHealth> many;
  for (size_t i = 0; i < kMaxHealthDevicesPerDriver + 10; ++i) {
    many.push_back(Health(kPool, absl::StrCat("dev-", i), DeviceHealthStatus::kHealthy));
  }
  cache.Update(kDriver, many);
  EXPECT_EQ(cache.Snapshot().at(kDriver).size(), kMaxHealthDevicesPerDriver);
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kHealthy)
      << "a device already known is kept";
  DeviceHealth known = TestDeviceHealth();
  known.health = DeviceHealthStatus::kUnhealthy;
  EXPECT_EQ(cache.Update(kDriver, {known}).size(), 1u) << "and still updated";
  // Another driver has room of its own.
  cache.Update("other-driver", {Health(kPool, "dev-0", DeviceHealthStatus::kHealthy)});
  EXPECT_EQ(cache.Get("other-driver", kPool, "dev-0").health, DeviceHealthStatus::kHealthy);

  // Devices no longer reported turn Unknown after their timeout and then make room: a driver
  // that renamed its devices gets health for the new names.
  clock.Advance(kDefaultHealthTimeout * 2);
  const DeviceHealth renamed = Health(kPool, "renamed", DeviceHealthStatus::kHealthy);
  cache.Update(kDriver, {renamed});
  EXPECT_EQ(cache.Get(kDriver, kPool, "dev-0").health, DeviceHealthStatus::kUnknown);
  cache.Update(kDriver, {renamed});
  EXPECT_EQ(cache.Get(kDriver, kPool, "renamed").health, DeviceHealthStatus::kHealthy);
  EXPECT_EQ(cache.Snapshot().at(kDriver).size(), 1u);
}

// A changed message or timeout is a change too; a device already Unknown does not change again.
TEST(HealthCacheTest, MessageAndTimeoutChangesAreChanges) {
  FakeClock clock;
  HealthCache cache(CacheOptions(&clock));
  cache.Update(kDriver, {TestDeviceHealth()});
  DeviceHealth with_message = TestDeviceHealth();
  with_message.message = "temperature high";
  ExpectChangedIgnoringTime({with_message}, cache.Update(kDriver, {with_message}));
  DeviceHealth with_timeout = with_message;
  with_timeout.health_check_timeout = absl::Seconds(60);
  ExpectChangedIgnoringTime({with_timeout}, cache.Update(kDriver, {with_timeout}));

  DeviceHealth unknown = Health(kPool, "other", DeviceHealthStatus::kUnknown);
  cache.Update(kDriver, {with_timeout, unknown});
  clock.Advance(absl::Minutes(5));
  DeviceHealth timed_out = with_timeout;
  timed_out.health = DeviceHealthStatus::kUnknown;
  timed_out.message.clear();
  ExpectChangedIgnoringTime({timed_out}, cache.Update(kDriver, {}));
  EXPECT_TRUE(cache.Update(kDriver, {}).empty());
}

// TestClearDriver: a cleared driver's devices read Unknown, in memory and in the file.
TEST(HealthCacheTest, TestClearDriver) {
  FakeClock clock;
  TempDir dir;
  HealthCache cache(CacheOptions(&clock, dir.path()));
  cache.Update(kDriver, {TestDeviceHealth()});
  cache.Update("other-driver", {TestDeviceHealth()});
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kHealthy);

  ASSERT_TRUE(cache.ClearDriver(kDriver).ok());
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(cache.Get("other-driver", kPool, kDevice).health, DeviceHealthStatus::kHealthy);
  HealthCache reloaded(CacheOptions(&clock, dir.path()));
  EXPECT_EQ(reloaded.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kUnknown);
  EXPECT_EQ(reloaded.Get("other-driver", kPool, kDevice).health, DeviceHealthStatus::kHealthy);
  // Clearing an unknown driver is fine.
  EXPECT_TRUE(cache.ClearDriver("never-seen").ok());
}

// The file is the kubelet's: Go's field names and order, times in RFC 3339, the timeout in
// nanoseconds, map keys sorted, Go's escaping.
TEST(HealthCacheTest, StateFileFormat) {
  FakeClock clock;  // 2023-11-14T22:13:20Z
  TempDir dir;
  HealthCache cache(CacheOptions(&clock, dir.path()));
  cache.Update(kDriver,
               {TestDeviceHealth(), Health("a-pool", "d<1>", DeviceHealthStatus::kUnhealthy,
                                           absl::Seconds(90), "fan & \"pump\"")});
  absl::StatusOr<std::string> bytes = FileStore(dir.path()).Read(kHealthStateName);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes,
            "{\"test-driver\":{\"Devices\":{"
            "\"a-pool/d\\u003c1\\u003e\":{\"PoolName\":\"a-pool\",\"DeviceName\":"
            "\"d\\u003c1\\u003e\",\"Health\":\"Unhealthy\",\"LastUpdated\":"
            "\"2023-11-14T22:13:20Z\",\"HealthCheckTimeout\":90000000000,\"Message\":"
            "\"fan \\u0026 \\\"pump\\\"\"},"
            "\"test-pool/test-device\":{\"PoolName\":\"test-pool\",\"DeviceName\":"
            "\"test-device\",\"Health\":\"Healthy\",\"LastUpdated\":\"2023-11-14T22:13:20Z\","
            "\"HealthCheckTimeout\":30000000000,\"Message\":\"\"}}}}");
  ASSERT_TRUE(cache.ClearDriver(kDriver).ok());
  EXPECT_EQ(*FileStore(dir.path()).Read(kHealthStateName), "{}");
}

// What a kubelet writes reads back: its local zone and nanoseconds, the zero time, an older
// file without timeouts or messages, null maps, and field names in another case.
TEST(HealthCacheTest, DecodesKubeletFiles) {
  absl::StatusOr<DevicesHealthMap> state = DecodeHealthState(
      R"({"gpu.example.com":{"Devices":{"pool/gpu-0":{"PoolName":"pool","DeviceName":"gpu-0",)"
      R"("Health":"Unhealthy","LastUpdated":"2025-07-01T12:00:00.123456789+02:00",)"
      R"("HealthCheckTimeout":45000000000,"Message":"xid 79"},)"
      R"("pool/gpu-1":{"PoolName":"pool","DeviceName":"gpu-1","Health":"Healthy",)"
      R"("LastUpdated":"0001-01-01T00:00:00Z"},"pool/gpu-2":null,)"
      R"("pool/gpu-3":{"poolname":"pool","DEVICENAME":"gpu-3","health":"Bogus","extra":1}}},)"
      R"("old.example.com":{"Devices":null},"older.example.com":null})");
  ASSERT_TRUE(state.ok()) << state.status();
  const auto& gpus = (*state)["gpu.example.com"];
  ASSERT_EQ(gpus.size(), 4u);
  DeviceHealth gpu0 =
      Health("pool", "gpu-0", DeviceHealthStatus::kUnhealthy, absl::Seconds(45), "xid 79");
  gpu0.last_updated = absl::FromUnixSeconds(1751364000) + absl::Nanoseconds(123456789);
  EXPECT_EQ(gpus.at("pool/gpu-0"), gpu0);
  DeviceHealth gpu1 = Health("pool", "gpu-1", DeviceHealthStatus::kHealthy, absl::ZeroDuration());
  EXPECT_EQ(gpus.at("pool/gpu-1"), gpu1);
  EXPECT_EQ(gpus.at("pool/gpu-2"), DeviceHealth{});
  EXPECT_EQ(gpus.at("pool/gpu-3"),
            Health("pool", "gpu-3", DeviceHealthStatus::kUnknown, absl::ZeroDuration()));
  EXPECT_TRUE((*state)["old.example.com"].empty());
  EXPECT_TRUE(state->contains("older.example.com"));

  // Written again in UTC, the fraction kept.
  DevicesHealthMap one;
  one["d"]["pool/gpu-0"] = gpu0;
  EXPECT_NE(EncodeHealthState(one).find("\"LastUpdated\":\"2025-07-01T10:00:00.123456789Z\""),
            std::string::npos);
  gpu0.last_updated = absl::FromUnixSeconds(1751364000) + absl::Milliseconds(500);
  one["d"]["pool/gpu-0"] = gpu0;
  EXPECT_NE(EncodeHealthState(one).find("\"LastUpdated\":\"2025-07-01T10:00:00.5Z\""),
            std::string::npos);
  one["d"]["pool/gpu-0"].last_updated = GoZeroTime();
  EXPECT_NE(EncodeHealthState(one).find("\"LastUpdated\":\"0001-01-01T00:00:00Z\""),
            std::string::npos);

  // Round trip.
  absl::StatusOr<DevicesHealthMap> again = DecodeHealthState(EncodeHealthState(*state));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *state);
  EXPECT_TRUE(DecodeHealthState("null")->empty());
}

// A broken file is logged and ignored: the cache starts empty and writes a good file on the
// next change.
TEST(HealthCacheTest, BrokenStateFileIsIgnored) {
  const std::vector<std::string> broken = {
      "",
      "{",
      "[]",
      "\"text\"",
      R"({"d":{"Devices":{"p/x":{"Health":1}}}})",
      R"({"d":{"Devices":{"p/x":{"LastUpdated":"yesterday"}}}})",
      // What absl::ParseTime takes and Go's decoder does not: an infinite time never ages, and
      // was written back as a year Go cannot read.
      R"({"d":{"Devices":{"p/x":{"LastUpdated":"infinite-future"}}}})",
      R"({"d":{"Devices":{"p/x":{"LastUpdated":"infinite-past"}}}})",
      R"({"d":{"Devices":{"p/x":{"LastUpdated":" 2025-07-01T12:00:00Z"}}}})",
      R"({"d":{"Devices":{"p/x":{"LastUpdated":"2025-07-01T12:00:00Z "}}}})",
      R"({"d":{"Devices":{"p/x":{"LastUpdated":"12025-07-01T12:00:00Z"}}}})",
      R"({"d":{"Devices":{"p/x":{"LastUpdated":"2025-7-1T1:2:3Z"}}}})",
      R"({"d":{"Devices":{"p/x":{"LastUpdated":"2025-07-01t12:00:00Z"}}}})",
      R"({"d":{"Devices":{"p/x":{"LastUpdated":"2025-07-01T12:00:00.Z"}}}})",
      R"({"d":{"Devices":{"p/x":{"LastUpdated":"2025-07-01T12:00:00+0200"}}}})",
      R"({"d":{"Devices":{"p/x":{"HealthCheckTimeout":1.5}}}})",
      R"({"d":{"Devices":[]}})",
      R"({"d":[]})",
  };
  for (const std::string& bytes : broken) {
    SCOPED_TRACE(bytes);
    EXPECT_FALSE(DecodeHealthState(bytes).ok());
    FakeClock clock;
    TempDir dir;
    ASSERT_TRUE(FileStore(dir.path()).Write(kHealthStateName, bytes).ok());
    HealthCache cache(CacheOptions(&clock, dir.path()));
    EXPECT_TRUE(cache.Snapshot().empty());
    cache.Update(kDriver, {TestDeviceHealth()});
    HealthCache reloaded(CacheOptions(&clock, dir.path()));
    EXPECT_EQ(reloaded.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kHealthy);
  }
}

// A failed write keeps the news in memory and says so.
TEST(HealthCacheTest, FailedWriteKeepsTheCache) {
  FakeClock clock;
  TempDir dir;
  HealthCacheOptions options = CacheOptions(&clock, dir.path());
  options.fault_hook = [](FileStore::WriteStep step) {
    return step == FileStore::WriteStep::kRename ? absl::InternalError("disk full")
                                                 : absl::OkStatus();
  };
  HealthCache cache(std::move(options));
  absl::Status written;
  EXPECT_EQ(cache.Update(kDriver, {TestDeviceHealth()}, &written).size(), 1u);
  EXPECT_FALSE(written.ok());
  EXPECT_EQ(cache.Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kHealthy);
  EXPECT_FALSE(cache.ClearDriver(kDriver).ok());
  EXPECT_FALSE(FileStore(dir.path()).Read(kHealthStateName).ok());
}

// --- Conversions (manager_test.go). ---

TEST(HealthConversionTest, TestToDeviceHealthStatus) {
  EXPECT_EQ(ToDeviceHealthStatus(healthapi::HEALTHY), DeviceHealthStatus::kHealthy);
  EXPECT_EQ(ToDeviceHealthStatus(healthapi::UNHEALTHY), DeviceHealthStatus::kUnhealthy);
  EXPECT_EQ(ToDeviceHealthStatus(healthapi::UNKNOWN), DeviceHealthStatus::kUnknown);
  // A value from a newer API.
  EXPECT_EQ(ToDeviceHealthStatus(static_cast<healthapi::HealthStatus>(99)),
            DeviceHealthStatus::kUnknown);
}

TEST(HealthConversionTest, TestBuildDeviceHealth) {
  struct Case {
    const char* name;
    healthapi::HealthStatus health;
    int64_t timeout_seconds;
    const char* message;
    DeviceHealth expected;
  };
  const std::vector<Case> cases = {
      {"healthy with custom timeout", healthapi::HEALTHY, 60, "",
       Health("pool-a", "dev-1", DeviceHealthStatus::kHealthy, absl::Seconds(60))},
      {"unhealthy with message", healthapi::UNHEALTHY, 0, "ECC error",
       Health("pool-a", "dev-1", DeviceHealthStatus::kUnhealthy, kDefaultHealthTimeout,
              "ECC error")},
      {"zero timeout uses default", healthapi::HEALTHY, 0, "",
       Health("pool-a", "dev-1", DeviceHealthStatus::kHealthy, kDefaultHealthTimeout)},
      {"negative timeout uses default", healthapi::UNKNOWN, -5, "",
       Health("pool-a", "dev-1", DeviceHealthStatus::kUnknown, kDefaultHealthTimeout)},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.name);
    healthapi::DeviceHealth wire;
    wire.mutable_device()->set_pool_name("pool-a");
    wire.mutable_device()->set_device_name("dev-1");
    wire.set_health(test.health);
    wire.set_last_updated_time(1'700'000'123);
    wire.set_health_check_timeout_seconds(test.timeout_seconds);
    wire.set_message(test.message);
    DeviceHealth expected = test.expected;
    expected.last_updated = absl::FromUnixSeconds(1'700'000'123);
    EXPECT_EQ(BuildDeviceHealth(wire, kDriver), expected);
  }
}

TEST(HealthConversionTest, TestToResourceHealthStatus) {
  EXPECT_EQ(ToResourceHealthStatus(DeviceHealthStatus::kHealthy), ResourceHealthStatus::kHealthy);
  EXPECT_EQ(ToResourceHealthStatus(DeviceHealthStatus::kUnhealthy),
            ResourceHealthStatus::kUnhealthy);
  EXPECT_EQ(ToResourceHealthStatus(DeviceHealthStatus::kUnknown), ResourceHealthStatus::kUnknown);
  EXPECT_EQ(ResourceHealthStatusName(ResourceHealthStatus::kHealthy), "Healthy");
  EXPECT_EQ(ResourceHealthStatusName(ResourceHealthStatus::kUnhealthy), "Unhealthy");
  EXPECT_EQ(ResourceHealthStatusName(ResourceHealthStatus::kUnknown), "Unknown");
}

TEST(HealthConversionTest, TestBuildResourceHealth) {
  const DeviceHealth healthy = TestDeviceHealth();
  const DeviceHealth unhealthy =
      Health(kPool, kDevice, DeviceHealthStatus::kUnhealthy, kDefaultHealthTimeout, "ECC error");
  {
    SCOPED_TRACE("CDI device ID: the first one");
    ResourceHealth got = BuildResourceHealth(
        kDriver, Device(kPool, kDevice, std::nullopt, GoStrings({"vendor.com/gpu=gpu0", "x=y"})),
        healthy);
    EXPECT_EQ(got, (ResourceHealth{"vendor.com/gpu=gpu0", ResourceHealthStatus::kHealthy, {}}));
  }
  {
    SCOPED_TRACE("no CDI device ID: driver/pool/device");
    EXPECT_EQ(BuildResourceHealth(kDriver, Device(kPool, kDevice), healthy).resource_id,
              "test-driver/test-pool/test-device");
    EXPECT_EQ(
        BuildResourceHealth(kDriver, Device(kPool, kDevice, std::nullopt, GoStrings({})), healthy)
            .resource_id,
        "test-driver/test-pool/test-device");
  }
  {
    SCOPED_TRACE("with message");
    EXPECT_EQ(BuildResourceHealth(kDriver, Device(kPool, kDevice), unhealthy),
              (ResourceHealth{"test-driver/test-pool/test-device", ResourceHealthStatus::kUnhealthy,
                              "ECC error"}));
  }
  {
    SCOPED_TRACE("messages not reported");
    EXPECT_EQ(BuildResourceHealth(kDriver, Device(kPool, kDevice), unhealthy, false).message,
              std::nullopt);
  }
  {
    SCOPED_TRACE("long message truncated");
    DeviceHealth loud = unhealthy;
    loud.message = std::string(2000, 'x');
    EXPECT_EQ(BuildResourceHealth(kDriver, Device(kPool, kDevice), loud).message,
              std::string(1021, 'x') + "...");
  }
  {
    SCOPED_TRACE("unknown health");
    EXPECT_EQ(BuildResourceHealth(kDriver, Device(kPool, kDevice), DeviceHealth{}).health,
              ResourceHealthStatus::kUnknown);
  }
}

TEST(HealthConversionTest, TestTruncateHealthMessage) {
  EXPECT_EQ(TruncateHealthMessage(""), "");
  EXPECT_EQ(TruncateHealthMessage("short message"), "short message");
  const std::string at_limit(kMaxHealthMessageBytes, 'a');
  EXPECT_EQ(TruncateHealthMessage(at_limit), at_limit);
  const std::string over(kMaxHealthMessageBytes + 1, 'a');
  EXPECT_EQ(TruncateHealthMessage(over), std::string(1021, 'a') + "...");
  EXPECT_EQ(TruncateHealthMessage(over).size(), kMaxHealthMessageBytes);
  EXPECT_EQ(TruncateHealthMessage(std::string(100000, 'b')), std::string(1021, 'b') + "...");
  // A two-byte character across the cut is dropped whole.
  const std::string utf8 = std::string(1020, 'c') + "\xC3\xA9" + std::string(10, 'c');
  EXPECT_EQ(TruncateHealthMessage(utf8), std::string(1020, 'c') + "...");
}

TEST(HealthServiceTest, TestPickHealthService) {
  EXPECT_EQ(PickHealthService({"v1beta1.DRAPlugin"}), "");
  EXPECT_EQ(PickHealthService({}), "");
  EXPECT_EQ(PickHealthService({"v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"}),
            "v1alpha1.DRAResourceHealth");
  EXPECT_EQ(PickHealthService({"v1.DRAPlugin", "v1.DRAResourceHealth"}), "v1.DRAResourceHealth");
  EXPECT_EQ(PickHealthService({"v1alpha1.DRAResourceHealth", "v1.DRAResourceHealth"}),
            "v1.DRAResourceHealth");
}

// --- The pod status (manager_test.go TestUpdateAllocatedResourcesStatus). ---

Pod PodWithClaim(absl::string_view uid, PodResourceClaim pod_claim,
                 std::optional<std::string> generated_name, std::vector<ContainerClaim> claims) {
  Pod pod;
  pod.uid = std::string(uid);
  pod.namespace_name = kNamespace;
  pod.name = "pod";
  if (generated_name.has_value()) {
    pod.resource_claim_statuses.push_back({pod_claim.name, generated_name});
  }
  pod.resource_claims.push_back(std::move(pod_claim));
  pod.containers.push_back({"container1", std::move(claims), {}});
  return pod;
}

// Direct, renamed and templated claims: the entry is named after the pod's claim, the devices
// come from the ResourceClaim it resolves to.
TEST(ClaimHealthTest, TestUpdateAllocatedResourcesStatus) {
  struct Case {
    const char* name;
    Pod pod;
    ClaimInfoState claim;
    std::vector<ResourceStatus> expected;
  };
  const std::vector<Case> cases = {
      {"Direct claim",
       PodWithClaim("pod-direct-uid", {"claim1", "direct-claim-name", std::nullopt}, std::nullopt,
                    {{"claim1", ""}}),
       Claim("direct-claim-name", {"pod-direct-uid"}, kDriver, {Device("pool", "dev-a")}),
       {{"claim:claim1",
         {{"test-driver/pool/dev-a", ResourceHealthStatus::kHealthy, std::nullopt}}}}},
      {"Renamed claim",
       PodWithClaim("pod-renamed-uid", {"renamed-pod-claim", "renamed-claim-object", std::nullopt},
                    "renamed-claim-object", {{"renamed-pod-claim", ""}}),
       Claim("renamed-claim-object", {"pod-renamed-uid"}, kDriver, {Device("pool", "dev-b")}),
       {{"claim:renamed-pod-claim",
         {{"test-driver/pool/dev-b", ResourceHealthStatus::kHealthy, std::nullopt}}}}},
      {"Templated claim",
       PodWithClaim("pod-templated-uid", {"templated-claim", std::nullopt, "template-name"},
                    "pod-templated-templated-claim", {{"templated-claim", ""}}),
       Claim("pod-templated-templated-claim", {"pod-templated-uid"}, kDriver,
             {Device("pool", "dev-c")}),
       {{"claim:templated-claim",
         {{"test-driver/pool/dev-c", ResourceHealthStatus::kHealthy, std::nullopt}}}}},
  };
  for (const Case& test : cases) {
    SCOPED_TRACE(test.name);
    FakeClock clock;
    HealthCache cache(CacheOptions(&clock));
    std::vector<DeviceHealth> devices;
    for (const CheckpointDevice& device : *test.claim.driver_state->at(kDriver).devices) {
      devices.push_back(Health(device.pool_name, device.device_name, DeviceHealthStatus::kHealthy));
    }
    cache.Update(kDriver, devices);
    std::vector<ResourceStatus> statuses;
    UpdateAllocatedResourcesStatus(
        statuses,
        BuildContainerResourceStatuses(test.pod, test.pod.containers[0], {test.claim}, cache));
    EXPECT_EQ(statuses, test.expected);
  }
}

// A container that names a request gets the devices of that request only, those a
// prioritized list chose for one of its subrequests ("req/sub") included, under
// "claim:<claim>/<request>"; one that names none gets every device.
TEST(ClaimHealthTest, TestUpdateAllocatedResourcesStatus_Subrequest) {
  Pod pod = PodWithClaim("pod-uid", {"my-claim", "claim-object", std::nullopt}, std::nullopt,
                         {{"my-claim", "gpu"}});
  pod.containers.push_back({"container2", {{"my-claim", "nic"}}, {}});
  pod.containers.push_back({"container3", {{"my-claim", ""}}, {}});
  const ClaimInfoState claim =
      Claim("claim-object", {"pod-uid"}, kDriver,
            {Device("pool", "gpu-0", GoStrings({"gpu/large"}), GoStrings({"vendor.com/gpu=gpu-0"})),
             Device("pool", "nic-0", GoStrings({"nic"})), Device("pool", "shared", std::nullopt)});
  FakeClock clock;
  HealthCache cache(CacheOptions(&clock));
  cache.Update(kDriver, {Health("pool", "gpu-0", DeviceHealthStatus::kUnhealthy,
                                kDefaultHealthTimeout, "xid 79"),
                         Health("pool", "nic-0", DeviceHealthStatus::kHealthy)});

  EXPECT_EQ(BuildContainerResourceStatuses(pod, pod.containers[0], {claim}, cache),
            (std::vector<ResourceStatus>{
                {"claim:my-claim/gpu",
                 {{"vendor.com/gpu=gpu-0", ResourceHealthStatus::kUnhealthy, "xid 79"},
                  {"test-driver/pool/shared", ResourceHealthStatus::kUnknown, std::nullopt}}}}));
  EXPECT_EQ(BuildContainerResourceStatuses(pod, pod.containers[1], {claim}, cache),
            (std::vector<ResourceStatus>{
                {"claim:my-claim/nic",
                 {{"test-driver/pool/nic-0", ResourceHealthStatus::kHealthy, std::nullopt},
                  {"test-driver/pool/shared", ResourceHealthStatus::kUnknown, std::nullopt}}}}));
  EXPECT_EQ(BuildContainerResourceStatuses(pod, pod.containers[2], {claim}, cache),
            (std::vector<ResourceStatus>{
                {"claim:my-claim",
                 {{"vendor.com/gpu=gpu-0", ResourceHealthStatus::kUnhealthy, "xid 79"},
                  {"test-driver/pool/nic-0", ResourceHealthStatus::kHealthy, std::nullopt},
                  {"test-driver/pool/shared", ResourceHealthStatus::kUnknown, std::nullopt}}}}));
  // A request whose name only starts like another's is not its parent.
  Pod other = pod;
  other.containers[0].claims[0].request = "gp";
  EXPECT_EQ(BuildContainerResourceStatuses(other, other.containers[0], {claim}, cache),
            (std::vector<ResourceStatus>{
                {"claim:my-claim/gp",
                 {{"test-driver/pool/shared", ResourceHealthStatus::kUnknown, std::nullopt}}}}));
  // Upstream's "subrequest matches base name": a container that names a subrequest gets the
  // devices its driver reported for the request (drivers strip the subrequest). Before, it got
  // none of them.
  Pod sub = pod;
  sub.containers[1].claims[0].request = "nic/fast";
  EXPECT_EQ(BuildContainerResourceStatuses(sub, sub.containers[1], {claim}, cache),
            (std::vector<ResourceStatus>{
                {"claim:my-claim/nic/fast",
                 {{"test-driver/pool/nic-0", ResourceHealthStatus::kHealthy, std::nullopt},
                  {"test-driver/pool/shared", ResourceHealthStatus::kUnknown, std::nullopt}}}}));
}

// Claims that cannot be reported are left out; a claim named twice lists its devices once;
// merging keeps a device plugin's entries and replaces the DRA ones.
TEST(ClaimHealthTest, EntriesAndMerging) {
  Pod pod = PodWithClaim("pod-uid", {"a", "claim-a", std::nullopt}, std::nullopt,
                         {{"a", ""}, {"a", ""}, {"missing", ""}, {"template", ""}, {"gone", ""}});
  pod.resource_claims.push_back({"template", std::nullopt, "tmpl"});    // no claim generated yet
  pod.resource_claims.push_back({"gone", "claim-gone", std::nullopt});  // not prepared
  const ClaimInfoState claim = Claim("claim-a", {"pod-uid"}, kDriver, {Device("p", "d")});
  ClaimInfoState elsewhere = claim;
  elsewhere.namespace_name = "other-namespace";
  FakeClock clock;
  HealthCache cache(CacheOptions(&clock));
  EXPECT_EQ(BuildContainerResourceStatuses(pod, pod.containers[0], {elsewhere}, cache),
            std::vector<ResourceStatus>{});
  std::vector<ResourceStatus> dra =
      BuildContainerResourceStatuses(pod, pod.containers[0], {elsewhere, claim}, cache);
  ASSERT_EQ(dra, (std::vector<ResourceStatus>{
                     {"claim:a", {{"test-driver/p/d", ResourceHealthStatus::kUnknown, {}}}}}));

  std::vector<ResourceStatus> statuses = {
      {"example.com/gpu", {{"gpu-0", ResourceHealthStatus::kHealthy, {}}}},
      {"claim:a", {{"old", ResourceHealthStatus::kHealthy, {}}}},
      {"claim:empty", {}},
  };
  UpdateAllocatedResourcesStatus(statuses, dra);
  EXPECT_EQ(statuses, (std::vector<ResourceStatus>{
                          {"example.com/gpu", {{"gpu-0", ResourceHealthStatus::kHealthy, {}}}},
                          {"claim:a", {{"test-driver/p/d", ResourceHealthStatus::kUnknown, {}}}},
                      }));
}

TEST(ClaimHealthTest, PodsUsingDevices) {
  const std::vector<ClaimInfoState> claims = {
      Claim("c1", {"pod-1", "pod-2"}, kDriver, {Device(kPool, kDevice)}),
      Claim("c2", {"pod-3"}, kDriver, {Device(kPool, "other")}),
      Claim("c3", {"pod-4"}, "other-driver", {Device(kPool, kDevice)}),
  };
  EXPECT_EQ(PodsUsingDevices(claims, kDriver, {TestDeviceHealth()}),
            (std::vector<std::string>{"pod-1", "pod-2"}));
  EXPECT_EQ(
      PodsUsingDevices(claims, kDriver, {Health(kPool, "unused", DeviceHealthStatus::kHealthy)}),
      std::vector<std::string>{});
  EXPECT_EQ(PodsUsingDevices(claims, kDriver, {}), std::vector<std::string>{});
}

// --- The stream, against a fake driver. ---

healthapi::NodeWatchResourcesResponse Report(
    std::vector<std::pair<std::string, healthapi::HealthStatus>> devices,
    absl::string_view message = "") {
  healthapi::NodeWatchResourcesResponse report;
  for (const auto& [device, health] : devices) {
    healthapi::DeviceHealth* entry = report.add_devices();
    entry->mutable_device()->set_pool_name(kPool);
    entry->mutable_device()->set_device_name(device);
    entry->set_health(health);
    entry->set_last_updated_time(absl::ToUnixSeconds(absl::Now()));
    entry->set_message(std::string(message));
  }
  return report;
}

// What dra::Manager does with a stream (upstream's HandleWatchResourcesStream): each report goes
// into the cache, the pods holding changed devices are queued for a status update, and the end
// of an established stream clears the driver.
class StreamHarness {
 public:
  StreamHarness(const std::string& socket, std::vector<ClaimInfoState> claims,
                std::string service = kDraResourceHealthServiceV1,
                absl::Duration retry_period = absl::Milliseconds(20))
      : claims_(std::move(claims)), cache_(HealthCacheOptions{}) {
    HealthStreamOptions options;
    options.driver_name = kDriver;
    options.endpoint = socket;
    options.service = std::move(service);
    options.retry_period = retry_period;
    options.on_response = [this](const healthapi::NodeWatchResourcesResponse& response) {
      std::vector<DeviceHealth> changed = cache_.Update(kDriver, BuildDeviceHealths(response));
      std::vector<std::string> pods = PodsUsingDevices(claims_, kDriver, changed);
      absl::MutexLock lock(&mu_);
      ++responses_;
      if (!pods.empty()) updates_.push_back(std::move(pods));
    };
    options.on_stream_end = [this](const HealthStreamEnd& end) {
      if (end.established) {
        EXPECT_TRUE(cache_.ClearDriver(kDriver).ok());
      }
      // Read here: the stream may open again and refill the cache before the test looks.
      const DeviceHealthStatus after = cache_.Get(kDriver, kPool, kDevice).health;
      absl::MutexLock lock(&mu_);
      ends_.push_back(end);
      health_after_end_.push_back(after);
    };
    stream_ = std::make_unique<HealthStream>(std::move(options));
  }

  HealthCache& cache() { return cache_; }
  HealthStream& stream() { return *stream_; }
  int responses() const {
    absl::MutexLock lock(&mu_);
    return responses_;
  }
  std::vector<std::vector<std::string>> updates() const {
    absl::MutexLock lock(&mu_);
    return updates_;
  }
  std::vector<HealthStreamEnd> ends() const {
    absl::MutexLock lock(&mu_);
    return ends_;
  }
  // The test device's health right after each end was handled.
  std::vector<DeviceHealthStatus> health_after_end() const {
    absl::MutexLock lock(&mu_);
    return health_after_end_;
  }

 private:
  const std::vector<ClaimInfoState> claims_;
  HealthCache cache_;
  mutable absl::Mutex mu_;
  int responses_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::vector<std::string>> updates_ ABSL_GUARDED_BY(mu_);
  std::vector<HealthStreamEnd> ends_ ABSL_GUARDED_BY(mu_);
  std::vector<DeviceHealthStatus> health_after_end_ ABSL_GUARDED_BY(mu_);
  // Last: stopped first, while the rest is there.
  std::unique_ptr<HealthStream> stream_;
};

FakeDriver::Options HealthDriver() {
  FakeDriver::Options options;
  options.serve_health_v1 = true;
  options.serve_health_v1alpha1 = true;
  return options;
}

class HealthStreamTest : public ::testing::Test {
 protected:
  std::string Socket() const { return dir_.Sub("dra.sock").string(); }
  std::vector<ClaimInfoState> AllocatedClaim() const {
    return {Claim("claim", {kPodUid}, kDriver, {Device(kPool, kDevice)})};
  }

  TempDir dir_;
};

// TestHandleWatchResourcesStream: a health change of an allocated device reaches the cache
// and queues its pod; one of another device only the cache; a repeat nothing; a stream error
// and a cancellation end the stream, and its end clears the driver.
TEST_F(HealthStreamTest, TestHandleWatchResourcesStream) {
  {
    SCOPED_TRACE("HealthChangeForAllocatedDevice");
    FakeDriver driver(Socket(), HealthDriver());
    ASSERT_TRUE(driver.started());
    StreamHarness harness(Socket(), AllocatedClaim());
    ASSERT_TRUE(WaitFor([&] { return driver.open_health_streams() == 1; }));
    driver.PushHealth(Report({{kDevice, healthapi::UNHEALTHY}}));
    ASSERT_TRUE(WaitFor([&] { return !harness.updates().empty(); }));
    EXPECT_EQ(harness.updates(), (std::vector<std::vector<std::string>>{{kPodUid}}));
    EXPECT_EQ(harness.cache().Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kUnhealthy);
    // The driver closes the stream cleanly (EOF): the end is reported and the driver cleared.
    driver.EndHealthStreams(grpc::Status::OK);
    ASSERT_TRUE(WaitFor([&] { return !harness.ends().empty(); }));
    EXPECT_TRUE(harness.ends()[0].status.ok()) << harness.ends()[0].status;
    EXPECT_TRUE(harness.ends()[0].established);
    EXPECT_EQ(harness.ends()[0].responses, 1);
    EXPECT_EQ(harness.health_after_end()[0], DeviceHealthStatus::kUnknown);
  }
  {
    SCOPED_TRACE("NonAllocatedDeviceChange");
    FakeDriver driver(Socket(), HealthDriver());
    StreamHarness harness(Socket(), AllocatedClaim());
    driver.PushHealth(Report({{"other-device", healthapi::UNHEALTHY}}));
    ASSERT_TRUE(WaitFor([&] { return harness.responses() == 1; }));
    EXPECT_TRUE(harness.updates().empty());
    EXPECT_EQ(harness.cache().Get(kDriver, kPool, "other-device").health,
              DeviceHealthStatus::kUnhealthy);
  }
  {
    SCOPED_TRACE("NoActualStateChange");
    FakeDriver driver(Socket(), HealthDriver());
    driver.PushHealth(Report({{kDevice, healthapi::UNHEALTHY}}));
    StreamHarness harness(Socket(), AllocatedClaim());
    ASSERT_TRUE(WaitFor([&] { return harness.responses() == 1; }));
    EXPECT_EQ(harness.updates().size(), 1u) << "the first report is news";
    driver.PushHealth(Report({{kDevice, healthapi::UNHEALTHY}}));
    ASSERT_TRUE(WaitFor([&] { return harness.responses() == 2; }));
    EXPECT_EQ(harness.updates().size(), 1u) << "the same health again is not";
  }
  {
    SCOPED_TRACE("StreamError");
    FakeDriver driver(Socket(), HealthDriver());
    StreamHarness harness(Socket(), AllocatedClaim());
    driver.PushHealth(Report({{kDevice, healthapi::HEALTHY}}));
    ASSERT_TRUE(WaitFor([&] { return harness.responses() == 1; }));
    driver.EndHealthStreams(grpc::Status(grpc::StatusCode::INTERNAL, "simulated stream error"));
    ASSERT_TRUE(WaitFor([&] { return !harness.ends().empty(); }));
    EXPECT_EQ(harness.ends()[0].status, absl::InternalError("simulated stream error"));
    EXPECT_EQ(harness.health_after_end()[0], DeviceHealthStatus::kUnknown);
    // And it is opened again, with the driver's last report.
    ASSERT_TRUE(WaitFor([&] { return harness.responses() == 2; }));
    EXPECT_EQ(harness.cache().Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kHealthy);
  }
  {
    SCOPED_TRACE("ContextCanceled");
    FakeDriver driver(Socket(), HealthDriver());
    StreamHarness harness(Socket(), AllocatedClaim());
    driver.PushHealth(Report({{kDevice, healthapi::HEALTHY}}));
    ASSERT_TRUE(WaitFor([&] { return harness.responses() == 1; }));
    harness.stream().Stop();
    ASSERT_EQ(harness.ends().size(), 1u);
    EXPECT_TRUE(absl::IsCancelled(harness.ends()[0].status)) << harness.ends()[0].status;
    EXPECT_TRUE(harness.stream().finished());
    EXPECT_EQ(harness.cache().Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kUnknown);
    EXPECT_TRUE(WaitFor([&] { return driver.open_health_streams() == 0; }));
  }
}

// The stream is opened again after the driver restarts, and takes the new driver's reports.
TEST_F(HealthStreamTest, ReopensAfterDriverRestart) {
  auto driver = std::make_unique<FakeDriver>(Socket(), HealthDriver());
  StreamHarness harness(Socket(), AllocatedClaim());
  driver->PushHealth(Report({{kDevice, healthapi::UNHEALTHY}}, "before"));
  ASSERT_TRUE(WaitFor([&] { return harness.responses() == 1; }));
  EXPECT_EQ(harness.cache().Get(kDriver, kPool, kDevice).message, "before");

  driver.reset();  // the driver goes away: its stream ends
  ASSERT_TRUE(WaitFor([&] { return !harness.ends().empty(); }));
  EXPECT_TRUE(harness.ends()[0].established);
  EXPECT_EQ(harness.health_after_end()[0], DeviceHealthStatus::kUnknown);
  // While it is away, tries fail and carry no news.
  const int64_t tries = harness.stream().tries();
  ASSERT_TRUE(WaitFor([&] { return harness.stream().tries() >= tries + 2; }));
  for (size_t i = 1; i < harness.ends().size(); ++i) {
    EXPECT_FALSE(harness.ends()[i].established);
    EXPECT_TRUE(absl::IsUnavailable(harness.ends()[i].status)) << harness.ends()[i].status;
  }

  driver = std::make_unique<FakeDriver>(Socket(), HealthDriver());
  ASSERT_TRUE(driver->started());
  const int64_t tries_before = harness.stream().tries();
  driver->PushHealth(Report({{kDevice, healthapi::HEALTHY}}, "after"));
  ASSERT_TRUE(WaitFor([&] { return harness.responses() == 2; }));
  // The first try once it is back reaches it: gRPC's reconnect backoff, begun while it was
  // away, would have failed tries for a second or more (up to two minutes).
  EXPECT_EQ(harness.stream().tries(), tries_before + 1);
  EXPECT_EQ(harness.cache().Get(kDriver, kPool, kDevice).health, DeviceHealthStatus::kHealthy);
  EXPECT_EQ(harness.cache().Get(kDriver, kPool, kDevice).message, "after");
  EXPECT_EQ(driver->health_versions(), std::vector<std::string>{"v1"});
}

// v1alpha1 is spoken to a driver that chose it; the host still gets v1 messages.
TEST_F(HealthStreamTest, SpeaksV1alpha1) {
  FakeDriver::Options options;
  options.serve_health_v1alpha1 = true;
  FakeDriver driver(Socket(), options);
  StreamHarness harness(Socket(), AllocatedClaim(), kDraResourceHealthServiceV1alpha1);
  driver.PushHealth(Report({{kDevice, healthapi::UNHEALTHY}}, "over v1alpha1"));
  ASSERT_TRUE(WaitFor([&] { return harness.responses() == 1; }));
  const DeviceHealth got = harness.cache().Get(kDriver, kPool, kDevice);
  EXPECT_EQ(got.health, DeviceHealthStatus::kUnhealthy);
  EXPECT_EQ(got.message, "over v1alpha1");
  EXPECT_EQ(driver.health_versions(), std::vector<std::string>{"v1alpha1"});
}

// TestUnimplementedHealthStreamIsNotRetried: a driver that answers Unimplemented (or does not
// serve the service at all) is asked once.
TEST_F(HealthStreamTest, TestUnimplementedHealthStreamIsNotRetried) {
  {
    SCOPED_TRACE("handler answers Unimplemented");
    FakeDriver::Options options = HealthDriver();
    options.health_status = grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                         "device health reporting is not supported by this driver");
    FakeDriver driver(Socket(), options);
    StreamHarness harness(Socket(), AllocatedClaim(), kDraResourceHealthServiceV1,
                          absl::Milliseconds(1));
    ASSERT_TRUE(WaitFor([&] { return harness.stream().finished(); }));
    EXPECT_EQ(harness.stream().tries(), 1);
    EXPECT_EQ(driver.health_streams(), 1);
    ASSERT_EQ(harness.ends().size(), 1u);
    EXPECT_TRUE(absl::IsUnimplemented(harness.ends()[0].status));
  }
  {
    SCOPED_TRACE("service not registered");
    FakeDriver driver(Socket());  // DRAPlugin only
    StreamHarness harness(Socket(), AllocatedClaim(), kDraResourceHealthServiceV1,
                          absl::Milliseconds(1));
    ASSERT_TRUE(WaitFor([&] { return harness.stream().finished(); }));
    EXPECT_EQ(harness.stream().tries(), 1);
    ASSERT_EQ(harness.ends().size(), 1u);
    EXPECT_TRUE(absl::IsUnimplemented(harness.ends()[0].status)) << harness.ends()[0].status;
  }
}

// Stop is prompt whether a stream is open or the stream waits to try again, and nothing runs
// after it.
TEST_F(HealthStreamTest, StopIsPrompt) {
  {
    SCOPED_TRACE("waiting to try again");
    StreamHarness harness(Socket(), AllocatedClaim(), kDraResourceHealthServiceV1, absl::Hours(1));
    ASSERT_TRUE(WaitFor([&] { return harness.ends().size() == 1; }));
    EXPECT_FALSE(harness.ends()[0].established) << "no driver there";
    const auto start = std::chrono::steady_clock::now();
    harness.stream().Stop();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    EXPECT_TRUE(harness.stream().finished());
    EXPECT_EQ(harness.stream().tries(), 1);
    harness.stream().Stop();  // idempotent
  }
  {
    SCOPED_TRACE("stream open");
    FakeDriver driver(Socket(), HealthDriver());
    StreamHarness harness(Socket(), AllocatedClaim(), kDraResourceHealthServiceV1, absl::Hours(1));
    ASSERT_TRUE(WaitFor([&] { return driver.open_health_streams() == 1; }));
    const auto start = std::chrono::steady_clock::now();
    harness.stream().Stop();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    const size_t ends = harness.ends().size();
    EXPECT_EQ(ends, 1u);
    driver.PushHealth(Report({{kDevice, healthapi::HEALTHY}}));
    EXPECT_EQ(harness.responses(), 0);
    EXPECT_EQ(harness.ends().size(), ends);
  }
  {
    SCOPED_TRACE("destroyed without Stop");
    FakeDriver driver(Socket(), HealthDriver());
    auto harness = std::make_unique<StreamHarness>(Socket(), AllocatedClaim());
    ASSERT_TRUE(WaitFor([&] { return driver.open_health_streams() == 1; }));
    harness.reset();
    EXPECT_TRUE(WaitFor([&] { return driver.open_health_streams() == 0; }));
  }
}

// Stop ends a stream that waits for a peer that accepts connections and never serves (a
// frozen driver), at once. Before, the try waited for the connection up to the retry period
// (20 s here), and Stop with it.
TEST_F(HealthStreamTest, StopEndsAWaitForAPeerThatNeverServes) {
  ClosingPeer peer(Socket());
  ASSERT_TRUE(peer.listening());
  std::shared_ptr<grpc::Channel> channel = PluginChannel(Socket());
  // Waiting for a change drives the connection (else only gRPC's backup poller would, every 5 s).
  ASSERT_TRUE(WaitFor([&] {
    const grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE) return true;
    channel->WaitForStateChange(state,
                                std::chrono::system_clock::now() + std::chrono::milliseconds(100));
    return false;
  }));
  HealthStreamOptions options;
  options.driver_name = kDriver;
  options.endpoint = Socket();
  options.channel = channel;
  options.retry_period = absl::Seconds(20);
  HealthStream stream(std::move(options));
  // Tried, and the backoff cut: the peer is asked to connect again.
  ASSERT_TRUE(WaitFor([&] { return stream.tries() == 1 && peer.accepted() >= 3; }));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    stream.Stop();
    stopped = true;
  });
  EXPECT_TRUE(WaitFor([&] { return stopped.load(); }));
  stopper.join();
}

// The stream can use a channel the host already has (upstream's one connection per endpoint).
TEST_F(HealthStreamTest, ReusesGivenChannel) {
  FakeDriver driver(Socket(), HealthDriver());
  grpc::ChannelArguments args;
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      absl::StrCat("unix:", Socket()), grpc::InsecureChannelCredentials(), args);
  absl::Mutex mu;
  int responses = 0;
  HealthStreamOptions options;
  options.driver_name = kDriver;
  options.channel = channel;
  options.on_response = [&](const healthapi::NodeWatchResourcesResponse&) {
    absl::MutexLock lock(&mu);
    ++responses;
  };
  HealthStream stream(std::move(options));
  driver.PushHealth(Report({{kDevice, healthapi::HEALTHY}}));
  EXPECT_TRUE(WaitFor([&] {
    absl::MutexLock lock(&mu);
    return responses == 1;
  }));
}

}  // namespace
}  // namespace devmgr::dra
