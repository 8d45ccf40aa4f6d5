// WatchClient: a Watch stream read on a thread of its own into a list the test inspects.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "devmgr/podresources/v1/api.grpc.pb.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::podresources::testing {

using WatchResponse = ::devmgr::podresources::v1::WatchResponse;

class WatchClient {
 public:
  // Opens the stream now; reading starts at once unless `paused` (then at Resume).
  WatchClient(const std::shared_ptr<grpc::Channel>& channel, uint64_t resume_revision = 0,
              bool paused = false)
      : stub_(::devmgr::podresources::v1::PodResourcesWatcher::NewStub(channel)) {
    if (!paused) resume_.Notify();
    ::devmgr::podresources::v1::WatchRequest request;
    request.set_resume_revision(resume_revision);
    reader_ = stub_->Watch(&context_, request);
    thread_ = std::thread([this, reader = reader_.get()] {
      resume_.WaitForNotification();
      WatchResponse response;
      while (reader->Read(&response)) {
        absl::MutexLock lock(&mu_);
        events_.push_back(response);
      }
      grpc::Status status = reader->Finish();
      absl::MutexLock lock(&mu_);
      status_ = status;
    });
  }
  ~WatchClient() {
    context_.TryCancel();
    if (!resume_.HasBeenNotified()) resume_.Notify();
    thread_.join();
  }
  WatchClient(const WatchClient&) = delete;
  WatchClient& operator=(const WatchClient&) = delete;

  void Resume() { resume_.Notify(); }
  void Cancel() { context_.TryCancel(); }

  std::vector<WatchResponse> events() const {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  size_t size() const {
    absl::MutexLock lock(&mu_);
    return events_.size();
  }
  std::optional<grpc::Status> status() const {
    absl::MutexLock lock(&mu_);
    return status_;
  }
  bool WaitForEvents(size_t count, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return devmgr::testing::WaitFor([&] { return size() >= count; }, timeout);
  }
  bool WaitForEnd(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return devmgr::testing::WaitFor([&] { return status().has_value(); }, timeout);
  }
  uint64_t last_revision() const {
    absl::MutexLock lock(&mu_);
    return events_.empty() ? 0 : events_.back().revision();
  }

  // State: "namespace/name" -> the pod's resources, rebuilt from the events so far.
  std::map<std::string, ::v1::PodResources> State() const {
    std::map<std::string, ::v1::PodResources> state;
    for (const WatchResponse& event : events()) {
      if (event.kind() == WatchResponse::SNAPSHOT) state.clear();
      for (const ::v1::PodResources& pod : event.pod_resources()) {
        const std::string key = pod.namespace_() + "/" + pod.name();
        if (event.kind() == WatchResponse::DELETED) {
          state.erase(key);
        } else {
          state[key] = pod;
        }
      }
    }
    return state;
  }

 private:
  std::unique_ptr<::devmgr::podresources::v1::PodResourcesWatcher::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<WatchResponse>> reader_;
  absl::Notification resume_;
  mutable absl::Mutex mu_;
  std::vector<WatchResponse> events_ ABSL_GUARDED_BY(mu_);
  std::optional<grpc::Status> status_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: uses everything above
};

}  // namespace devmgr::podresources::testing
