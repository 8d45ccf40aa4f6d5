// ClaimSyncLoop: the thread that runs the node's DRA pass (PodAdmission::SyncClaims) every
// period, and at once when kicked (a driver registered). The pass prepares the claims still
// waiting for their driver and unprepares those of pods the node no longer has.
#pragma once

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace devmgr::node {

class ClaimSyncLoop {
 public:
  // Starts the thread; the first pass runs at once.
  ClaimSyncLoop(absl::Duration period, std::function<void()> pass);
  // Stops: a pass that runs finishes first.
  ~ClaimSyncLoop();
  ClaimSyncLoop(const ClaimSyncLoop&) = delete;
  ClaimSyncLoop& operator=(const ClaimSyncLoop&) = delete;

  // Kick asks for a pass now (after the one that runs, if any). Never blocks on a pass.
  void Kick() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const absl::Duration period_;
  const std::function<void()> pass_;
  absl::Mutex mu_;
  bool kicked_ ABSL_GUARDED_BY(mu_) = true;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Last: starts once the fields above exist.
  std::thread thread_;
};

}  // namespace devmgr::node
