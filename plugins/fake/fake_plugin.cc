#include "plugins/fake/fake_plugin.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

namespace devmgr::plugins {

using deviceplugin::DeviceInfo;
using deviceplugin::DeviceTree;
using deviceplugin::Health;

DeviceTree FakeScanner::BuildTree() const {
  DeviceTree tree;
  for (int64_t i = 0; i < options_.devices; ++i) {
    const std::string id = absl::StrCat(options_.id_prefix, i);
    DeviceInfo info;
    info.health = unhealthy_[static_cast<size_t>(i)] ? Health::kUnhealthy : Health::kHealthy;
    info.envs[absl::StrCat("DEVMGR_FAKE_DEVICE_", i)] = id;
    if (options_.null_device_nodes) {
      info.nodes = {
          {.host_path = "/dev/null", .container_path = absl::StrCat("/dev/devmgr-fake/", id)}};
    }
    if (options_.numa_nodes > 0) info.numa_nodes = {i % options_.numa_nodes};
    tree.AddDevice(options_.device_type, id, std::move(info));
  }
  return tree;
}

absl::Status FakeScanner::Scan(deviceplugin::Notifier& notifier,
                               const deviceplugin::StopToken& stop) {
  unhealthy_.assign(static_cast<size_t>(options_.devices), false);
  notifier.Notify(BuildTree());
  {
    absl::MutexLock lock(&mu_);
    scanning_ = &stop;
  }
  absl::Time next_scheduled = options_.flip_every > absl::ZeroDuration()
                                  ? absl::Now() + options_.flip_every
                                  : absl::InfiniteFuture();
  // Flips requested before the token was set are made on the first pass.
  do {
    int64_t flips = flips_requested_.exchange(0);
    if (absl::Now() >= next_scheduled) {
      ++flips;
      next_scheduled = absl::Now() + options_.flip_every;
    }
    if (flips == 0 || options_.devices == 0) continue;
    for (int64_t i = 0; i < flips; ++i) {
      const size_t index = static_cast<size_t>(next_flip_);
      unhealthy_[index] = !unhealthy_[index];
      next_flip_ = (next_flip_ + 1) % options_.devices;
    }
    notifier.Notify(BuildTree());
  } while (!stop.WaitForStop(next_scheduled - absl::Now()));
  absl::MutexLock lock(&mu_);
  scanning_ = nullptr;
  return absl::OkStatus();
}

void FakeScanner::RequestFlip() {
  flips_requested_.fetch_add(1);
  absl::MutexLock lock(&mu_);
  if (scanning_ != nullptr) scanning_->Wake();
}

absl::Status FakeHooks::StoppedDuringTheCall() {
  return absl::UnavailableError("the plugin stopped during the call");
}

deviceplugin::Hooks FakeHooks::AsHooks() {
  deviceplugin::Hooks hooks;
  hooks.allocator = this;
  if (options_.preferred != PreferredPolicy::kNone) hooks.preferred_allocator = this;
  return hooks;
}

deviceplugin::HookResult<v1beta1::AllocateResponse> FakeHooks::Allocate(
    const std::string& /*device_type*/, const v1beta1::AllocateRequest& /*request*/) {
  // A wait that the plugin's stop ends fails the call, as a plugin that goes away mid-call
  // fails it: it never answers with devices.
  if (options_.allocate_latency > absl::ZeroDuration() &&
      released_.WaitForNotificationWithTimeout(options_.allocate_latency)) {
    return StoppedDuringTheCall();
  }
  if (options_.allocate_hang) {
    released_.WaitForNotification();
    return StoppedDuringTheCall();
  }
  if (!options_.allocate_error.empty()) return absl::InternalError(options_.allocate_error);
  return deviceplugin::UseDefault();
}

deviceplugin::HookResult<v1beta1::PreferredAllocationResponse> FakeHooks::GetPreferredAllocation(
    const std::string& /*device_type*/, const v1beta1::PreferredAllocationRequest& request) {
  if (options_.preferred_hang) {
    released_.WaitForNotification();
    return StoppedDuringTheCall();
  }
  if (options_.preferred == PreferredPolicy::kNuma) return deviceplugin::UseDefault();
  // kFirst: must_include, then the offered devices in the order given.
  v1beta1::PreferredAllocationResponse response;
  for (const auto& container : request.container_requests()) {
    auto* out = response.add_container_responses();
    std::set<std::string> taken;
    const size_t size = static_cast<size_t>(std::max(0, container.allocation_size()));
    auto take = [&](const std::string& id) {
      if (taken.size() < size && taken.insert(id).second) out->add_deviceids(id);
    };
    for (const auto& id : container.must_include_deviceids()) take(id);
    for (const auto& id : container.available_deviceids()) take(id);
  }
  return response;
}

}  // namespace devmgr::plugins
