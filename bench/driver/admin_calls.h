// The bench's calls to the daemon's admin API (devmgr/admin/v1): pods made to a shape, admitted
// and removed one at a time or in bulk from several threads. Every call has kCallTimeout and
// blocks until the daemon answers; a refusal comes back as the call's error.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/driver/bench_daemon.h"
#include "devmgr/admin/v1/api.grpc.pb.h"

namespace devmgr::bench {

// MakePod is pod `uid` in namespace "bench", with `containers` containers "c0", "c1", ... that
// each ask for `devices_per_container` devices of `resource`.
admin::v1::Pod MakePod(const std::string& uid, const std::string& resource, int containers,
                       int devices_per_container);

// The admission of `pod`, and of a Kubernetes pod manifest (with the ResourceClaims it uses, as
// further YAML documents).
admin::v1::AdmitPodRequest PodRequest(admin::v1::Pod pod);
admin::v1::AdmitPodRequest ManifestRequest(std::string manifest);

// Admit makes `request` through `stub`; the second form admits `pod`.
absl::Status Admit(admin::v1::Admin::Stub& stub, const admin::v1::AdmitPodRequest& request);
absl::Status Admit(admin::v1::Admin::Stub& stub, admin::v1::Pod pod);

// Remove removes pod `uid` through `stub`.
absl::Status Remove(admin::v1::Admin::Stub& stub, const std::string& uid);

// AdmitMany makes admissions 0..count-1 (by `make_request`) from `threads` admitters, admitter t
// taking t, t+threads, ...; returns each admission's latency. `make_request` is called from the
// admitters' threads at once.
absl::StatusOr<std::vector<double>> AdmitMany(
    BenchDaemon& daemon, int count, int threads,
    const std::function<admin::v1::AdmitPodRequest(int)>& make_request);

// Admission rates, in pods per second: the same pods admitted one after the other, and from
// several admitters at once.
struct AdmissionRates {
  double serial = 0;
  double concurrent = 0;
};

// MeasureRates admits `count` pods from 1 admitter, then from `threads`, three times each (pod i
// of a batch made by make_request(uid, i), its UID "<prefix>-<batch>-i"), removing each batch
// after it; the medians of the three.
absl::StatusOr<AdmissionRates> MeasureRates(
    BenchDaemon& daemon, const std::string& prefix, int count, int threads,
    const std::function<admin::v1::AdmitPodRequest(const std::string& uid, int i)>& make_request);

// RemoveMany removes pods "<prefix>0" .. "<prefix><count-1>", one after the other.
absl::Status RemoveMany(BenchDaemon& daemon, const std::string& prefix, int count);

}  // namespace devmgr::bench
