#include "kubeclient/slice_reflector.h"

#include <random>
#include <utility>

#include "common/backoff.h"
#include "kubeclient/api_status.h"

namespace devmgr::kubeclient {

absl::StatusOr<std::unique_ptr<SliceReflector>> SliceReflector::Start(
    SliceReflectorOptions options) {
  if (options.client == nullptr) {
    return absl::InvalidArgumentError("SliceReflectorOptions.client is null");
  }
  std::unique_ptr<SliceReflector> reflector(new SliceReflector(std::move(options)));
  absl::MutexLock lock(&reflector->stop_mu_);
  reflector->thread_ = std::thread([r = reflector.get()] { r->Run(); });
  return reflector;
}

SliceReflector::SliceReflector(SliceReflectorOptions options) : options_(std::move(options)) {}

SliceReflector::~SliceReflector() { Stop(); }

void SliceReflector::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  cancel_.Cancel();
  if (thread_.joinable()) thread_.join();
}

std::optional<SliceReflector::Snapshot> SliceReflector::Slices() const {
  return Slices([](const kubeapi::ResourceSlice&) { return true; });
}

std::optional<SliceReflector::Snapshot> SliceReflector::Slices(
    absl::FunctionRef<bool(const kubeapi::ResourceSlice&)> keep) const {
  absl::MutexLock lock(&mu_);
  if (lists_ == 0) return std::nullopt;
  Snapshot snapshot;
  snapshot.resource_version = resource_version_;
  for (const auto& [name, slice] : slices_) {
    if (keep(*slice)) snapshot.slices.push_back(slice);
  }
  return snapshot;
}

int SliceReflector::lists() const {
  absl::MutexLock lock(&mu_);
  return lists_;
}

bool SliceReflector::Wait(absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopped_), delay);
  return !stopped_;
}

void SliceReflector::Replace(kubeclient::SliceList list) {
  std::map<std::string, kubeapi::ResourceSlicePtr> fresh;
  for (kubeapi::ResourceSlice& slice : list.items) {
    std::string name = slice.metadata.name;
    fresh.emplace(std::move(name),
                  std::make_shared<const kubeapi::ResourceSlice>(std::move(slice)));
  }
  std::map<std::string, kubeapi::ResourceSlicePtr> old;
  {
    absl::MutexLock lock(&mu_);
    old = std::exchange(slices_, fresh);
    resource_version_ = std::move(list.resource_version);
  }
  if (options_.on_change) {
    for (const auto& [name, before] : old) {
      auto now = fresh.find(name);
      if (now == fresh.end()) {
        options_.on_change(before.get(), nullptr);
      } else if (now->second->metadata.resource_version != before->metadata.resource_version) {
        options_.on_change(before.get(), now->second.get());
      }
    }
    for (const auto& [name, after] : fresh) {
      if (!old.contains(name)) options_.on_change(nullptr, after.get());
    }
  }
  // Counted once the differences are told, as client-go's informer is synced once its handlers
  // have had the list: a watcher that sees the count has been told of every slice it found.
  absl::MutexLock lock(&mu_);
  ++lists_;
}

void SliceReflector::Apply(const SliceEvent& event) {
  kubeapi::ResourceSlicePtr before;
  kubeapi::ResourceSlicePtr after;
  {
    absl::MutexLock lock(&mu_);
    const std::string& name = event.slice.metadata.name;
    auto it = slices_.find(name);
    if (it != slices_.end()) before = it->second;
    if (event.type == WatchEventType::kDeleted) {
      if (it != slices_.end()) slices_.erase(it);
    } else if (event.type != WatchEventType::kBookmark) {
      after = std::make_shared<const kubeapi::ResourceSlice>(event.slice);
      slices_[name] = after;
    }
    if (!event.resource_version.empty()) resource_version_ = event.resource_version;
  }
  if (!options_.on_change || (before == nullptr && after == nullptr)) return;
  options_.on_change(before.get(), after.get());
}

void SliceReflector::Run() {
  std::mt19937_64 random(std::random_device{}());
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto fresh_backoff = [&] {
    return Backoff{.duration = options_.initial_backoff,
                   .factor = 2.0,
                   .jitter = 1.0,
                   .steps = std::numeric_limits<int>::max(),
                   .cap = options_.max_backoff};
  };
  Backoff backoff = fresh_backoff();
  absl::Time last_pause = absl::InfinitePast();
  const auto pause = [&] {
    const absl::Time now = absl::Now();
    if (now - last_pause >= options_.backoff_reset) backoff = fresh_backoff();
    last_pause = now;
    return Wait(backoff.Step([&] { return unit(random); }));
  };
  const auto fail = [&](const absl::Status& status) {
    if (options_.on_error) options_.on_error(status);
    return pause();
  };

  std::string resource_version;
  bool need_list = true;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) return;
    }
    ListOptions options;
    options.field_selector = options_.field_selector;
    if (need_list) {
      absl::StatusOr<SliceList> list = options_.client->ListResourceSlices(options, &cancel_);
      if (absl::IsCancelled(list.status())) return;
      if (!list.ok()) {
        if (!fail(list.status())) return;
        continue;
      }
      resource_version = list->resource_version;
      Replace(*std::move(list));
      need_list = false;
    }
    options.resource_version = resource_version;
    options.watch_timeout = options_.min_watch_timeout * (1.0 + unit(random));
    bool delivered = false;
    const absl::Time started = absl::Now();
    absl::Status watched = options_.client->WatchResourceSlices(
        options,
        [&](const SliceEvent& event) {
          delivered = true;
          Apply(event);
          // An event without a version leaves the resume point where it was (an empty one
          // would resume "from now", missing what came between).
          if (!event.resource_version.empty()) resource_version = event.resource_version;
          return true;
        },
        &cancel_);
    if (delivered) backoff = fresh_backoff();
    if (absl::IsCancelled(watched)) return;
    if (watched.ok() && !delivered && absl::Now() - started < kShortWatch) {
      watched = absl::UnavailableError(
          "very short watch: the server ended it within a second with no event");
      need_list = true;
    }
    if (watched.ok()) continue;  // the server ended the watch: resume where it left off
    if (absl::IsOutOfRange(watched)) {
      // Too old: what was missed is only in a new list, made after the back-off as client-go's
      // reflector makes it, so that a server answering every watch so is not listed in a loop.
      need_list = true;
      if (!pause()) return;
      continue;
    }
    // Throttled (429) or a lost connection: the watch again, after the back-off. Anything else
    // (a server's answer of 500 or 503, refused, an event that did not decode) starts over with
    // a list after it, as client-go's reflector does (it retries a server error's watch only
    // when given a MaxInternalErrorRetryDuration, which the informers of ResourceSlices are not).
    const bool lost_connection = absl::IsUnavailable(watched) && !ApiErrorOf(watched).has_value();
    if (!absl::IsResourceExhausted(watched) && !lost_connection) need_list = true;
    if (!fail(watched)) return;
  }
}

}  // namespace devmgr::kubeclient
