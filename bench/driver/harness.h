// What every measurement of `devmgr bench` shares to set up its work and to see it done: the
// clock, gRPC call helpers, SDK plugins started in the bench root, and waits on the daemon's
// PodResources and metrics (devices allocatable, devices healthy, heap trimmed). Every wait is
// bounded and polls; none of these helpers is safe to call from a gRPC reaction.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "bench/driver/bench_daemon.h"
#include "deviceplugin/device_tree.h"
#include "deviceplugin/plugin.h"

namespace devmgr::bench {

using Clock = std::chrono::steady_clock;

// The resource namespace of every plugin the driver starts.
inline constexpr char kNamespace[] = "bench.example.com";
inline constexpr absl::Duration kStartTimeout = absl::Seconds(60);
// Longer than the daemon's heap trimmer can take after work ends (HeapTrimmer::Options).
inline constexpr absl::Duration kHeapTrimWait = absl::Seconds(15);
inline constexpr absl::Duration kCallTimeout = absl::Seconds(120);

// MicrosSince is the time from `start` to now, in microseconds.
double MicrosSince(Clock::time_point start);

// FromGrpc is `status` as an absl::Status of the same code, its message prefixed with `what`.
absl::Status FromGrpc(absl::string_view what, const grpc::Status& status);

// SetDeadline gives a call kCallTimeout.
void SetDeadline(grpc::ClientContext& context);

// Resource is the full resource name of `type`: "bench.example.com/<type>".
std::string Resource(const std::string& type);

// DeviceTreeOf: `devices` healthy devices "<type>-<i>" of `type`.
deviceplugin::DeviceTree DeviceTreeOf(const std::string& type, int devices);

// StartPlugin serves `tree` with the SDK, registered on the root's kubelet.sock. The SDK's
// default Allocate answers at once.
absl::StatusOr<std::unique_ptr<deviceplugin::Plugin>> StartPlugin(const std::filesystem::path& root,
                                                                  deviceplugin::DeviceTree tree);
// StartPlugin serves DeviceTreeOf(type, devices).
absl::StatusOr<std::unique_ptr<deviceplugin::Plugin>> StartPlugin(const std::filesystem::path& root,
                                                                  const std::string& type,
                                                                  int devices);

// WaitAllocatable polls PodResources until `resource` (or, if empty, all resources together)
// has `devices` allocatable devices.
absl::Status WaitAllocatable(BenchDaemon& daemon, const std::string& resource, int64_t devices);

// WaitHealthyDevices polls the daemon's metrics until `resource` has `devices` healthy
// devices: the device manager's allocatable count (what node status reports), read at the cost
// of one line per resource, where GetAllocatableResources lists every device.
absl::Status WaitHealthyDevices(const BenchDaemon& daemon, const std::string& resource,
                                int64_t devices);

// HeapTrims reads how often the daemon has handed freed heap memory back to the kernel.
absl::StatusOr<double> HeapTrims(const BenchDaemon& daemon);

// WaitHeapTrimmed waits until the daemon has trimmed its heap after the work so far: a trim
// after `trims` (read when the work ended), which comes a second after the last change. A
// trim that began between the last change and that read is the one waited for; then none
// follows, and the bound ends the wait.
absl::Status WaitHeapTrimmed(const BenchDaemon& daemon, double trims);

}  // namespace devmgr::bench
