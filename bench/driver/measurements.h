// The measurements of `devmgr bench`, each beside its floor. Each appends its rows to `rows`
// (in the order of the report) and returns the first error, after which `rows` may hold some
// of its rows. `root` is the step's private folder; the daemon, where one is passed, was started
// in it by the step and is shared by the step's measurements, run one after the other: on
// success, a measurement has removed the pods it admitted there, and its plugins stop when it
// returns. Each blocks for the whole measurement.
//
// One file per measurement: admission.cc, list_and_watch.cc, podresources.cc, dra.cc,
// publish.cc, allocator.cc, restart.cc, memory.cc.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/status.h"
#include "bench/driver/bench.h"
#include "bench/driver/bench_daemon.h"
#include "bench/driver/report.h"

namespace devmgr::bench {

// Admission of a 1-container, 1-device pod through the admin API, beside one bare Allocate
// round trip to the same plugin plus one durable write of the checkpoint the daemon wrote.
absl::Status MeasureAdmission(const std::filesystem::path& root, BenchDaemon& daemon,
                              const Options& flags, std::vector<Row>& rows);

// Admissions per second with 8 admitters over 8 plugins, beside the same admissions made one
// after the other: the ratio is the speedup concurrency gives.
absl::Status MeasureConcurrentAdmission(const std::filesystem::path& root, BenchDaemon& daemon,
                                        const Options& flags, std::vector<Row>& rows);

// ListAndWatch of N devices, from a plugin's start until the daemon counts the N devices
// healthy (its metrics, as node status would show them), beside a bare client that starts the
// same plugin where no kubelet listens, waits for its socket, dials it and decodes the first
// ListAndWatch message. Both plugins build their tree before the clock starts and their
// ListAndWatch message after: what the daemon adds is registration, dialing back and taking
// the devices in. The same figures are also set beside decoding alone: a bare client dialing
// the daemon's plugin, which already serves, and decoding its first message. Then
// GetAllocatableResources over those N devices.
absl::Status MeasureListAndWatch(const std::filesystem::path& root, BenchDaemon& daemon,
                                 const Options& flags, std::vector<Row>& rows);

// GetAllocatableResources while `devices` devices are allocatable, beside a bare server
// answering with the same bytes.
absl::Status MeasureAllocatable(const std::filesystem::path& root, BenchDaemon& daemon,
                                const Options& flags, int64_t devices, std::vector<Row>& rows);

// PodResources List with P pods x 4 containers x 2 devices, beside a bare server answering
// with the same response serialised in advance; then calls per second of each. The daemon
// sends its kept answer again while nothing changed (podresources/list_cache.h), so List is
// also measured with one pod removed and admitted again before each call, which makes every
// answer a new one.
absl::Status MeasureList(const std::filesystem::path& root, BenchDaemon& daemon,
                         const Options& flags, std::vector<Row>& rows);

// A pod with ResourceClaims (--dra-claims, after --dra-admitted-pods such pods) admitted
// through the admin API (the claims stored, prepared by a fake DRA driver in this process, the
// daemon's states written), beside one bare NodePrepareResources round trip to the same driver
// for the same claims plus one durable write of the dra_manager_state the daemon wrote.
absl::Status MeasureDraPrepare(const std::filesystem::path& root, BenchDaemon& daemon,
                               const Options& flags, std::vector<Row>& rows);

// Pods per second with 2 claims each, 8 admitters, beside the same pods admitted one after the
// other.
absl::Status MeasureConcurrentDra(const std::filesystem::path& root, BenchDaemon& daemon,
                                  const Options& flags, std::vector<Row>& rows);

// A pool of --publish-devices devices published into the daemon's ResourceSlice store by the
// SDK's ResourceSlice controller (in slices of 128, owned by the node), from the controller's
// start until its last create is answered, beside the same create requests, encoded in
// advance, sent one after the other by a bare client. Both sides include the daemon's store.
absl::Status MeasurePublish(const std::filesystem::path& root, BenchDaemon& daemon,
                            const Options& flags, std::vector<Row>& rows);

// The node sizes and the requests of the allocator rows.
inline constexpr int kAllocatorDevices[] = {8, 64, 128, 1024};
inline constexpr int kAllocatorRequests = 2;

// One claim of kAllocatorRequests requests under a matchAttribute constraint allocated on a node
// of each of kAllocatorDevices devices (allocation_fixture.h), in this process: the allocator
// made from the slices, then the search, as the daemon does for a claim nothing allocated;
// beside the claim's selectors alone, compiled once, on the devices converted once.
absl::Status MeasureAllocator(const Options& flags, std::vector<Row>& rows);

// A daemon starting over a K-entry checkpoint until PodResources answers, beside reading and
// decoding the same checkpoint bytes. Starts (and stops) daemons of its own in `root`.
absl::Status MeasureRestart(const std::filesystem::path& root, const Options& flags,
                            std::vector<Row>& rows);

// The daemon's resident memory idle, then with X plugins x Y devices and Z one-device pods.
// Starts a daemon of its own in `root`.
absl::Status MeasureMemory(const std::filesystem::path& root, const Options& flags,
                           std::vector<Row>& rows);

}  // namespace devmgr::bench
