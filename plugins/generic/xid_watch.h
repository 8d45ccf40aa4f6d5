// XidWatch: the health of NVIDIA GPUs from NVML's XID events, as NVIDIA's own device plugin
// judges it: a GPU that reports an XID error is faulty from then on, for as long as the plugin
// runs (the XIDs that mean a fault of the GPU, 48 for a double-bit ECC error or 79 for a GPU
// fallen off the bus, need a reset or a reboot; a restarted plugin starts clean), except for the
// XIDs its group ignores. A GPU whose events cannot be watched is faulty from the start; when
// NVML's wait for events fails, or an event names a GPU NVML cannot identify, every GPU is, since
// none is watched any more.
//
// One thread waits on NVML's event set; Fault may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "plugins/generic/gpu_health.h"
#include "plugins/generic/nvml_library.h"

namespace devmgr::plugins {

struct XidWatchOptions {
  // How long one wait for NVML's events lasts: the longest a stop waits.
  absl::Duration wait = absl::Milliseconds(500);
  LoggerPtr logger = nullptr;
};

class XidWatch final : public GpuHealth {
 public:
  // Start lists NVML's GPUs, registers each for its XID events and starts the thread. An error
  // when NVML cannot list its GPUs.
  static absl::StatusOr<std::unique_ptr<XidWatch>> Start(std::unique_ptr<NvmlLibrary> nvml,
                                                         XidWatchOptions options);
  // Stops the thread, within one wait.
  ~XidWatch() override;
  XidWatch(const XidWatch&) = delete;
  XidWatch& operator=(const XidWatch&) = delete;

  // Fault: "XID 79" (the first XID the GPU reported that `ignored_xids` leaves), that NVML lists
  // no GPU of that minor, that its events cannot be watched, or that the watch failed.
  std::optional<std::string> Fault(unsigned int minor,
                                   const std::vector<uint64_t>& ignored_xids) const override;
  // `changed` is called on the watch's thread when a GPU reports an XID it had not reported
  // before, and when the watch fails.
  void OnChange(std::function<void()> changed) override;

 private:
  struct GpuState {
    std::string uuid;
    // Why its events are not watched.
    std::optional<std::string> unwatched;
    // The XIDs it reported, each once, in the order of their first report.
    std::vector<uint64_t> xids;
  };

  XidWatch(std::unique_ptr<NvmlLibrary> nvml, XidWatchOptions options);
  void Run();
  // Fail makes every GPU faulty for good; the first reason is the one kept and logged.
  void Fail(const std::string& reason);

  const std::unique_ptr<NvmlLibrary> nvml_;
  const XidWatchOptions options_;
  // Each watched GPU's minor by its handle; set before the thread starts.
  std::map<NvmlLibrary::Device, unsigned int> minor_of_;
  mutable absl::Mutex mu_;
  std::map<unsigned int, GpuState> gpus_ ABSL_GUARDED_BY(mu_);
  std::optional<std::string> failure_ ABSL_GUARDED_BY(mu_);
  // Called under mu_, so that OnChange, which takes it, never returns while it runs.
  std::function<void()> changed_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace devmgr::plugins
