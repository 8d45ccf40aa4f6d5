#include "podresources/watch_service.h"

#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace devmgr::podresources {
namespace {

// A stream refused before it started (rate limit, too many streams).
class RejectedStream final : public grpc::ServerWriteReactor<WatchResponse> {
 public:
  explicit RejectedStream(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }  // NOLINT(cppcoreguidelines-owning-memory): reactor
};

// WatchStream: one open Watch. Deliver runs on the hub's thread; OnWriteDone and OnCancel on
// gRPC threads; mu_ guards the backlog and the write state. The stream is deleted on the hub's
// thread after OnDone, once the hub has let go of it.
class WatchStream final : public grpc::ServerWriteReactor<WatchResponse>, public WatchSink {
 public:
  WatchStream(WatchHub& hub, ClientGate& gate, Counters& counters, std::string client,
              grpc::CallbackServerContext& context)
      : hub_(hub),
        gate_(gate),
        counters_(counters),
        client_(std::move(client)),
        context_(context),
        backlog_(hub.options().max_pending_per_stream) {}

  void Deliver(WatchEventPtr event) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (finishing_) return;
    backlog_.Push(std::move(event));
    if (backlog_.OverBudget()) {
      counters_.watch_streams_ended_slow.fetch_add(1, std::memory_order_relaxed);
      backlog_.Clear();
      FinishLocked(grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat(kSlowConsumerMessage, ": more than ", hub_.options().max_pending_per_stream,
                       " pods with unsent changes; resume from the last revision received")));
      if (writing_) CancelIfStillWritingAfterGrace();
      return;
    }
    WriteNextLocked();
  }

  void End() override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "server shutting down"));
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    in_flight_.reset();
    if (!ok) {
      // The client is gone or the call was cancelled.
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "write failed"));
      return;
    }
    if (finishing_) {
      FinishLocked(finish_status_);
      return;
    }
    WriteNextLocked();
  }

  void OnCancel() override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override ABSL_LOCKS_EXCLUDED(mu_) {
    // gRPC runs OnDone only once the last reaction (OnCancel, OnWriteDone) has returned, but it
    // orders the two through its own reference count, which ThreadSanitizer does not see.
    // Taking mu_ once makes that reaction's unlock visibly come before the stream is freed.
    { absl::MutexLock lock(&mu_); }
    gate_.ReleaseStream(client_);
    // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): a reactor frees itself after OnDone.
    hub_.Unsubscribe(this, [this] { delete this; });
  }

 private:
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finishing_) return;
    in_flight_ = backlog_.Pop();
    if (in_flight_ == nullptr) return;
    writing_ = true;
    StartWrite(in_flight_.get());
  }

  // The status waits for the write in flight, which a client that stopped reading never takes;
  // if it is still pending after the grace, the call is cancelled (its client sees CANCELLED).
  // The check runs on the hub's thread, where the stream is deleted, so `alive` tells whether
  // it still exists; a write in flight means OnDone has not come, so the context is valid.
  void CancelIfStillWritingAfterGrace() {
    hub_.After(hub_.options().last_write_grace, [this, alive = std::weak_ptr<char>(alive_)] {
      if (alive.expired()) return;
      absl::MutexLock lock(&mu_);
      if (writing_) context_.TryCancel();
    });
  }

  // FinishLocked ends the stream with `status` once no write is in flight; only the first
  // status counts.
  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!finishing_) {
      finishing_ = true;
      finish_status_ = status;
    }
    if (writing_ || finish_called_) return;
    finish_called_ = true;
    Finish(finish_status_);
  }

  WatchHub& hub_;
  ClientGate& gate_;
  Counters& counters_;
  const std::string client_;
  grpc::CallbackServerContext& context_;
  // Goes with the stream: what a check posted to the hub's thread looks at (see
  // CancelIfStillWritingAfterGrace).
  const std::shared_ptr<char> alive_ = std::make_shared<char>();
  absl::Mutex mu_;
  WatchBacklog backlog_ ABSL_GUARDED_BY(mu_);
  WatchEventPtr in_flight_ ABSL_GUARDED_BY(mu_);  // kept alive until its write completes
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

WatchService::WatchService(WatchHub& hub, ClientGate& gate, Counters& counters)
    : hub_(hub), gate_(gate), counters_(counters) {}

grpc::ServerWriteReactor<WatchResponse>* WatchService::Watch(
    grpc::CallbackServerContext* context, const ::devmgr::podresources::v1::WatchRequest* request) {
  std::string client = gate_.Identify(*context);
  if (!gate_.AllowRequest(client)) {
    counters_.rate_limited.fetch_add(1, std::memory_order_relaxed);
    return new RejectedStream(RateLimitedStatus());  // NOLINT(cppcoreguidelines-owning-memory)
  }
  if (!gate_.AcquireStream(client)) {
    // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): a reactor frees itself in OnDone.
    return new RejectedStream(
        grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                     absl::StrCat("too many watch streams for this client (limit ",
                                  gate_.max_watch_streams_per_client(), ")")));
  }
  counters_.watch_streams_opened.fetch_add(1, std::memory_order_relaxed);
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): a reactor frees itself after OnDone.
  auto* stream = new WatchStream(hub_, gate_, counters_, std::move(client), *context);
  hub_.Subscribe(stream, request->resume_revision());
  return stream;
}

}  // namespace devmgr::podresources
