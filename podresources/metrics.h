// Request and error counters of the PodResources endpoint, per method and API version, in the
// shape of upstream's kubelet_pod_resources_endpoint_* metrics (wire-contract.md §B.3). Plain
// atomics: the host reads them to export them; this module has no metrics system of its own.
#pragma once

#include <atomic>
#include <cstdint>

namespace devmgr::podresources {

struct VersionCounters {
  std::atomic<uint64_t> requests_total{0};
  std::atomic<uint64_t> requests_list{0};
  std::atomic<uint64_t> requests_get_allocatable{0};
  std::atomic<uint64_t> requests_get{0};
  std::atomic<uint64_t> errors_list{0};
  std::atomic<uint64_t> errors_get_allocatable{0};
  std::atomic<uint64_t> errors_get{0};
};

// Counters: incremented by the services from any thread (relaxed order), read by anyone.
struct Counters {
  VersionCounters v1;
  VersionCounters v1alpha1;
  // Beyond upstream: requests rejected by the rate limit, and Watch streams opened and ended.
  std::atomic<uint64_t> rate_limited{0};
  std::atomic<uint64_t> watch_streams_opened{0};
  std::atomic<uint64_t> watch_streams_ended_slow{0};
};

}  // namespace devmgr::podresources
