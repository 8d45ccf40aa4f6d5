#include "deviceplugin/list_and_watch_streams.h"

#include <cassert>
#include <utility>
#include <vector>

#include "common/raw_request.h"

namespace devmgr::deviceplugin {

// One open ListAndWatch. Its fields are guarded by the owner's mu_ (one lock for all the
// streams, no nesting); gRPC calls (StartWrite, Finish) are made with mu_ released.
class ListAndWatchStreams::StreamReactor final : public Reactor {
 public:
  explicit StreamReactor(ListAndWatchStreams& owner) : owner_(owner) {}

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&owner_.mu_);
      writing_ = false;
      in_flight_.reset();
      // A failed write means the stream is broken; end it.
      if (!ok && !finish_status_.has_value()) {
        finish_status_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "ListAndWatch write failed");
      }
    }
    owner_.Pump(*this);
  }

  void OnCancel() override {
    {
      absl::MutexLock lock(&owner_.mu_);
      if (!finish_status_.has_value()) finish_status_ = grpc::Status::CANCELLED;
    }
    owner_.Pump(*this);
  }

  void OnDone() override { owner_.OnStreamDone(this); }

  ListAndWatchStreams& owner_;
  Snapshot pending_;    // newest unsent snapshot
  Snapshot in_flight_;  // being written
  bool writing_ = false;
  std::optional<grpc::Status> finish_status_;  // set: Finish once no write is in flight
  bool finished_ = false;                      // Finish has been called
};

ListAndWatchStreams::ListAndWatchStreams(Snapshot current, std::string device_type,
                                         LoggerPtr logger)
    : device_type_(std::move(device_type)),
      logger_(std::move(logger)),
      current_(std::move(current)) {}

ListAndWatchStreams::~ListAndWatchStreams() {
  absl::MutexLock lock(&mu_);
  assert(streams_.empty());
}

ListAndWatchStreams::Snapshot ListAndWatchStreams::SnapshotOf(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return std::make_shared<const grpc::ByteBuffer>(&slice, 1);
}

ListAndWatchStreams::Reactor* ListAndWatchStreams::Open(const grpc::ByteBuffer& request) {
  const grpc::Status read = ParseRawRequest<v1beta1::Empty>(request);
  auto* reactor = new StreamReactor(*this);  // NOLINT: deletes itself in OnDone
  Action action;
  {
    absl::MutexLock lock(&mu_);
    streams_.insert(reactor);
    if (!read.ok()) {
      reactor->finish_status_ = read;
    } else if (closed_) {
      reactor->finish_status_ =
          grpc::Status(grpc::StatusCode::UNAVAILABLE, "device plugin is stopping");
    } else {
      reactor->pending_ = current_;  // the first message is the current full list
    }
    action = NextActionLocked(*reactor);
  }
  DEVMGR_LOG(logger_, debug, "ListAndWatch stream opened", "deviceType", device_type_);
  Run(action);
  return reactor;
}

void ListAndWatchStreams::Publish(Snapshot snapshot) {
  std::vector<Action> actions;
  {
    absl::MutexLock lock(&mu_);
    for (StreamReactor* stream : streams_) {
      stream->pending_ = snapshot;  // an older unsent snapshot is obsolete
      actions.push_back(NextActionLocked(*stream));
    }
    current_ = std::move(snapshot);
  }
  for (const Action& action : actions) Run(action);
}

void ListAndWatchStreams::EndAll(const grpc::Status& status) {
  std::vector<Action> actions;
  {
    absl::MutexLock lock(&mu_);
    EndAllLocked(status, actions);
  }
  for (const Action& action : actions) Run(action);
}

void ListAndWatchStreams::Close() {
  std::vector<Action> actions;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    EndAllLocked(grpc::Status::OK, actions);
  }
  for (const Action& action : actions) Run(action);
}

void ListAndWatchStreams::EndAllLocked(const grpc::Status& status, std::vector<Action>& actions) {
  for (StreamReactor* stream : streams_) {
    if (!stream->finish_status_.has_value()) stream->finish_status_ = status;
    actions.push_back(NextActionLocked(*stream));
  }
}

void ListAndWatchStreams::WaitForAllDone() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](std::set<StreamReactor*>* streams) { return streams->empty(); }, &streams_));
}

int ListAndWatchStreams::OpenCount() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(streams_.size());
}

ListAndWatchStreams::Action ListAndWatchStreams::NextActionLocked(StreamReactor& reactor) {
  Action action;
  if (reactor.writing_ || reactor.finished_) return action;
  action.reactor = &reactor;
  if (reactor.finish_status_.has_value()) {
    reactor.finished_ = true;
    action.finish = reactor.finish_status_;
  } else if (reactor.pending_ != nullptr) {
    reactor.in_flight_ = std::move(reactor.pending_);
    reactor.writing_ = true;
    action.write = reactor.in_flight_.get();
  } else {
    action.reactor = nullptr;
  }
  return action;
}

void ListAndWatchStreams::Run(const Action& action) {
  if (action.reactor == nullptr) return;
  if (action.write != nullptr) {
    action.reactor->StartWrite(action.write);
  } else if (action.finish.has_value()) {
    action.reactor->Finish(*action.finish);
  }
}

void ListAndWatchStreams::Pump(StreamReactor& reactor) {
  Action action;
  {
    absl::MutexLock lock(&mu_);
    action = NextActionLocked(reactor);
  }
  Run(action);
}

void ListAndWatchStreams::OnStreamDone(StreamReactor* reactor) {
  // Log first: once the erase empties streams_, WaitForAllDone returns and the owner may destroy
  // this object (logger_, device_type_, mu_) while this thread is still here. The reactor is
  // independent of this object, so it is deleted after.
  DEVMGR_LOG(logger_, debug, "ListAndWatch stream closed", "deviceType", device_type_);
  {
    absl::MutexLock lock(&mu_);
    streams_.erase(reactor);
  }
  delete reactor;  // NOLINT(cppcoreguidelines-owning-memory): callback reactors own themselves
}

}  // namespace devmgr::deviceplugin
