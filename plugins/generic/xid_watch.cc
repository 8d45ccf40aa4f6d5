#include "plugins/generic/xid_watch.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace devmgr::plugins {

XidWatch::XidWatch(std::unique_ptr<NvmlLibrary> nvml, XidWatchOptions options)
    : nvml_(std::move(nvml)), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<XidWatch>> XidWatch::Start(std::unique_ptr<NvmlLibrary> nvml,
                                                          XidWatchOptions options) {
  absl::StatusOr<std::vector<NvmlLibrary::Gpu>> gpus = nvml->Gpus();
  if (!gpus.ok()) return gpus.status();
  std::unique_ptr<XidWatch> watch(new XidWatch(std::move(nvml), std::move(options)));
  {
    absl::MutexLock lock(&watch->mu_);
    for (const NvmlLibrary::Gpu& gpu : *gpus) {
      GpuState& state = watch->gpus_[gpu.minor];
      state.uuid = gpu.uuid;
      if (absl::Status watched = watch->nvml_->Watch(gpu); !watched.ok()) {
        state.unwatched = std::string(watched.message());
        DEVMGR_LOG(watch->options_.logger, warn,
                   "A GPU is served unhealthy: its XID events cannot be watched", "uuid", gpu.uuid,
                   "minor", gpu.minor, "err", watched);
        continue;
      }
      watch->minor_of_.emplace(gpu.handle, gpu.minor);
    }
    DEVMGR_LOG(watch->options_.logger, info, "Watching GPUs for XID errors", "gpus",
               watch->minor_of_.size());
  }
  watch->thread_ = std::thread([raw = watch.get()] { raw->Run(); });
  return watch;
}

XidWatch::~XidWatch() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void XidWatch::Fail(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (failure_.has_value()) return;
  failure_ = reason;
  DEVMGR_LOG(options_.logger, err, "Every GPU is served unhealthy until the plugin restarts", "err",
             reason);
  if (changed_) changed_();
}

void XidWatch::OnChange(std::function<void()> changed) {
  absl::MutexLock lock(&mu_);
  changed_ = std::move(changed);
}

void XidWatch::Run() {
  while (!stopping_) {
    absl::StatusOr<std::optional<NvmlLibrary::Event>> event = nvml_->Wait(options_.wait);
    if (!event.ok()) {
      Fail(absl::StrCat("the watch for XID errors failed: ", event.status().message()));
      return;
    }
    if (!event->has_value() || (*event)->type != kNvmlXidEvent) continue;
    const NvmlLibrary::Event& xid = **event;
    unsigned int minor = 0;
    if (auto known = minor_of_.find(xid.device); known != minor_of_.end()) {
      minor = known->second;
    } else {
      absl::StatusOr<unsigned int> named = nvml_->MinorOf(xid.device);
      if (!named.ok()) {
        Fail(absl::StrCat("XID ", xid.data,
                          " of a GPU NVML cannot name: ", named.status().message()));
        continue;
      }
      minor = *named;
    }
    absl::MutexLock lock(&mu_);
    auto gpu = gpus_.find(minor);
    if (gpu == gpus_.end()) {
      DEVMGR_LOG(options_.logger, info, "Ignoring an XID error of a GPU not watched", "minor",
                 minor, "xid", xid.data);
      continue;
    }
    DEVMGR_LOG(options_.logger, warn, "A GPU reported an XID error", "uuid", gpu->second.uuid,
               "minor", minor, "xid", xid.data);
    std::vector<uint64_t>& xids = gpu->second.xids;
    if (std::find(xids.begin(), xids.end(), xid.data) != xids.end()) continue;
    xids.push_back(xid.data);
    if (changed_) changed_();
  }
}

std::optional<std::string> XidWatch::Fault(unsigned int minor,
                                           const std::vector<uint64_t>& ignored_xids) const {
  absl::MutexLock lock(&mu_);
  if (failure_.has_value()) return failure_;
  auto gpu = gpus_.find(minor);
  if (gpu == gpus_.end()) return absl::StrCat("NVML lists no GPU with device minor ", minor);
  if (gpu->second.unwatched.has_value()) {
    return absl::StrCat("its XID events cannot be watched: ", *gpu->second.unwatched);
  }
  for (uint64_t xid : gpu->second.xids) {
    if (std::find(ignored_xids.begin(), ignored_xids.end(), xid) == ignored_xids.end()) {
      return absl::StrCat("XID ", xid);
    }
  }
  return std::nullopt;
}

}  // namespace devmgr::plugins
