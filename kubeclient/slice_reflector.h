// SliceReflector: a local copy of the ResourceSlices a field selector selects, kept current by
// a watch, as client-go's reflector keeps an informer's: it lists, then watches from the list's
// resourceVersion with bookmarks (each one moves the point a watch resumes from); a watch the
// server ends (its timeout, 5 to 10 minutes as client-go picks) is resumed where it left off,
// a 410 Gone (the version is too old) is answered, after the back-off, with a new list whose
// differences from the copy are reported as changes, and other failures are retried after
// client-go's back-off (800 ms doubling to 30 s, with jitter; an event delivered starts it over).
//
// Each change reaches `on_change` on the reflector's thread, in the order the server made
// them: (nullptr, added), (old, new) or (old, nullptr) for a delete. It must not block for long
// and must not destroy the reflector.
//
// Thread-safety: Slices() and Stop() may be called from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kubeclient/client.h"

namespace devmgr::kubeclient {

struct SliceReflectorOptions {
  // Not owned; must outlive the reflector.
  Client* client = nullptr;
  std::string field_selector;
  std::function<void(const kubeapi::ResourceSlice* before, const kubeapi::ResourceSlice* after)>
      on_change;
  // Each failure, before the retry (a list or watch that failed); may be empty.
  std::function<void(const absl::Status&)> on_error;
  // client-go's minWatchTimeout: each watch asks the server to end it after this times a
  // random factor in [1, 2).
  absl::Duration min_watch_timeout = absl::Minutes(5);
  // client-go's reflector back-off, which starts again from its first step when no pause came
  // in the last `backoff_reset` (so that a failure now and then, hours apart, is not retried
  // after the longest pause).
  absl::Duration initial_backoff = absl::Milliseconds(800);
  absl::Duration max_backoff = absl::Seconds(30);
  absl::Duration backoff_reset = absl::Minutes(2);
};

// A watch the server ends sooner than this without an event is a failure (client-go's "very
// short watch"): a server or proxy that answers every watch at once and empty would otherwise
// be asked again without a pause.
inline constexpr absl::Duration kShortWatch = absl::Seconds(1);

class SliceReflector {
 public:
  // Start begins listing and watching on a thread of its own. InvalidArgument without a client.
  static absl::StatusOr<std::unique_ptr<SliceReflector>> Start(SliceReflectorOptions options);
  ~SliceReflector();
  SliceReflector(const SliceReflector&) = delete;
  SliceReflector& operator=(const SliceReflector&) = delete;

  // Stop ends the watch at once and joins the thread (a list in progress ends first, within the
  // client's timeout). Idempotent; callers on several threads at once each return once the
  // thread has ended.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_, stop_mu_);

  // The copy at one moment: its slices by name and the resourceVersion it is at (the last
  // list's, then each event's and bookmark's). The slices are shared, not copied: a change
  // replaces a slice in the copy, it never changes one handed out.
  struct Snapshot {
    std::vector<kubeapi::ResourceSlicePtr> slices;
    std::string resource_version;
  };
  // Slices: the copy; std::nullopt before the first list.
  std::optional<Snapshot> Slices() const ABSL_LOCKS_EXCLUDED(mu_);
  // The slices of the copy `keep` accepts; std::nullopt before the first list.
  std::optional<Snapshot> Slices(absl::FunctionRef<bool(const kubeapi::ResourceSlice&)> keep) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Lists made so far (the first, and one per 410), each counted once its differences have been
  // given to on_change.
  int lists() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit SliceReflector(SliceReflectorOptions options);
  void Run();
  // Replace makes the copy equal to a fresh list, reporting the differences.
  void Replace(kubeclient::SliceList list) ABSL_LOCKS_EXCLUDED(mu_);
  void Apply(const SliceEvent& event) ABSL_LOCKS_EXCLUDED(mu_);
  // Wait sleeps for `delay` unless stopped first; false when stopped.
  bool Wait(absl::Duration delay) ABSL_LOCKS_EXCLUDED(mu_);

  const SliceReflectorOptions options_;
  Cancellation cancel_;

  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, kubeapi::ResourceSlicePtr> slices_ ABSL_GUARDED_BY(mu_);
  std::string resource_version_ ABSL_GUARDED_BY(mu_);
  int lists_ ABSL_GUARDED_BY(mu_) = 0;
  // Held by Stop throughout (taken before mu_), so that one caller joins the thread and the
  // others wait for it.
  absl::Mutex stop_mu_;
  // Last: joins first.
  std::thread thread_ ABSL_GUARDED_BY(stop_mu_);
};

}  // namespace devmgr::kubeclient
