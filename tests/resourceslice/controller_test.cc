// The ResourceSlice controller against the in-process store: upstream's TestControllerSyncPool
// cases by name (same creates, updates and deletes, same resulting slices, nothing written again
// on a second sync, the same errors), TestGetIndexLength, TestEncodeIndex and TestDecodeIndex.
#include "resourceslice/controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "resourceslice/forwarding_store.h"
#include "resourceslice/memory_store.h"
#include "resourceslice/slice_names.h"
#include "tests/testlib/at_once.h"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::resourceslice {
namespace {

using ::devmgr::testing::WaitFor;
using kubeapi::Device;
using kubeapi::DeviceTaint;
using kubeapi::Json;
using kubeapi::ResourceSlice;

constexpr char kOwner[] = "owner";
constexpr char kNodeUid[] = "node-uid";
constexpr char kDriver[] = "driver";
constexpr char kPool[] = "pool";
constexpr char kTimeAdded[] = "2026-11-25T10:00:00Z";
constexpr char kTimeAddedLater[] = "2026-11-25T10:01:00Z";
constexpr char kTimeAddedEarlier[] = "2026-11-25T09:59:00Z";
constexpr char kTimeAddedEarlierSubSecond[] = "2026-11-25T09:59:00.1Z";

std::string GenerateName(int index) {
  return EncodeIndex(index, kIndexMinLength) + "-" + kDriver + "-" + kOwner + "-";
}
// The names the in-process store gives the first created slices, and upstream's test names.
const std::string kSlice1 = GenerateName(0) + "0";
const std::string kSlice2 = GenerateName(1) + "1";
const std::string kSlice3 = GenerateName(2) + "2";

Device NewDevice(const std::string& name, bool attributes = false,
                 std::vector<DeviceTaint> taints = {}) {
  Device device;
  device.name = name;
  if (attributes) device.extra["attributes"] = {{"new-attribute", {{"string", "value"}}}};
  device.taints = std::move(taints);
  return device;
}

DeviceTaint Taint(const std::string& key, const std::string& effect,
                  std::optional<std::string> time_added = std::nullopt) {
  return DeviceTaint{key, "", effect, std::move(time_added), Json::object()};
}

// A slice of the node-owned pool, as upstream's MakeResourceSlice builds them.
ResourceSlice NodeSlice(const std::string& name, std::vector<Device> devices, int64_t generation,
                        int64_t count, const std::string& resource_version = "",
                        const std::string& generate_name = "", const std::string& uid = "") {
  ResourceSlice slice;
  slice.metadata.name = name;
  slice.metadata.generate_name = generate_name;
  slice.metadata.uid = uid;
  slice.metadata.resource_version = resource_version;
  slice.metadata.owner_references.push_back({"v1", "Node", kOwner, kNodeUid, true, Json::object()});
  slice.spec.node_name = kOwner;
  slice.spec.driver = kDriver;
  slice.spec.devices = std::move(devices);
  slice.spec.pool = {kPool, generation, count, Json::object()};
  return slice;
}

// A slice owned by an application object, selecting nodes.
ResourceSlice AppSlice(const std::string& name, std::vector<Device> devices, const Json& selector,
                       const std::string& resource_version = "",
                       const std::string& generate_name = "", const std::string& uid = "") {
  ResourceSlice slice =
      NodeSlice(name, std::move(devices), 1, 1, resource_version, generate_name, uid);
  slice.metadata.owner_references = {{"apps/v1", "Something", kOwner, "", true, Json::object()}};
  slice.spec.node_name.reset();
  slice.spec.node_selector = selector;
  return slice;
}

// Upstream's test selects by a field key "name" with no operator, which its fake client takes;
// the validation a device's selector passes here (as an API server's) wants a valid one.
Json NodeSelector(const std::string& node) {
  return Json::parse(
      R"({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
          "values": [")" +
      node + R"("]}]}]})");
}

Pool PoolOf(std::vector<std::vector<Device>> slices, int64_t generation = 0) {
  Pool pool;
  pool.generation = generation;
  for (auto& devices : slices) pool.slices.push_back({std::move(devices), {}, std::nullopt});
  return pool;
}

DriverResources OnePool(Pool pool) {
  DriverResources resources;
  resources.pools[kPool] = std::move(pool);
  return resources;
}

// CollectErrors makes `options` add every error the controller reports to `errors` (for a
// controller without a worker: the test's thread is the only one that reports).
void CollectErrors(ControllerOptions& options, std::vector<std::string>& errors) {
  options.error_handler = [&errors](const ControllerError& error) {
    errors.push_back(error.ToString());
  };
}

// The features an API server has off, whose fields it drops from what it stores.
struct Disabled {
  bool taints = false;                    // DRADeviceTaints
  bool partitionable = false;             // DRAPartitionableDevices
  bool binding_conditions = false;        // DRADeviceBindingConditions
  bool consumable_capacity = false;       // DRAConsumableCapacity
  bool optional_node_operations = false;  // DRAOptionalNodeOperations
};

// DropDisabledFields takes out of `slice` the fields of the features `disabled` names.
void DropDisabledFields(const Disabled& disabled, ResourceSlice& slice) {
  if (disabled.optional_node_operations) slice.spec.skip_node_operations.clear();
  if (disabled.partitionable) {
    slice.spec.per_device_node_selection.reset();
    slice.spec.shared_counters.clear();
  }
  for (Device& device : slice.spec.devices) {
    if (disabled.taints) device.taints.clear();
    if (disabled.partitionable) {
      device.consumes_counters.clear();
      device.extra.erase("nodeName");
      device.extra.erase("nodeSelector");
    }
    if (disabled.binding_conditions) {
      for (const char* field : {"bindingConditions", "bindingFailureConditions", "bindsToNode"}) {
        device.extra.erase(field);
      }
    }
    if (disabled.consumable_capacity) device.extra.erase("allowMultipleAllocations");
  }
}

// Who owns the slices: the node (upstream's nodeUID set), an application object (no nodeUID),
// or nobody (noOwner).
enum class OwnerKind { kNode, kApp, kNone };

struct Case {
  std::string name;
  std::vector<ResourceSlice> initial;
  std::optional<DriverResources> input;
  std::vector<ResourceSlice> expected;
  Stats stats;
  std::vector<std::string> errors{};
  std::optional<absl::Duration> sync_delay{};
  // The features the store's API server has off: it drops their fields, as upstream's test does.
  Disabled disabled{};
  OwnerKind owner = OwnerKind::kNode;
  std::string reconcile_pool_with_name{};
};

void PrintTo(const Case& test, std::ostream* out) { *out << test.name; }

class ControllerSyncPoolTest : public ::testing::TestWithParam<Case> {};

// TestControllerSyncPool: the store starts with `initial`, the driver wants `input`; after the
// controller has synced everything that was due the store holds `expected`, written with
// `stats`; a second sync of every pool writes nothing.
TEST_P(ControllerSyncPoolTest, TestControllerSyncPool) {
  const Case& test = GetParam();
  testing::FakeClock clock;
  MemoryStore store([&test](ResourceSlice& slice) {
    DropDisabledFields(test.disabled, slice);
    for (Device& device : slice.spec.devices) {
      // The API server sets the time a taint was added.
      for (DeviceTaint& taint : device.taints) {
        if (!taint.time_added.has_value()) taint.time_added = kTimeAddedLater;
      }
    }
  });
  for (const ResourceSlice& slice : test.initial) store.Put(slice);
  std::vector<std::string> errors;
  ControllerOptions options;
  options.driver_name = kDriver;
  options.store = &store;
  switch (test.owner) {
    case OwnerKind::kNode:
      options.owner = Owner{"v1", "Node", kOwner, kNodeUid};
      break;
    case OwnerKind::kApp:
      options.owner = Owner{"apps/v1", "Something", kOwner, ""};
      break;
    case OwnerKind::kNone:
      break;
  }
  options.reconcile_pool_with_name = test.reconcile_pool_with_name;
  options.resources = test.input;
  options.sync_delay = test.sync_delay.value_or(kDefaultSyncDelay);
  CollectErrors(options, errors);
  options.run_worker = false;
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  (*controller)->ProcessReady();

  absl::StatusOr<std::vector<ResourceSlice>> stored = store.List({});
  ASSERT_TRUE(stored.ok());
  // The store gives created slices a uid; upstream's fake client does not.
  for (ResourceSlice& slice : *stored) {
    for (const ResourceSlice& expected : test.expected) {
      if (expected.metadata.name == slice.metadata.name && expected.metadata.uid.empty()) {
        slice.metadata.uid.clear();
      }
    }
  }
  std::vector<ResourceSlice> expected = test.expected;
  std::sort(expected.begin(), expected.end(), [](const ResourceSlice& a, const ResourceSlice& b) {
    return a.metadata.name < b.metadata.name;
  });
  ASSERT_EQ(stored->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(kubeapi::EncodeResourceSlice((*stored)[i]).dump(1),
              kubeapi::EncodeResourceSlice(expected[i]).dump(1));
  }
  EXPECT_EQ((*controller)->GetStats(), test.stats)
      << "creates " << (*controller)->GetStats().num_creates << " updates "
      << (*controller)->GetStats().num_updates << " deletes "
      << (*controller)->GetStats().num_deletes;

  (*controller)->Resync();
  (*controller)->ProcessReady();
  EXPECT_EQ((*controller)->GetStats(), test.stats) << "statistics after re-sync";
  const std::set<std::string> deduplicated(errors.begin(), errors.end());
  EXPECT_EQ(deduplicated, std::set<std::string>(test.errors.begin(), test.errors.end()));
}

// Upstream's create-partitionable-devices and drop-partitionable-devices: a pool of an
// application object whose first slice holds a counter set and whose second a device on a node
// that consumes from it. With the feature off the server keeps neither the counters nor the
// per-device node fields, and says so for both slices.
Case PartitionableDevicesCase(const std::string& name, const Disabled& disabled) {
  Case test{name, {}, {}, {}, Stats{2, 0, 0}};
  const kubeapi::CounterSet gpu{"gpu-0", Json{{"mem", {{"value", "1"}}}}, Json::object()};
  Device consumer = NewDevice("device");
  consumer.extra["nodeName"] = kOwner;
  consumer.consumes_counters.push_back({"gpu-0", Json{{"mem", {{"value", "1"}}}}, Json::object()});
  Pool pool = PoolOf({}, 1);
  pool.slices = {Slice{{}, {gpu}, true}, Slice{{consumer}, {}, true}};
  test.input = OnePool(pool);
  test.owner = OwnerKind::kApp;
  auto app_slice = [](const std::string& slice_name, std::vector<Device> devices, int index) {
    ResourceSlice slice = NodeSlice(slice_name, std::move(devices), 1, 2, "1", GenerateName(index));
    slice.metadata.owner_references = {{"apps/v1", "Something", kOwner, "", true, Json::object()}};
    slice.spec.node_name.reset();
    return slice;
  };
  ResourceSlice counters = app_slice(kSlice1, {}, 0);
  ResourceSlice devices = app_slice(kSlice2, {consumer}, 1);
  if (disabled.partitionable) {
    devices.spec.devices = {NewDevice("device")};
    test.errors = {
        "create ResourceSlice: pool \"pool\", slice #0: some fields were dropped by the "
        "apiserver, probably because these features are disabled: DRAPartitionableDevices",
        "create ResourceSlice: pool \"pool\", slice #1: some fields were dropped by the "
        "apiserver, probably because these features are disabled: DRAPartitionableDevices"};
  } else {
    counters.spec.per_device_node_selection = true;
    counters.spec.shared_counters = {gpu};
    devices.spec.per_device_node_selection = true;
  }
  test.expected = {counters, devices};
  test.disabled = disabled;
  return test;
}

// Upstream's create-device-with-binding-condition and drop-device-with-binding-condition.
Case BindingConditionsCase(const std::string& name, const Disabled& disabled) {
  Case test{name, {}, {}, {}, Stats{1, 0, 0}};
  Device bound = NewDevice("device");
  bound.extra["bindingConditions"] = {"condition1", "condition2"};
  bound.extra["bindingFailureConditions"] = {"failure-condition1"};
  bound.extra["bindsToNode"] = true;
  test.input = OnePool(PoolOf({{bound}}, 1));
  if (disabled.binding_conditions) {
    test.expected = {NodeSlice(kSlice1, {NewDevice("device")}, 1, 1, "1", GenerateName(0))};
    test.errors = {
        "create ResourceSlice: pool \"pool\", slice #0: some fields were dropped by the "
        "apiserver, probably because these features are disabled: DRADeviceBindingConditions"};
  } else {
    test.expected = {NodeSlice(kSlice1, {bound}, 1, 1, "1", GenerateName(0))};
  }
  test.disabled = disabled;
  return test;
}

// A pool whose slice skips every node operation (DRAOptionalNodeOperations), published, changed
// into one and dropped by a server with the feature off.
Case SkipNodeOperationsCase(const std::string& name, const Disabled& disabled, bool update) {
  Case test{name, {}, {}, {}, update ? Stats{0, 1, 0} : Stats{1, 0, 0}};
  Pool pool = PoolOf({{NewDevice("device")}}, 1);
  pool.slices[0].skip_node_operations = {"*"};
  test.input = OnePool(pool);
  ResourceSlice slice = NodeSlice(kSlice1, {NewDevice("device")}, 1, 1, "1", GenerateName(0));
  if (update) test.initial = {NodeSlice(kSlice1, {NewDevice("device")}, 1, 1, "", GenerateName(0))};
  if (disabled.optional_node_operations) {
    test.errors = {
        "create ResourceSlice: pool \"pool\", slice #0: some fields were dropped by the "
        "apiserver, probably because these features are disabled: DRAOptionalNodeOperations"};
  } else {
    slice.spec.skip_node_operations = {"*"};
  }
  test.expected = {slice};
  test.disabled = disabled;
  return test;
}

std::vector<Case> Cases() {
  const std::vector<Device> device{NewDevice("device")};
  return {
      Case{"create-slice",
           {},
           OnePool(PoolOf({{}})),
           {NodeSlice(kSlice1, {}, 1, 1, "1", GenerateName(0))},
           Stats{1, 0, 0}},
      Case{"keep-slice-unchanged",
           {NodeSlice(kSlice1, device, 1, 1, "", GenerateName(0))},
           OnePool(PoolOf({device}, 1)),
           {NodeSlice(kSlice1, device, 1, 1, "", GenerateName(0))},
           Stats{}},
      Case{"keep-taint-unchanged",
           {NodeSlice(kSlice1, {NewDevice("device", false, {Taint("", "NoExecute", kTimeAdded)})},
                      1, 1, "", GenerateName(0))},
           OnePool(PoolOf({{NewDevice("device", false, {Taint("", "NoExecute")})}}, 1)),
           {NodeSlice(kSlice1, {NewDevice("device", false, {Taint("", "NoExecute", kTimeAdded)})},
                      1, 1, "", GenerateName(0))},
           Stats{}},
      Case{"add-taints",
           {NodeSlice(kSlice1, {NewDevice("device", false, {Taint("", "NoExecute", kTimeAdded)})},
                      1, 1, "", GenerateName(0))},
           OnePool(PoolOf(
               {{NewDevice(
                   "device", false,
                   {Taint("", "NoExecute"), Taint("example.com/tainted", "NoSchedule"),
                    Taint("example.com/tainted2", "NoExecute", kTimeAddedEarlierSubSecond)})}},
               1)),
           {NodeSlice(kSlice1,
                      {NewDevice("device", false,
                                 {Taint("", "NoExecute", kTimeAdded),
                                  Taint("example.com/tainted", "NoSchedule", kTimeAddedLater),
                                  Taint("example.com/tainted2", "NoExecute", kTimeAddedEarlier)})},
                      1, 1, "1", GenerateName(0))},
           Stats{0, 1, 0}},
      Case{"drop-taints",
           {NodeSlice(kSlice1, device, 1, 1, "", GenerateName(0))},
           OnePool(PoolOf({{NewDevice("device", false, {Taint("", "NoExecute")})}}, 1)),
           {NodeSlice(kSlice1, device, 1, 1, "1", GenerateName(0))},
           Stats{0, 1, 0},
           {"update ResourceSlice: pool \"pool\", slice #0: some fields were dropped by the "
            "apiserver, probably because these features are disabled: DRADeviceTaints"},
           std::nullopt,
           Disabled{.taints = true}},
      // Not upstream's: what the server kept of several slices of one pool is followed for
      // each, so that the second sync writes none of them again.
      Case{"add-taints-to-several-slices",
           {},
           OnePool(PoolOf({{NewDevice("device-1", false, {Taint("", "NoExecute")})},
                           {NewDevice("device-2", false, {Taint("", "NoExecute")})},
                           {NewDevice("device-3", false, {Taint("", "NoExecute")})}})),
           {NodeSlice(kSlice1,
                      {NewDevice("device-1", false, {Taint("", "NoExecute", kTimeAddedLater)})}, 1,
                      3, "1", GenerateName(0)),
            NodeSlice(kSlice2,
                      {NewDevice("device-2", false, {Taint("", "NoExecute", kTimeAddedLater)})}, 1,
                      3, "1", GenerateName(1)),
            NodeSlice(kSlice3,
                      {NewDevice("device-3", false, {Taint("", "NoExecute", kTimeAddedLater)})}, 1,
                      3, "1", GenerateName(2))},
           Stats{3, 0, 0}},
      Case{"drop-taints-of-several-slices",
           {},
           OnePool(PoolOf({{NewDevice("device-1", false, {Taint("", "NoExecute")})},
                           {NewDevice("device-2", false, {Taint("", "NoExecute")})}})),
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 1, 2, "1", GenerateName(0)),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 1, 2, "1", GenerateName(1))},
           Stats{2, 0, 0},
           {"create ResourceSlice: pool \"pool\", slice #0: some fields were dropped by the "
            "apiserver, probably because these features are disabled: DRADeviceTaints",
            "create ResourceSlice: pool \"pool\", slice #1: some fields were dropped by the "
            "apiserver, probably because these features are disabled: DRADeviceTaints"},
           std::nullopt,
           Disabled{.taints = true}},
      Case{"remove-pool",
           {NodeSlice(kSlice1, {}, 1, 1, "", "", kSlice1)},
           DriverResources{},
           {},
           Stats{0, 0, 1},
           {},
           absl::ZeroDuration()},
      Case{"one-existing-and-one-desired-slice-should-be-updated-inplace",
           {NodeSlice(kSlice1, {}, 1, 1, "", "", kSlice1)},
           OnePool(PoolOf({device})),
           {NodeSlice(kSlice1, device, 1, 1, "1", "", kSlice1)},
           Stats{0, 1, 0}},
      Case{"update-slice-when-more-than-one-existing-or-desired-slice",
           {NodeSlice(kSlice1, {}, 1, 2, "", GenerateName(0), kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 1, 2, "", GenerateName(1), kSlice2)},
           OnePool(PoolOf({{NewDevice("device-1")}, {NewDevice("device-2")}})),
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 1, 2, "1", GenerateName(0), kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 1, 2, "", GenerateName(1), kSlice2)},
           Stats{0, 1, 0}},
      Case{"delete-redundant-slice",
           {NodeSlice(kSlice1, device, 1, 1, "", "", kSlice1),
            NodeSlice(kSlice2, device, 1, 1, "", "", kSlice2)},
           OnePool(PoolOf({device})),
           {NodeSlice(kSlice1, device, 1, 1, "", "", kSlice1)},
           Stats{0, 0, 1}},
      Case{"update-slice",
           {NodeSlice(kSlice1, device, 1, 1, "", "", kSlice1)},
           OnePool(PoolOf({{NewDevice("device", true)}})),
           {NodeSlice(kSlice1, {NewDevice("device", true)}, 1, 1, "1", "", kSlice1)},
           Stats{0, 1, 0}},
      Case{"update-slice-many-devices",
           {NodeSlice(kSlice1, {NewDevice("device-1"), NewDevice("device-2")}, 1, 1, "", "",
                      kSlice1)},
           OnePool(PoolOf({{NewDevice("device-1"), NewDevice("device-2", true)}})),
           {NodeSlice(kSlice1, {NewDevice("device-1"), NewDevice("device-2", true)}, 1, 1, "1", "",
                      kSlice1)},
           Stats{0, 1, 0}},
      Case{"multiple-resourceslices-existing-no-changes",
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 1, 3, "", "", kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 1, 3, "", "", kSlice2),
            NodeSlice(kSlice3, {NewDevice("device-3")}, 1, 3, "", "", kSlice3)},
           OnePool(
               PoolOf({{NewDevice("device-1")}, {NewDevice("device-2")}, {NewDevice("device-3")}})),
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 1, 3, "", "", kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 1, 3, "", "", kSlice2),
            NodeSlice(kSlice3, {NewDevice("device-3")}, 1, 3, "", "", kSlice3)},
           Stats{}},
      Case{"multiple-resourceslices-existing-with-different-resource-pool-generation",
           {NodeSlice(kSlice1, {}, 1, 1, "", "", kSlice1),
            NodeSlice(kSlice2, device, 2, 1, "", "", kSlice2),
            NodeSlice(kSlice3, {}, 1, 1, "", "", kSlice3)},
           OnePool(PoolOf({device})),
           {NodeSlice(kSlice1, device, 3, 1, "1", GenerateName(0))},
           Stats{1, 0, 3}},
      Case{"multiple-resourceslices-existing-one-changed",
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 1, 3, "", "", kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 1, 3, "", "", kSlice2),
            NodeSlice(kSlice3, {NewDevice("device-3")}, 1, 3, "", "", kSlice3)},
           OnePool(PoolOf(
               {{NewDevice("device-1")}, {NewDevice("device-2", true)}, {NewDevice("device-3")}})),
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 1, 3, "", "", kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2", true)}, 1, 3, "1", "", kSlice2),
            NodeSlice(kSlice3, {NewDevice("device-3")}, 1, 3, "", "", kSlice3)},
           Stats{0, 1, 0}},
      Case{"multiple-resourceslices-existing-two-changed",
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 1, 3, "", "", kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 1, 3, "", "", kSlice2),
            NodeSlice(kSlice3, {NewDevice("device-3")}, 1, 3, "", "", kSlice3)},
           OnePool(PoolOf({{NewDevice("device-1")},
                           {NewDevice("device-2", true)},
                           {NewDevice("device-3", true)}})),
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 2, 3, "1", "", kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2", true)}, 2, 3, "1", "", kSlice2),
            NodeSlice(kSlice3, {NewDevice("device-3", true)}, 2, 3, "1", "", kSlice3)},
           Stats{0, 3, 0}},
      Case{"multiple-resourceslices-existing-one-removed",
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 1, 3, "", "", kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 1, 3, "", "", kSlice2),
            NodeSlice(kSlice3, {NewDevice("device-3")}, 1, 3, "", "", kSlice3)},
           OnePool(PoolOf({{NewDevice("device-1")}, {NewDevice("device-2")}})),
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 2, 2, "1", "", kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 2, 2, "1", "", kSlice2)},
           Stats{0, 2, 1}},
      Case{"multiple-resourceslices-existing-one-added",
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 1, 3, "", "", kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 1, 3, "", "", kSlice2),
            NodeSlice(kSlice3, {NewDevice("device-3")}, 1, 3, "", "", kSlice3)},
           OnePool(PoolOf({{NewDevice("device-1")},
                           {NewDevice("device-2")},
                           {NewDevice("device-3")},
                           {NewDevice("device-4")}})),
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 2, 4, "1", "", kSlice1),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 2, 4, "1", "", kSlice2),
            NodeSlice(kSlice3, {NewDevice("device-3")}, 2, 4, "1", "", kSlice3),
            NodeSlice(GenerateName(3) + "0", {NewDevice("device-4")}, 2, 4, "1", GenerateName(3))},
           Stats{1, 3, 0}},
      [] {
        Case test{"add-one-network-device-all-nodes", {}, {}, {}, Stats{1, 0, 0}};
        Pool pool = PoolOf({{NewDevice("device")}});
        pool.all_nodes = true;
        test.input = OnePool(pool);
        ResourceSlice slice =
            NodeSlice(EncodeIndex(0, kIndexMinLength) + "-driver-0", {NewDevice("device")}, 1, 1,
                      "1", EncodeIndex(0, kIndexMinLength) + "-driver-");
        slice.metadata.owner_references.clear();
        slice.spec.node_name.reset();
        slice.spec.all_nodes = true;
        test.expected = {slice};
        test.owner = OwnerKind::kNone;
        return test;
      }(),
      [] {
        Case test{"add-one-network-device-some-nodes", {}, {}, {}, Stats{1, 0, 0}};
        Pool pool = PoolOf({{NewDevice("device")}});
        pool.node_selector = NodeSelector("node-a");
        test.input = OnePool(pool);
        test.expected = {
            AppSlice(kSlice1, {NewDevice("device")}, NodeSelector("node-a"), "1", GenerateName(0))};
        test.owner = OwnerKind::kApp;
        return test;
      }(),
      [] {
        Case test{"reconcile-with-pool-name-create-slice-no-node-name", {}, {}, {}, Stats{1, 0, 0}};
        Pool pool = PoolOf({{}});
        pool.all_nodes = true;
        test.input = OnePool(pool);
        ResourceSlice slice = NodeSlice(kSlice1, {}, 1, 1, "1", GenerateName(0));
        slice.spec.node_name.reset();
        slice.spec.all_nodes = true;
        test.expected = {slice};
        test.reconcile_pool_with_name = kPool;
        return test;
      }(),
      [] {
        Case test{"reconcile-with-pool-name-with-node-selector", {}, {}, {}, Stats{1, 0, 0}};
        Pool pool = PoolOf({{NewDevice("device")}});
        pool.node_selector = NodeSelector("node-a");
        test.input = OnePool(pool);
        ResourceSlice slice = NodeSlice(kSlice1, {NewDevice("device")}, 1, 1, "1", GenerateName(0));
        slice.spec.node_name.reset();
        slice.spec.node_selector = NodeSelector("node-a");
        test.expected = {slice};
        test.reconcile_pool_with_name = kPool;
        return test;
      }(),
      [] {
        Case test{"update-node-selector", {}, {}, {}, Stats{0, 1, 0}};
        test.initial = {
            AppSlice(kSlice1, {NewDevice("device")}, NodeSelector("node-a"), "", "", kSlice1)};
        Pool pool = PoolOf({{NewDevice("device")}});
        pool.node_selector = NodeSelector("node-b");
        test.input = OnePool(pool);
        test.expected = {
            AppSlice(kSlice1, {NewDevice("device")}, NodeSelector("node-b"), "1", "", kSlice1)};
        test.owner = OwnerKind::kApp;
        return test;
      }(),
      [] {
        Case test{"detect-resource-pools-with-duplicate-counter-sets", {}, {}, {}, Stats{}};
        Pool pool = PoolOf({}, 1);
        pool.slices = {Slice{{}, {{"counterset", Json::object(), Json::object()}}, std::nullopt},
                       Slice{{}, {{"counterset", Json::object(), Json::object()}}, std::nullopt}};
        test.input = OnePool(pool);
        test.errors = {
            "pool validation failed: found duplicate counter set \"counterset\" in pool "
            "\"pool\""};
        return test;
      }(),
      Case{"detect-duplicate-devices",
           {},
           OnePool(PoolOf({{NewDevice("device")}, {NewDevice("device")}}, 1)),
           {},
           Stats{},
           {"pool validation failed: found duplicate device \"device\" in pool \"pool\""}},
      [] {
        Case test{"detect-device-referencing-unknown-counter-set", {}, {}, {}, Stats{}};
        Device consumer = NewDevice("device");
        consumer.consumes_counters.push_back({"counterset", Json::object(), Json::object()});
        test.input = OnePool(PoolOf({{consumer}}, 1));
        test.errors = {
            "pool validation failed: counter set \"counterset\" referenced by device "
            "\"device\" not found"};
        return test;
      }(),
      [] {
        Case test{"detect-device-referencing-unknown-counter-in-counter-set", {}, {}, {}, Stats{}};
        Device consumer = NewDevice("device");
        consumer.consumes_counters.push_back(
            {"counterset", Json{{"cpu", {{"value", "4"}}}}, Json::object()});
        Pool pool = PoolOf({}, 1);
        pool.slices = {Slice{{},
                             {{"counterset", Json{{"memory", {{"value", "8Gi"}}}}, Json::object()}},
                             std::nullopt},
                       Slice{{consumer}, {}, std::nullopt}};
        test.input = OnePool(pool);
        test.errors = {
            "pool validation failed: counter \"cpu\" referenced by device \"device\" not "
            "found in counter set \"counterset\""};
        return test;
      }(),
      [] {
        Case test{"drop-consumable-capacity-field", {}, {}, {}, Stats{0, 1, 0}};
        test.initial = {NodeSlice(kSlice1, {NewDevice("device")}, 1, 1, "", GenerateName(0))};
        Device shared = NewDevice("device");
        shared.extra["allowMultipleAllocations"] = true;
        test.input = OnePool(PoolOf({{shared}}, 1));
        test.expected = {NodeSlice(kSlice1, {NewDevice("device")}, 1, 1, "1", GenerateName(0))};
        test.errors = {
            "update ResourceSlice: pool \"pool\", slice #0: some fields were dropped by the "
            "apiserver, probably because these features are disabled: DRAConsumableCapacity"};
        test.disabled.consumable_capacity = true;
        return test;
      }(),
      [] {
        Case test{
            "reconcile-with-pool-name-with-perdevice-node-selector", {}, {}, {}, Stats{1, 0, 0}};
        Device selecting = NewDevice("device");
        selecting.extra["nodeSelector"] = NodeSelector("node-a");
        Pool pool = PoolOf({{selecting}});
        pool.slices[0].per_device_node_selection = true;
        test.input = OnePool(pool);
        ResourceSlice slice = NodeSlice(kSlice1, {selecting}, 1, 1, "1", GenerateName(0));
        slice.spec.node_name.reset();
        slice.spec.per_device_node_selection = true;
        test.expected = {slice};
        test.reconcile_pool_with_name = kPool;
        return test;
      }(),
      PartitionableDevicesCase("create-partitionable-devices", Disabled{}),
      PartitionableDevicesCase("drop-partitionable-devices", Disabled{.partitionable = true}),
      BindingConditionsCase("create-device-with-binding-condition", Disabled{}),
      BindingConditionsCase("drop-device-with-binding-condition",
                            Disabled{.binding_conditions = true}),
      SkipNodeOperationsCase("create-slice-that-skips-node-operations", Disabled{}, false),
      SkipNodeOperationsCase("update-slice-to-skip-node-operations", Disabled{}, true),
      SkipNodeOperationsCase("drop-skip-node-operations",
                             Disabled{.optional_node_operations = true}, false),
      Case{"migration-from-random-naming-to-index-based-naming",
           {NodeSlice("random-name1", {NewDevice("device-1")}, 1, 3),
            NodeSlice("random-name2", {NewDevice("device-2")}, 1, 3),
            NodeSlice("random-name3", {NewDevice("device-3")}, 1, 3)},
           OnePool(
               PoolOf({{NewDevice("device-1")}, {NewDevice("device-2")}, {NewDevice("device-3")}})),
           {NodeSlice(kSlice1, {NewDevice("device-1")}, 2, 3, "1", GenerateName(0)),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 2, 3, "1", GenerateName(1)),
            NodeSlice(kSlice3, {NewDevice("device-3")}, 2, 3, "1", GenerateName(2))},
           Stats{3, 0, 3}},
      Case{"migration-mixed-naming",
           {NodeSlice("random-name1", {NewDevice("device-1")}, 1, 3),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 1, 3, "", GenerateName(1), kSlice2),
            NodeSlice("random-name3", {NewDevice("device-3")}, 1, 3)},
           OnePool(
               PoolOf({{NewDevice("device-1")}, {NewDevice("device-2")}, {NewDevice("device-3")}})),
           {NodeSlice(GenerateName(0) + "0", {NewDevice("device-1")}, 2, 3, "1", GenerateName(0)),
            NodeSlice(kSlice2, {NewDevice("device-2")}, 2, 3, "1", GenerateName(1), kSlice2),
            NodeSlice(GenerateName(2) + "1", {NewDevice("device-3")}, 2, 3, "1", GenerateName(2))},
           Stats{2, 1, 2}},
  };
}

INSTANTIATE_TEST_SUITE_P(, ControllerSyncPoolTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string name = param_info.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// FlakyStore fails the first `failures` creates, as an API server that is not reachable yet.
class FlakyStore final : public ForwardingSliceStore {
 public:
  explicit FlakyStore(int failures) : ForwardingSliceStore(store_), failures_(failures) {}
  absl::StatusOr<ResourceSlice> Create(const ResourceSlice& slice) override {
    if (failures_.fetch_sub(1) > 0) return absl::UnavailableError("connection refused");
    return ForwardingSliceStore::Create(slice);
  }
  size_t size() { return store_.List({})->size(); }

 private:
  std::atomic<int> failures_;
  MemoryStore store_;
};

// The options of node kOwner's controller on `store`, whose syncs the test runs, on `clock`.
ControllerOptions WorkerlessNodeOptions(SliceStore& store, testing::FakeClock& clock) {
  ControllerOptions options;
  options.driver_name = kDriver;
  options.store = &store;
  options.owner = Owner{"v1", "Node", kOwner, kNodeUid};
  options.run_worker = false;
  options.clock = &clock;
  return options;
}

// A store with no watch, as the daemon's over gRPC: the controller hears of no change.
class UnwatchedStore final : public ForwardingSliceStore {
 public:
  using ForwardingSliceStore::ForwardingSliceStore;
  std::unique_ptr<SliceWatch> Watch(const SliceFilter& /*filter*/,
                                    SliceChangeHandler /*on_change*/) override {
    return nullptr;
  }
};

// A workerless controller's options over `store` for slices owned by an object that is no
// Node (so no nodeName), every error added to `errors`.
ControllerOptions WorkerlessOptions(SliceStore& store, testing::FakeClock& clock,
                                    std::vector<std::string>& errors) {
  ControllerOptions options;
  options.driver_name = kDriver;
  options.store = &store;
  options.owner = Owner{"apps/v1", "Something", kOwner, ""};
  CollectErrors(options, errors);
  options.run_worker = false;
  options.clock = &clock;
  return options;
}

// A workerless controller of one pool with one device ("device-1") over `store`.
absl::StatusOr<std::unique_ptr<Controller>> StartOneDevicePool(SliceStore& store,
                                                               testing::FakeClock& clock) {
  ControllerOptions options = WorkerlessNodeOptions(store, clock);
  options.resources = OnePool(PoolOf({{NewDevice("device-1")}}));
  return Controller::Start(std::move(options));
}

// With its worker, the controller publishes each Update on its own and retries a store that
// fails, reporting each failure.
TEST(ControllerTest, TheWorkerPublishesUpdatesAndRetriesFailures) {
  FlakyStore store(2);
  absl::Mutex mu;
  std::vector<std::string> reported;
  ControllerOptions options;
  options.driver_name = kDriver;
  options.store = &store;
  options.owner = Owner{"v1", "Node", kOwner, kNodeUid};
  options.error_handler = [&](const ControllerError& error) {
    absl::MutexLock lock(&mu);
    reported.push_back(error.ToString());
  };
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  (*controller)->Update(OnePool(PoolOf({{NewDevice("device-1")}})));
  ASSERT_TRUE(WaitFor([&] { return store.size() == 1; }));
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(reported,
              std::vector<std::string>(2,
                                       "processing ResourceSlice objects: create resource slice: "
                                       "connection refused"));
  }
  (*controller)->Update(OnePool(PoolOf({{NewDevice("device-1")}, {NewDevice("device-2")}})));
  ASSERT_TRUE(WaitFor([&] { return store.size() == 2; }));
  (*controller)->Update(std::nullopt);
  ASSERT_TRUE(WaitFor([&] { return store.size() == 0; }));
  EXPECT_EQ((*controller)->GetStats(), (Stats{2, 1, 2}));
}

// Stop called from several threads at once: one joins the worker, the others wait for it, and
// every caller returns once the worker has ended (two joins of one thread are undefined: here
// they hung).
TEST(ControllerTest, StopFromSeveralThreadsAtOnceJoinsTheWorkerOnce) {
  constexpr int kStoppers = 4;
  for (int round = 0; round < 20; ++round) {
    MemoryStore store;
    ControllerOptions options;
    options.driver_name = kDriver;
    options.store = &store;
    options.owner = Owner{"v1", "Node", kOwner, kNodeUid};
    absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
    ASSERT_TRUE(controller.ok()) << controller.status();
    testing::RunAtOnce(kStoppers, [&] { (*controller)->Stop(); });
  }
}

// HeldStore holds its first create until released, and counts the creates that reach it; its
// watch says when it ends (Stop ends it once the stop is asked for, before it joins the worker).
class HeldStore final : public ForwardingSliceStore {
 public:
  HeldStore() : ForwardingSliceStore(store_) {}
  absl::StatusOr<ResourceSlice> Create(const ResourceSlice& slice) override {
    if (creates_.fetch_add(1) == 0) {
      entered_.Notify();
      release_.WaitForNotification();
    }
    return ForwardingSliceStore::Create(slice);
  }
  std::unique_ptr<SliceWatch> Watch(const SliceFilter& filter,
                                    SliceChangeHandler on_change) override {
    return std::make_unique<EndingWatch>(watch_ended_, store_.Watch(filter, std::move(on_change)));
  }

  int creates() const { return creates_.load(); }
  absl::Notification& entered() { return entered_; }
  absl::Notification& release() { return release_; }
  bool watch_ended() const { return watch_ended_.load(); }

 private:
  class EndingWatch final : public SliceWatch {
   public:
    EndingWatch(std::atomic<bool>& ended, std::unique_ptr<SliceWatch> watch)
        : ended_(ended), watch_(std::move(watch)) {}
    ~EndingWatch() override { ended_.store(true); }
    std::optional<CachedSlices> Cached(const SliceFilter& filter) const override {
      return watch_ == nullptr ? std::nullopt : watch_->Cached(filter);
    }
    bool Synced() const override { return watch_ == nullptr || watch_->Synced(); }

   private:
    std::atomic<bool>& ended_;
    std::unique_ptr<SliceWatch> watch_;
  };

  MemoryStore store_;
  std::atomic<int> creates_{0};
  std::atomic<bool> watch_ended_{false};
  absl::Notification entered_;
  absl::Notification release_;
};

// Stop ends a sync in flight: the write the store holds completes, and none of the pool's other
// slices is written after it, as upstream's cancelled context ends syncPool. Before, the sync
// sent all its remaining writes (each may wait out 429s for minutes) before Stop returned.
TEST(ControllerTest, StopEndsTheSyncInFlight) {
  HeldStore store;
  absl::Mutex mu;
  std::vector<std::string> reported;
  ControllerOptions options;
  options.driver_name = kDriver;
  options.store = &store;
  options.owner = Owner{"v1", "Node", kOwner, kNodeUid};
  options.error_handler = [&](const ControllerError& error) {
    absl::MutexLock lock(&mu);
    reported.push_back(error.ToString());
  };
  options.resources =
      OnePool(PoolOf({{NewDevice("device-1")}, {NewDevice("device-2")}, {NewDevice("device-3")}}));
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  // Released however the test ends, so that the worker and the stopper can finish.
  absl::Cleanup release = [&] {
    if (!store.release().HasBeenNotified()) store.release().Notify();
  };
  ASSERT_TRUE(store.entered().WaitForNotificationWithTimeout(absl::Seconds(10)));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    (*controller)->Stop();
    stopped.store(true);
  });
  absl::Cleanup join = [&] { stopper.join(); };
  ASSERT_TRUE(WaitFor([&] { return store.watch_ended(); })) << "Stop asked for";
  EXPECT_FALSE(stopped.load()) << "Stop waits for the write in flight";
  store.release().Notify();
  ASSERT_TRUE(WaitFor([&] { return stopped.load(); }));
  EXPECT_EQ(store.creates(), 1);
  EXPECT_EQ((*controller)->GetStats().num_creates, 1) << "the write sent is not undone";
  absl::MutexLock lock(&mu);
  EXPECT_THAT(reported, ::testing::IsEmpty()) << "a stop is no failure";
}

// The writes kept to lay over a store's copy expire after a minute, also over a store whose watch
// keeps no copy (the in-process store): a pool published and withdrawn again and again, each
// time under new slice names, does not grow them.
TEST(ControllerTest, TheWritesKeptExpireOverAStoreThatKeepsNoCopy) {
  MemoryStore store;
  testing::FakeClock clock;
  ControllerOptions options = WorkerlessNodeOptions(store, clock);
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  for (int i = 0; i < 50; ++i) {
    (*controller)->Update(OnePool(PoolOf({{NewDevice("device-1")}})));
    (*controller)->ProcessReady();
    (*controller)->Update(std::nullopt);
    (*controller)->ProcessReady();
    clock.Advance(absl::Minutes(2));
  }
  EXPECT_EQ((*controller)->GetStats(), (Stats{50, 0, 50}));
  EXPECT_LE((*controller)->MutationsKeptForTest(), 2u);
}

// The API server stores a quantity in its canonical form and leaves out empty lists: a pool
// written in other forms of the same values is written once, reports no dropped fields, and is
// not written again when synced or given again, as upstream's semantic comparison.
TEST(ControllerTest, WhatTheServerStoresInItsOwnFormIsNotWrittenAgain) {
  // The canonical forms of the quantities the test writes.
  const auto canonical = [](Json& quantity) {
    if (quantity == "1024Mi" || quantity == 1073741824) quantity = "1Gi";
    if (quantity == "2048Mi") quantity = "2Gi";
  };
  MemoryStore store([&](ResourceSlice& slice) {
    for (Device& device : slice.spec.devices) {
      canonical(device.extra["capacity"]["memory"]["value"]);
      canonical(device.consumes_counters[0].counters["memory"]["value"]);
    }
    for (kubeapi::CounterSet& set : slice.spec.shared_counters) {
      canonical(set.counters["memory"]["value"]);
    }
    for (Json& term : (*slice.spec.node_selector)["nodeSelectorTerms"]) {
      if (term["matchExpressions"].empty()) term.erase("matchExpressions");
    }
  });
  testing::FakeClock clock;
  std::vector<std::string> errors;
  ControllerOptions options = WorkerlessOptions(store, clock, errors);
  Device device = NewDevice("device");
  device.extra["capacity"] = {{"memory", {{"value", "1024Mi"}}}};
  device.consumes_counters.push_back(
      {"gpu", {{"memory", {{"value", 1073741824}}}}, Json::object()});
  Pool pool = PoolOf({});
  // Devices and the counters they draw on go in slices of their own, as the API wants.
  pool.slices.push_back(Slice{{device}, {}, std::nullopt});
  pool.slices.push_back(
      Slice{{}, {{"gpu", {{"memory", {{"value", "2048Mi"}}}}, Json::object()}}, std::nullopt});
  Json selector = NodeSelector("node-a");
  selector["nodeSelectorTerms"][0]["matchExpressions"] = Json::array();
  pool.node_selector = selector;
  options.resources = OnePool(pool);
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  (*controller)->ProcessReady();
  ASSERT_EQ((*controller)->GetStats(), (Stats{2, 0, 0}));
  EXPECT_EQ(errors, std::vector<std::string>());

  (*controller)->Resync();
  (*controller)->ProcessReady();
  (*controller)->Update(OnePool(pool));
  (*controller)->ProcessReady();
  EXPECT_EQ((*controller)->GetStats(), (Stats{2, 0, 0}));
  EXPECT_EQ(errors, std::vector<std::string>());

  // A value that did change is written.
  pool.slices[0].devices[0].extra["capacity"]["memory"]["value"] = "2Gi";
  (*controller)->Update(OnePool(pool));
  (*controller)->ProcessReady();
  EXPECT_EQ((*controller)->GetStats(), (Stats{2, 1, 0}));
}

// A pool whose node selector is a JSON null has none: the server reads "nodeSelector": null as
// absent, and the controller does not take that for a change. Before, every sync saw one and
// wrote the slice again, and each write's watch event asked for another sync.
TEST(ControllerTest, ANullNodeSelectorIsNoSelector) {
  MemoryStore store([](ResourceSlice& slice) {
    if (slice.spec.node_selector.has_value() && slice.spec.node_selector->is_null()) {
      slice.spec.node_selector.reset();
    }
  });
  testing::FakeClock clock;
  std::vector<std::string> errors;
  ControllerOptions options = WorkerlessOptions(store, clock, errors);
  Pool pool = PoolOf({{NewDevice("device")}});
  pool.node_selector = Json();
  options.resources = OnePool(pool);
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  (*controller)->ProcessReady();
  ASSERT_EQ((*controller)->GetStats(), (Stats{1, 0, 0}));
  (*controller)->Resync();
  (*controller)->ProcessReady();
  EXPECT_EQ((*controller)->GetStats(), (Stats{1, 0, 0}));
  absl::StatusOr<std::vector<ResourceSlice>> stored = store.List(SliceFilter{});
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_FALSE(kubeapi::EncodeResourceSlice((*stored)[0])["spec"].contains("nodeSelector"));
  EXPECT_EQ(errors, std::vector<std::string>());
}

// A slice the API server would refuse for its devices (here 129, one over the limit) is
// reported once and not written: a write could only fail, again at each retry, and with the
// pool's other slices updated before each failed create. Before, it was tried.
TEST(ControllerTest, ASliceWithTooManyDevicesIsReportedNotWritten) {
  std::vector<Device> devices;
  for (int i = 0; i < 129; ++i) devices.push_back(NewDevice(absl::StrCat("device-", i)));
  for (const bool watched : {true, false}) {
    SCOPED_TRACE(watched ? "a store with a watch" : "a store without a watch");
    MemoryStore memory;
    UnwatchedStore unwatched(memory);
    testing::FakeClock clock;
    std::vector<std::string> errors;
    ControllerOptions options =
        WorkerlessOptions(watched ? static_cast<SliceStore&>(memory) : unwatched, clock, errors);
    options.resources = OnePool(PoolOf({devices}));
    absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
    ASSERT_TRUE(controller.ok()) << controller.status();
    (*controller)->ProcessReady();
    EXPECT_EQ((*controller)->GetStats(), (Stats{0, 0, 0}));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_THAT(errors[0], ::testing::HasSubstr("pool validation failed"));
    EXPECT_THAT(errors[0], ::testing::HasSubstr("spec.devices: Too many: 129"));
    clock.Advance(absl::Minutes(5));
    (*controller)->ProcessReady();
    EXPECT_EQ(errors.size(), 1u) << "not retried";
  }
}

// Validation is per pool: a pool found invalid is reported and left alone, while the driver's
// other pools are published and a pool it dropped is removed. Before, one invalid pool stopped
// every pool's sync.
TEST(ControllerTest, AnInvalidPoolHoldsUpNoOtherPool) {
  MemoryStore store;
  ResourceSlice dropped =
      NodeSlice("dropped-slice", {NewDevice("old")}, 1, 1, "", "", "dropped-uid");
  dropped.spec.pool.name = "dropped";
  store.Put(dropped);
  testing::FakeClock clock;
  std::vector<std::string> errors;
  ControllerOptions options = WorkerlessNodeOptions(store, clock);
  CollectErrors(options, errors);
  std::vector<Device> too_many;
  for (int i = 0; i < 129; ++i) too_many.push_back(NewDevice(absl::StrCat("device-", i)));
  DriverResources resources;
  resources.pools["invalid"] = PoolOf({too_many});
  resources.pools["valid"] = PoolOf({{NewDevice("device")}});
  options.resources = std::move(resources);
  options.sync_delay = absl::ZeroDuration();  // the dropped pool is looked at at once
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  (*controller)->ProcessReady();
  EXPECT_EQ((*controller)->GetStats(), (Stats{1, 0, 1}));
  absl::StatusOr<std::vector<ResourceSlice>> stored = store.List(SliceFilter{});
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].spec.pool.name, "valid");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], ::testing::HasSubstr("pool validation failed: pool \"invalid\""));
}

// A Node owner given without its uid: the controller looks it up once, for the owner reference.
TEST(ControllerTest, ANodeOwnersUidIsLookedUp) {
  MemoryStore store;
  store.SetNode(kOwner, "uid-from-the-node");
  ControllerOptions options;
  options.driver_name = kDriver;
  options.store = &store;
  options.owner = Owner{"v1", "Node", kOwner, ""};
  options.resources = OnePool(PoolOf({{NewDevice("device-1")}}));
  options.run_worker = false;
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  EXPECT_EQ((*controller)->ProcessReady(), 1);
  absl::StatusOr<std::vector<ResourceSlice>> stored = store.List({});
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].metadata.owner_references[0].uid, "uid-from-the-node");
  EXPECT_EQ((*stored)[0].spec.node_name, kOwner);
}

// Retries share one limit beside each pool's back-off, as upstream's workqueue's default
// controller rate limiter: after a burst of 100, failed syncs of all pools together are tried
// again at 10 a second. Before, each pool had its back-off alone: 105 pools that failed at once
// were all tried again 5 ms later, and again 10 ms after that, however many there were.
TEST(ControllerTest, RetriesOfAllPoolsTogetherAreLimitedAfterABurst) {
  FlakyStore store(std::numeric_limits<int>::max());
  testing::FakeClock clock;
  std::vector<std::string> errors;
  ControllerOptions options = WorkerlessNodeOptions(store, clock);
  CollectErrors(options, errors);
  constexpr int kPools = kRetryBurst + 5;
  DriverResources resources;
  for (int i = 0; i < kPools; ++i) {
    resources.pools[absl::StrCat("pool-", i)] = PoolOf({{NewDevice("device")}});
  }
  options.resources = std::move(resources);
  absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
  ASSERT_TRUE(controller.ok()) << controller.status();
  EXPECT_EQ((*controller)->ProcessReady(), kPools) << "each fails once";
  clock.Advance(absl::Milliseconds(5));  // a pool's first back-off
  EXPECT_EQ((*controller)->ProcessReady(), kRetryBurst) << "the burst";
  // The other five wait for their tokens, one every 100 ms from the first failures.
  clock.Advance(absl::Milliseconds(96));
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    if (i > 0) clock.Advance(absl::Milliseconds(100));
    EXPECT_EQ((*controller)->ProcessReady(), 1);
  }
  // The burst's second failures took the tokens after those: the first comes at 600 ms.
  clock.Advance(absl::Milliseconds(98));
  EXPECT_EQ((*controller)->ProcessReady(), 0);
  clock.Advance(absl::Milliseconds(2));
  EXPECT_EQ((*controller)->ProcessReady(), 1);
  EXPECT_THAT(errors, ::testing::Each(::testing::HasSubstr("connection refused")));
}

// ListCountingStore counts the lists that reach it.
class ListCountingStore final : public ForwardingSliceStore {
 public:
  using ForwardingSliceStore::ForwardingSliceStore;
  absl::StatusOr<std::vector<ResourceSlice>> List(const SliceFilter& filter) override {
    ++lists;
    return ForwardingSliceStore::List(filter);
  }

  int lists = 0;
};

// A pool that has slices in the store at the start is synced after the sync delay (here its
// slices are removed: the driver has it no more). A store's watch reports those slices, as
// upstream's informer reports what its one list found; over a store with no watch the controller
// lists the store, once. Before, it listed every store itself, an API server a second time
// after its watch's list.
TEST(ControllerTest, ThePoolsInTheStoreAtTheStartAreFoundWithOneList) {
  for (const bool watched : {true, false}) {
    SCOPED_TRACE(watched ? "a store with a watch" : "a store without a watch");
    MemoryStore memory;
    memory.Put(NodeSlice("old-slice", {NewDevice("old")}, 1, 1, "1", "", "old-uid"));
    UnwatchedStore unwatched(memory);
    ListCountingStore store(watched ? static_cast<SliceStore&>(memory) : unwatched);
    testing::FakeClock clock;
    absl::StatusOr<std::unique_ptr<Controller>> controller =
        Controller::Start(WorkerlessNodeOptions(store, clock));
    ASSERT_TRUE(controller.ok()) << controller.status();
    EXPECT_EQ(store.lists, watched ? 0 : 1);
    EXPECT_EQ((*controller)->ProcessReady(), 0) << "not before the delay";
    clock.Advance(kDefaultSyncDelay);
    EXPECT_EQ((*controller)->ProcessReady(), 1);
    EXPECT_EQ((*controller)->GetStats(), (Stats{0, 0, 1}));
    EXPECT_TRUE(memory.List({})->empty());
  }
}

// The store's watch, the controller's informer: a slice someone else deletes has its pool
// synced after the sync delay (the fake clock's), which puts it back.
TEST(ControllerTest, ASliceDeletedBehindItsBackIsPutBackAfterTheSyncDelay) {
  MemoryStore store;
  testing::FakeClock clock;
  absl::StatusOr<std::unique_ptr<Controller>> controller = StartOneDevicePool(store, clock);
  ASSERT_TRUE(controller.ok()) << controller.status();
  EXPECT_EQ((*controller)->ProcessReady(), 1);
  const ResourceSlice published = store.List({})->at(0);
  ASSERT_TRUE(store.Delete(published.metadata.name, "", "").ok());
  EXPECT_EQ((*controller)->ProcessReady(), 0);  // not before the delay
  clock.Advance(kDefaultSyncDelay);
  EXPECT_GE((*controller)->ProcessReady(), 1);
  ASSERT_EQ(store.List({})->size(), 1u);
  EXPECT_EQ(store.List({})->at(0).spec.devices, published.spec.devices);
  EXPECT_EQ((*controller)->GetStats().num_creates, 2);

  // Its own write is an event too (as upstream's informer sees it): one more sync, no write.
  clock.Advance(kDefaultSyncDelay);
  EXPECT_EQ((*controller)->ProcessReady(), 1);
  EXPECT_EQ((*controller)->GetStats().num_creates, 2);
  // The look its second create asked for, once the mutation cache's minute is over.
  clock.Advance(kMutationCacheTtl);
  EXPECT_EQ((*controller)->ProcessReady(), 1);
  EXPECT_EQ((*controller)->GetStats().num_creates, 2);

  // A slice of another driver is none of its business.
  ResourceSlice other = published;
  other.metadata.name = "other";
  other.spec.driver = "other.example.com";
  store.Put(other);
  clock.Advance(kDefaultSyncDelay);
  EXPECT_EQ((*controller)->ProcessReady(), 0);
}

// A store with no watch (the daemon's, over gRPC) says nothing when someone else deletes a
// slice: the controller looks at each desired pool again every sync delay, and puts the slice
// back; a look that finds nothing changed writes nothing. Before, the slice stayed gone.
TEST(ControllerTest, OverAStoreWithoutAWatchASliceDeletedBehindItsBackIsPutBack) {
  MemoryStore memory;
  UnwatchedStore store(memory);
  testing::FakeClock clock;
  absl::StatusOr<std::unique_ptr<Controller>> controller = StartOneDevicePool(store, clock);
  ASSERT_TRUE(controller.ok()) << controller.status();
  EXPECT_EQ((*controller)->ProcessReady(), 1);
  clock.Advance(kDefaultSyncDelay);
  EXPECT_EQ((*controller)->ProcessReady(), 1);
  EXPECT_EQ((*controller)->GetStats(), (Stats{1, 0, 0})) << "nothing changed: nothing written";

  const ResourceSlice published = memory.List({})->at(0);
  ASSERT_TRUE(memory.Delete(published.metadata.name, "", "").ok());
  EXPECT_EQ((*controller)->ProcessReady(), 0);  // not before the delay
  clock.Advance(kDefaultSyncDelay);
  EXPECT_EQ((*controller)->ProcessReady(), 1);
  ASSERT_EQ(memory.List({})->size(), 1u);
  EXPECT_EQ(memory.List({})->at(0).spec.devices, published.spec.devices);
  EXPECT_EQ((*controller)->GetStats().num_creates, 2);
}

// A store whose watch keeps a copy (as the API store's does) and reports a change before the
// write that made it returns; with `delete_created`, a slice it creates is deleted by someone
// else at once, and the watch says so before the controller hears that it was created. The
// copy's version counts the writes, as an API server's resourceVersion does (the in-process
// store's first write of a slice is its version "1").
class RacingStore final : public ForwardingSliceStore {
 public:
  RacingStore() : ForwardingSliceStore(store_) {}
  absl::StatusOr<std::vector<ResourceSlice>> List(const SliceFilter& filter) override {
    ++lists;
    return store_.List(filter);
  }
  absl::StatusOr<ResourceSlice> Create(const ResourceSlice& slice) override {
    absl::StatusOr<ResourceSlice> created = store_.Create(slice);
    ++writes_;
    if (created.ok() && delete_created) {
      delete_created = false;
      EXPECT_TRUE(store_.Delete(created->metadata.name, "", "").ok());
      ++writes_;
    }
    return created;
  }
  absl::StatusOr<ResourceSlice> Update(const ResourceSlice& slice) override {
    ++writes_;
    return store_.Update(slice);
  }
  absl::Status Delete(const std::string& name, const std::string& uid,
                      const std::string& resource_version) override {
    ++writes_;
    return store_.Delete(name, uid, resource_version);
  }
  std::unique_ptr<SliceWatch> Watch(const SliceFilter& filter,
                                    SliceChangeHandler on_change) override {
    return std::make_unique<CopyingWatch>(*this, store_.Watch(filter, std::move(on_change)));
  }
  size_t size() { return store_.List({})->size(); }

  bool delete_created = false;
  int lists = 0;

 private:
  class CopyingWatch final : public SliceWatch {
   public:
    CopyingWatch(RacingStore& store, std::unique_ptr<SliceWatch> watch)
        : store_(store), watch_(std::move(watch)) {}
    std::optional<CachedSlices> Cached(const SliceFilter& filter) const override {
      CachedSlices copy;
      copy.resource_version = std::to_string(store_.writes_.load());
      absl::StatusOr<std::vector<ResourceSlice>> listed = store_.store_.List(filter);
      if (!listed.ok()) return copy;
      for (ResourceSlice& slice : *listed) {
        copy.slices.push_back(std::make_shared<const ResourceSlice>(std::move(slice)));
      }
      return copy;
    }
    bool Synced() const override { return true; }

   private:
    RacingStore& store_;
    std::unique_ptr<SliceWatch> watch_;
  };

  MemoryStore store_;
  std::atomic<int> writes_{0};
};

// Upstream's TestControllerUpdateReconcilePoolWithNameValidation: with ReconcilePoolWithName an
// update must hold that pool alone, or none.
TEST(ControllerTest, TestControllerUpdateReconcilePoolWithNameValidation) {
  struct UpdateCase {
    std::string name;
    std::vector<std::string> pools;
    std::string error;  // empty: none
  };
  for (const UpdateCase& test : std::vector<UpdateCase>{
           {"multiple pools returns error",
            {kPool, "other-pool"},
            "found 2 pools; expected exactly one pool with this name"},
           {"wrong pool only returns error",
            {"other-pool"},
            "found 1 pools; expected exactly one pool with this name"},
           {"empty pools succeeds", {}, ""},
           {"single matching pool succeeds", {kPool}, ""},
       }) {
    SCOPED_TRACE(test.name);
    MemoryStore store;
    testing::FakeClock clock;
    ControllerOptions options = WorkerlessNodeOptions(store, clock);
    options.reconcile_pool_with_name = kPool;
    std::vector<std::string> errors;
    CollectErrors(options, errors);
    absl::StatusOr<std::unique_ptr<Controller>> controller = Controller::Start(std::move(options));
    ASSERT_TRUE(controller.ok()) << controller.status();
    DriverResources resources;
    for (const std::string& pool : test.pools) resources.pools[pool] = PoolOf({{}});
    (*controller)->Update(resources);
    if (test.error.empty()) {
      EXPECT_TRUE(errors.empty()) << errors.front();
    } else {
      ASSERT_EQ(errors.size(), 1u);
      EXPECT_THAT(errors[0], ::testing::HasSubstr(test.error));
    }
  }
}

// A sync sooner than the look a create asked for (an Update, a registration's Resync, the
// watch) does not take that look away: the pool stays queued for the end of the mutation cache's
// minute, as upstream's syncPool queues it again. Before, the sooner sync replaced it, and a
// slice deleted while the watch was away stayed missing until something else changed.
TEST(ControllerTest, ASoonerSyncKeepsTheLookACreateAskedFor) {
  MemoryStore store;
  testing::FakeClock clock;
  absl::StatusOr<std::unique_ptr<Controller>> controller = StartOneDevicePool(store, clock);
  ASSERT_TRUE(controller.ok()) << controller.status();
  EXPECT_EQ((*controller)->ProcessReady(), 1);
  EXPECT_EQ((*controller)->GetStats().num_creates, 1);
  clock.Advance(absl::Seconds(1));
  (*controller)->Resync();
  EXPECT_EQ((*controller)->ProcessReady(), 1) << "the resync";
  clock.Advance(kMutationCacheTtl);
  EXPECT_EQ((*controller)->ProcessReady(), 1) << "the look the create asked for";
  clock.Advance(kMutationCacheTtl);
  EXPECT_EQ((*controller)->ProcessReady(), 0) << "asked for once";
  EXPECT_EQ((*controller)->GetStats().num_creates, 1);
}

// The mutation cache must not bring back a slice the watch saw deleted before the create that
// made it returned (its name is never used again); the next sync creates a new one.
TEST(ControllerTest, ASliceDeletedBeforeItsCreateReturnedIsNotHiddenByTheMutationCache) {
  RacingStore store;
  store.delete_created = true;
  testing::FakeClock clock;
  absl::StatusOr<std::unique_ptr<Controller>> controller = StartOneDevicePool(store, clock);
  ASSERT_TRUE(controller.ok()) << controller.status();
  EXPECT_EQ((*controller)->ProcessReady(), 1);
  EXPECT_EQ(store.size(), 0u);
  clock.Advance(kDefaultSyncDelay);  // the deletion's sync; well inside the cache's minute
  (*controller)->ProcessReady();
  EXPECT_EQ(store.size(), 1u);
  EXPECT_EQ((*controller)->GetStats().num_creates, 2);
  EXPECT_EQ(store.lists, 0) << "syncs read the watch's copy, and the watch reported the start";
}

TEST(MemoryStoreTest, TellsItsWatchersWhichPoolsChangedUntilTheWatchEnds) {
  MemoryStore store;
  std::vector<std::string> told;
  std::unique_ptr<SliceWatch> watch =
      store.Watch({kDriver, "", ""}, [&](const ResourceSlice* before, const ResourceSlice* after) {
        told.push_back((before != nullptr ? before->spec.pool.name : "-") + ">" +
                       (after != nullptr ? after->spec.pool.name : "-"));
      });
  ASSERT_NE(watch, nullptr);
  ResourceSlice slice = NodeSlice("", {NewDevice("d")}, 1, 1, "", "s-");
  absl::StatusOr<ResourceSlice> created = store.Create(slice);
  ASSERT_TRUE(created.ok());
  ResourceSlice moved = *created;
  moved.spec.pool.name = "other-pool";
  ASSERT_TRUE(store.Update(moved).ok());
  ASSERT_TRUE(store.DeleteCollection({kDriver, "", ""}).ok());
  EXPECT_EQ(told, (std::vector<std::string>{"->pool", "pool>other-pool", "other-pool>-"}));
  watch.reset();
  ASSERT_TRUE(store.Create(slice).ok());
  EXPECT_EQ(told.size(), 3u);
}

// A watch starts by reporting the slices there as created, before Watch returns, as an
// informer reports what its first list found; the controller needs no list of its own.
TEST(MemoryStoreTest, AWatchReportsTheSlicesThereAtTheStart) {
  MemoryStore store;
  store.Put(NodeSlice("mine", {NewDevice("d")}, 1, 1));
  ResourceSlice other = NodeSlice("other", {NewDevice("d")}, 1, 1);
  other.spec.driver = "other.example.com";
  store.Put(other);
  std::vector<std::string> told;
  std::unique_ptr<SliceWatch> watch =
      store.Watch({kDriver, "", ""}, [&](const ResourceSlice* before, const ResourceSlice* after) {
        told.push_back((before != nullptr ? before->metadata.name : "-") + ">" +
                       (after != nullptr ? after->metadata.name : "-"));
      });
  ASSERT_NE(watch, nullptr);
  EXPECT_EQ(told, std::vector<std::string>{"->mine"});
}

TEST(SliceNamesTest, TestGetIndexLength) {
  for (const auto& [slices, length] : std::vector<std::pair<int64_t, int>>{{-1, 5},
                                                                           {0, 5},
                                                                           {1, 5},
                                                                           {16, 5},
                                                                           {0x10000, 5},
                                                                           {0x100000, 5},
                                                                           {0x100001, 6},
                                                                           {0x1000000, 6}}) {
    EXPECT_EQ(IndexLength(slices), length) << slices;
  }
}

TEST(SliceNamesTest, TestEncodeIndex) {
  for (const auto& [index, length, encoded] :
       std::vector<std::tuple<int64_t, int, std::string>>{{0, 5, "00000"},
                                                          {1, 5, "00001"},
                                                          {9, 5, "00009"},
                                                          {10, 5, "0000a"},
                                                          {26, 5, "0001a"},
                                                          {27, 5, "0001b"},
                                                          {35, 5, "00023"},
                                                          {36, 5, "00024"},
                                                          {100000, 5, "186a0"},
                                                          {0, 6, "000000"},
                                                          {1048576, 6, "100000"}}) {
    EXPECT_EQ(EncodeIndex(index, length), encoded) << index;
  }
}

TEST(SliceNamesTest, TestDecodeIndex) {
  struct Decode {
    const char* name;
    int length;
    int64_t index;
    const char* error;  // a prefix of the error; null: none
  };
  for (const Decode& test : std::vector<Decode>{
           {"00000-", 5, 0, nullptr},
           {"00001-", 5, 1, nullptr},
           {"00009-", 5, 9, nullptr},
           {"0000a-", 5, 10, nullptr},
           {"0001a-", 5, 26, nullptr},
           {"0001b-", 5, 27, nullptr},
           {"00023-", 5, 35, nullptr},
           {"00024-", 5, 36, nullptr},
           {"186a0-", 5, 100000, nullptr},
           {"100000-", 6, 1048576, nullptr},
           {"80000000-", 8, int64_t{0x80000000}, nullptr},
           {"8000000000000000-", 16, 0, "failed to parse index"},
           {"00000-driver-owner-suffix", 5, 0, nullptr},
           {"00001-driver-owner-suffix", 5, 1, nullptr},
           {"00000", 5, 0, "invalid index length or missing separator"},
           {"0000g-", 5, 0, "failed to parse index"},
           {"-0001-", 5, 0, "invalid index length or missing separator"},
           {"00000-", 6, 0, "invalid index length or missing separator"},
           {"100000-", 5, 0, "invalid index length or missing separator"},
       }) {
    absl::StatusOr<int64_t> index = DecodeIndex(test.name, test.length);
    if (test.error == nullptr) {
      ASSERT_TRUE(index.ok()) << test.name << ": " << index.status();
      EXPECT_EQ(*index, test.index) << test.name;
    } else {
      EXPECT_TRUE(absl::StartsWith(index.status().message(), test.error))
          << test.name << ": " << index.status();
    }
  }
}

}  // namespace
}  // namespace devmgr::resourceslice
