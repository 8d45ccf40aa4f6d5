// RecordingCallbacks: the EndpointCallbacks of endpoint tests, which records every snapshot an
// endpoint reports and how its stream ended. Thread-safe: the endpoint reports on gRPC's threads.
#pragma once

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "devicemanager/callbacks.h"

namespace devmgr::devicemanager {

class RecordingCallbacks : public EndpointCallbacks {
 public:
  void OnDevicesUpdated(const Endpoint& /*endpoint*/, std::vector<Device>&& devices) override {
    absl::MutexLock lock(&mu_);
    snapshots_.push_back(std::move(devices));
  }
  void OnStreamEnded(const Endpoint& /*endpoint*/, const absl::Status& status) override {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    end_status_ = status;
  }
  size_t snapshot_count() const {
    absl::MutexLock lock(&mu_);
    return snapshots_.size();
  }
  std::vector<Device> snapshot(size_t i) const {
    absl::MutexLock lock(&mu_);
    return snapshots_.at(i);
  }
  bool ended() const {
    absl::MutexLock lock(&mu_);
    return ended_;
  }
  absl::Status end_status() const {
    absl::MutexLock lock(&mu_);
    return end_status_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::vector<Device>> snapshots_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::devicemanager
