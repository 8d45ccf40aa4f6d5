// embed_manager: the smallest host that embeds the device manager, to copy as the start of your
// own. It serves the device plugin registration socket in PLUGIN_DIR, waits until RESOURCE has
// COUNT healthy devices, admits a pod whose one container asks for them, prints what that
// container holds and the options to run it with, and stops.
//
//   embed_manager PLUGIN_DIR RESOURCE COUNT
//   e.g. embed_manager /tmp/node/device-plugins example.com/gpu 2
//
// Output, one item a line: "allocated RESOURCE DEVICE_ID", then the run options as "env K=V",
// "mount CONTAINER_PATH HOST_PATH ro|rw", "device CONTAINER_PATH HOST_PATH PERMISSIONS",
// "annotation K=V" and "cdi NAME". Exit 0 on success, 1 when a step fails (the reason on
// stderr), 2 for bad arguments. docs/EMBEDDING.md explains each call.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devicemanager/manager.h"
#include "devicemanager/pod.h"

namespace {

using devmgr::devicemanager::Container;
using devmgr::devicemanager::Manager;
using devmgr::devicemanager::ManagerOptions;
using devmgr::devicemanager::Pod;
using devmgr::devicemanager::RunContainerOptions;

// How long to wait for the plugin to register and report its devices.
constexpr absl::Duration kDeviceWait = absl::Seconds(30);

// ActivePods is the host's list of running pods. The Manager calls List from its own threads
// before every admission and when it collects garbage: a pod missing from it loses its devices.
class ActivePods {
 public:
  void Add(std::string uid) {
    absl::MutexLock lock(&mu_);
    uids_.push_back(std::move(uid));
  }
  std::vector<std::string> List() const {
    absl::MutexLock lock(&mu_);
    return uids_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> uids_ ABSL_GUARDED_BY(mu_);
};

// WaitForDevices blocks until `resource` has at least `count` healthy devices or `timeout`
// passes. The Manager runs the change callback on its loop thread after every change in
// capacity or health, so this waits for news instead of polling on a timer.
bool WaitForDevices(Manager& manager, const std::string& resource, int64_t count,
                    absl::Duration timeout) {
  absl::Mutex mu;
  int64_t changes = 0;  // guarded by mu
  const int subscription = manager.Subscribe([&] {
    absl::MutexLock lock(&mu);
    ++changes;
  });
  const absl::Time deadline = absl::Now() + timeout;
  bool ready = false;
  while (true) {
    int64_t seen = 0;
    {
      absl::MutexLock lock(&mu);
      seen = changes;
    }
    // GetCapacity is also what a host calls periodically for node status.
    const devmgr::devicemanager::CapacityResult capacity = manager.GetCapacity();
    const auto healthy = capacity.allocatable.find(resource);
    ready = healthy != capacity.allocatable.end() && healthy->second >= count;
    if (ready || absl::Now() >= deadline) break;
    auto changed = [&] { return changes != seen; };
    absl::MutexLock lock(&mu);
    mu.AwaitWithDeadline(absl::Condition(&changed), deadline);
  }
  // After Unsubscribe returns the callback never runs again, so `mu` may go out of scope.
  manager.Unsubscribe(subscription);
  return ready;
}

void Print(const RunContainerOptions& options) {
  for (const auto& [key, value] : options.envs) std::cout << "env " << key << "=" << value << "\n";
  for (const auto& mount : options.mounts) {
    std::cout << "mount " << mount.container_path << " " << mount.host_path << " "
              << (mount.read_only ? "ro" : "rw") << "\n";
  }
  for (const auto& device : options.devices) {
    std::cout << "device " << device.container_path << " " << device.host_path << " "
              << device.permissions << "\n";
  }
  for (const auto& [key, value] : options.annotations) {
    std::cout << "annotation " << key << "=" << value << "\n";
  }
  for (const auto& name : options.cdi_devices) std::cout << "cdi " << name << "\n";
}

int Fail(const std::string& step, const absl::Status& status) {
  std::cerr << "embed_manager: " << step << ": " << status << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t count = 0;
  if (argc != 4 || !absl::SimpleAtoi(argv[3], &count) || count < 1) {
    std::cerr << "usage: embed_manager PLUGIN_DIR RESOURCE COUNT\n";
    return 2;
  }
  const std::string resource = argv[2];

  ManagerOptions options;
  options.plugin_dir = argv[1];  // kubelet.sock and the checkpoint go here
  // The library never logs on its own: the host hands it a logger (here, to stderr).
  options.logger =
      std::make_shared<spdlog::logger>("devmgr", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  devmgr::devicemanager::ManagerPtr manager = devmgr::devicemanager::CreateManager(options);

  // Start restores the checkpoint and serves kubelet.sock. This host has no other pod sources
  // to hear from, so they are ready at once; a kubelet answers false until it has synced.
  ActivePods active_pods;
  absl::Status status =
      manager->Start([&active_pods] { return active_pods.List(); }, [] { return true; });
  if (!status.ok()) return Fail("start", status);

  if (!WaitForDevices(*manager, resource, count, kDeviceWait)) {
    manager->Stop();
    return Fail("wait for devices",
                absl::DeadlineExceededError(resource + " has too few healthy devices"));
  }

  Pod pod;
  pod.uid = "9f6d2b1c-embed-manager-example";  // a host uses the pod's UID from the API server
  pod.namespace_name = "default";
  pod.name = "embed-manager-example";
  Container container;
  container.name = "main";
  container.devices[resource] = count;
  pod.containers.push_back(container);

  // The pod is active before it is admitted: admission first frees the devices of pods that
  // are not, which would include this one.
  active_pods.Add(pod.uid);
  status = manager->AdmitPod(pod);  // blocks on the plugin's Allocate and the checkpoint write
  if (!status.ok()) {
    manager->Stop();
    return Fail("admit", status);
  }
  for (const auto& [name, devices] : manager->GetDevices(pod.uid, container.name)) {
    for (const auto& [id, device] : devices) std::cout << "allocated " << name << " " << id << "\n";
  }

  // What the container runtime needs to start the container with its devices.
  absl::StatusOr<RunContainerOptions> run_options =
      manager->GetDeviceRunContainerOptions(pod, container);
  if (!run_options.ok()) {
    manager->Stop();
    return Fail("run options", run_options.status());
  }
  Print(*run_options);

  // Stop writes the checkpoint: a host started again on the same folder finds the pod's
  // devices still allocated.
  manager->Stop();
  return 0;
}
