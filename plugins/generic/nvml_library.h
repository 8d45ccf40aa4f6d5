// NvmlLibrary: the few calls of the NVIDIA Management Library (libnvidia-ml) that watching GPUs
// for XID errors needs, found at run time, so that devmgr builds and runs on hosts without
// NVIDIA's driver and only `devmgr plugin generic` with a group that asks for NVML health
// loads it.
//
// The types and numbers here are NVML's C ABI (nvml.h): functions return an int status (0 is
// success, 10 a timeout), devices and event sets are opaque pointers, and an XID arrives as an
// event of type 0x8 (nvmlEventTypeXidCriticalError) whose data is the XID.
//
// Thread-safety: NVML's calls are thread-safe; this object adds no state of its own after Open
// except its event set, which Watch and Wait share.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace devmgr::plugins {

// libnvidia-ml's soname, as NVIDIA's driver packages install it.
inline constexpr char kNvmlSoname[] = "libnvidia-ml.so.1";

// NVML's event type of XID errors (nvmlEventTypeXidCriticalError).
inline constexpr uint64_t kNvmlXidEvent = 0x8;

// What NVML's nvmlDevice_t and nvmlEventSet_t point to; never defined here.
struct NvmlDeviceOpaque;
struct NvmlEventSetOpaque;

// nvmlEventData_t, as nvmlEventSetWait_v2 fills it.
struct NvmlEventData {
  NvmlDeviceOpaque* device;
  unsigned long long type;  // NOLINT(google-runtime-int): NVML's own type
  unsigned long long data;  // NOLINT(google-runtime-int)
  unsigned int gpu_instance;
  unsigned int compute_instance;
};

class NvmlLibrary {
 public:
  using Device = NvmlDeviceOpaque*;

  struct Gpu {
    Device handle = nullptr;
    // The minor of its device node, /dev/nvidia<minor>.
    unsigned int minor = 0;
    std::string uuid;
  };

  struct Event {
    Device device = nullptr;
    uint64_t type = 0;
    // For an XID event, the XID.
    uint64_t data = 0;
  };

  // Open loads `library` (a soname or a path), finds its functions, initialises NVML and makes
  // an event set. FailedPrecondition naming the library and the loader's or NVML's reason.
  static absl::StatusOr<std::unique_ptr<NvmlLibrary>> Open(const std::string& library);
  // Frees the event set and shuts NVML down; the library stays loaded.
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // Gpus lists the GPUs NVML sees, in its order. An error naming the call that failed.
  absl::StatusOr<std::vector<Gpu>> Gpus() const;
  // MinorOf: the device node minor of a device an event names.
  absl::StatusOr<unsigned int> MinorOf(Device device) const;
  // Watch adds the XID events of `gpu` to the event set. An error when NVML cannot say which
  // events the GPU supports or cannot register them ("Not Supported" for a GPU too old).
  absl::Status Watch(const Gpu& gpu);
  // Wait returns the next event, or nullopt when none came within `timeout` (NVML waits in
  // whole milliseconds); an error when the wait failed.
  absl::StatusOr<std::optional<Event>> Wait(absl::Duration timeout);

 private:
  struct Functions;
  explicit NvmlLibrary(std::unique_ptr<Functions> functions);
  // An error of NVML's, with its own text: "<call>: <nvmlErrorString>".
  absl::Status Error(const char* call, int code) const;

  std::unique_ptr<Functions> functions_;
  NvmlEventSetOpaque* event_set_ = nullptr;
};

}  // namespace devmgr::plugins
