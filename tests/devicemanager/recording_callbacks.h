// RecordingCallbacks: the EndpointCallbacks of endpoint tests, which records every snapshot an
// endpoint reports and how its stream ended. Thread-safe: the endpoint reports on gRPC's threads.
// It keeps the endpoint its stream's end hands over, and frees it when it goes.
#pragma once

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "devicemanager/callbacks.h"
#include "devicemanager/endpoint.h"

namespace devmgr::devicemanager {

class RecordingCallbacks : public EndpointCallbacks {
 public:
  void OnDevicesUpdated(const Endpoint& /*endpoint*/, std::vector<Device>&& devices) override {
    absl::MutexLock lock(&mu_);
    snapshots_.push_back(std::move(devices));
  }
  // Keeps the endpoint handed over, so that the test's thread is the one that frees it.
  void OnStreamEnded(EndpointSharedPtr endpoint, const absl::Status& status) override {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    end_status_ = status;
    references_at_end_ = endpoint.use_count();
    ended_endpoint_ = std::move(endpoint);
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
  // How many references to the endpoint there were as its stream handed its own over.
  long references_at_end() const {
    absl::MutexLock lock(&mu_);
    return references_at_end_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::vector<Device>> snapshots_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
  long references_at_end_ ABSL_GUARDED_BY(mu_) = 0;
  EndpointSharedPtr ended_endpoint_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devmgr::devicemanager
