// Client: the calls devmgr makes to a Kubernetes API server, typed: ResourceSlices (get, list,
// watch, create, update, delete with preconditions, delete a collection by field selector),
// ResourceClaims (get) and Nodes (get).
//
// resource.k8s.io is tried as v1, then v1beta2, then v1beta1 whenever a call answers 404, and
// the version that answered is used from then on (upstream's draclient; a real "not found" of
// one object costs one request per version, as there). Objects are always exchanged in v1's
// shape (kubeapi/resource_versions.h converts).
//
// Errors are the server's, as api_status.h maps them (a 409 on update is Aborted, a 410 on
// watch OutOfRange). A request is tried again, at most 10 times as client-go's are, when the
// server answers 429 or 5xx with a Retry-After header (after that many seconds, unless that is
// longer than the request timeout: the answer is then returned), a watch included, and a GET
// whose connection broke, after a second (not a watch: it may have handed on events; its
// caller resumes it). Requests are throttled on the client's side, as client-go's are
// (ClientOptions::qps and burst).
//
// Thread-safety: every method may be called from any thread at once; calls block for at most
// the request timeout (times the retries), a watch until it ends.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/logging.h"
#include "common/token_bucket.h"
#include "kubeapi/resource_slice.h"
#include "kubeapi/resource_versions.h"
#include "kubeclient/http_transport.h"
#include "kubeclient/metrics.h"
#include "kubeclient/rest_config.h"

namespace devmgr::kubeclient {

struct ClientOptions {
  // Each request's limit (not a watch's).
  absl::Duration timeout = absl::Seconds(30);
  // client-go's default.
  int max_retries = 10;
  // How a retry, or a request the throttle holds, waits; tests count the waits instead. Null:
  // absl::SleepFor.
  std::function<void(absl::Duration)> sleep;
  // Client-side throttling, as client-go's token bucket: each request (each try of it; a watch
  // only when it is tried again) takes a token first, and waits for one when none is left
  // (Cancelled if its Cancellation is set meanwhile; the token then goes back). The kubelet's
  // defaults (--kube-api-qps, --kube-api-burst). As client-go reads them: 0 means its own
  // defaults, 5 and 10; a negative qps, no throttling (a negative burst is taken as 1).
  double qps = 50;
  int burst = 100;
  // Where a wait for a token is logged, as client-go logs it: over 50 ms at debug (klog's
  // V(3)), and over a second at info as well, at most once in 10 s (once a second when debug
  // is on); and an exec plugin's run that failed after a 401, at error ("refreshing
  // credentials", client-go's words). Null: not logged.
  LoggerPtr logger;
  // Told of every try, request, token and exec plugin run, as client-go's rest client metrics
  // count them (kubeclient/metrics.h); it must outlive the client. Null: not counted.
  ClientMetrics* metrics = nullptr;
  // The time the throttle's bucket refills by, and the waits and durations logged and counted
  // are measured with; it must outlive the client. Tests stop it, so that a token's wait does
  // not depend on how long the requests before it took. Null: MonotonicClock().
  const Clock* clock = nullptr;
};

// What a list or watch selects (the API's query parameters); empty fields are left out.
struct ListOptions {
  // "spec.driver=gpu.example.com,spec.nodeName=worker-1".
  std::string field_selector;
  std::string label_selector;
  // List: "" for the newest; watch: where the watch starts (its events come after it).
  std::string resource_version;
  // Watch: the server ends the watch after this long (0: the server's default, and no end on
  // the client's side); the client ends one still open a tenth (and a second) later.
  absl::Duration watch_timeout = absl::ZeroDuration();
};

struct SliceList {
  std::vector<kubeapi::ResourceSlice> items;
  // metadata.resourceVersion of the list: where a watch that follows it starts.
  std::string resource_version;
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark };

struct SliceEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The slice (for a bookmark, only its metadata.resourceVersion is meaningful).
  kubeapi::ResourceSlice slice;
  // The event's resourceVersion: where to resume after it.
  std::string resource_version;
};

// Preconditions of a delete: the object must still have this uid and resourceVersion (an
// empty field is not checked).
struct Preconditions {
  std::string uid;
  std::string resource_version;
};

// How many slices one page of a list holds (client-go's pager's default).
inline constexpr int kListPageSize = 500;

// The longest watch event read, as client-go's streaming decoder (ErrObjectTooLarge).
inline constexpr size_t kMaxWatchEventBytes = 16 << 20;

// Calls that name one object refuse, with InvalidArgument and before sending anything, a name or
// namespace that is "." or "..", or holds '/' or '%', as client-go's IsValidPathSegmentName
// does (the request would name another path than the object's), or that is empty.
class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Create(const RestConfig& config,
                                                        ClientOptions options = {});

  // ListResourceSlices: every slice the options select, read in pages of kListPageSize when
  // options.resource_version is empty (the continue token of each page given to the next; one
  // whole list instead when a token has expired, 410), as client-go's pager reads them.
  // Cancelled once `cancel` is set, during the request or a retry's pause.
  absl::StatusOr<SliceList> ListResourceSlices(const ListOptions& options,
                                               const Cancellation* cancel = nullptr);
  absl::StatusOr<kubeapi::ResourceSlice> GetResourceSlice(const std::string& name);
  // The writes below end, Cancelled, once `cancel` is set, during the request or a retry's
  // pause, as a client-go call ends with its context: a write whose request went out may have
  // been made all the same.
  //
  // Create: metadata.generateName names the slice when metadata.name is empty. AlreadyExists
  // for a name that is taken.
  absl::StatusOr<kubeapi::ResourceSlice> CreateResourceSlice(const kubeapi::ResourceSlice& slice,
                                                             const Cancellation* cancel = nullptr);
  // Update: Aborted (409 Conflict) when metadata.resourceVersion is no longer the server's.
  absl::StatusOr<kubeapi::ResourceSlice> UpdateResourceSlice(const kubeapi::ResourceSlice& slice,
                                                             const Cancellation* cancel = nullptr);
  absl::Status DeleteResourceSlice(const std::string& name, const Preconditions& preconditions,
                                   const Cancellation* cancel = nullptr);
  // DeleteResourceSlices: every slice the field selector selects (deletecollection).
  absl::Status DeleteResourceSlices(const ListOptions& options,
                                    const Cancellation* cancel = nullptr);

  // WatchResourceSlices makes one watch request (with bookmarks) from options.resource_version
  // and calls `on_event` for each event, in order, on the caller's thread, until the server
  // ends the watch (OK), the watch is still open a tenth (and a second) past its watch_timeout
  // (OK: the client ends it, resumable from the last event; a stalled connection, which
  // client-go finds with HTTP/2 pings), `on_event` returns false (OK), `cancel` is set
  // (Cancelled) or the stream breaks. OutOfRange when the server says the version is too old (410,
  // as an answer or as an ERROR event): list again. A line that is not an event, or one longer than
  // kMaxWatchEventBytes, is InvalidArgument; the events before it were delivered. The last event
  // of a stream that ends whole may come without its newline, as client-go reads it too.
  absl::Status WatchResourceSlices(const ListOptions& options,
                                   const std::function<bool(const SliceEvent&)>& on_event,
                                   const Cancellation* cancel = nullptr);

  // GetResourceClaim: the claim as the server has it, in v1's shape.
  absl::StatusOr<nlohmann::json> GetResourceClaim(const std::string& namespace_name,
                                                  const std::string& name);
  absl::StatusOr<nlohmann::json> GetNode(const std::string& name,
                                         const Cancellation* cancel = nullptr);

  // The resource.k8s.io version calls use now.
  kubeapi::ResourceVersion resource_version() const;
  const std::string& server() const { return transport_->server(); }

 private:
  Client(std::unique_ptr<HttpTransport> transport, ClientOptions options);

  // WriteSlice: a create (POST) or an update (PUT) of `slice`.
  absl::StatusOr<kubeapi::ResourceSlice> WriteSlice(const std::string& method,
                                                    const kubeapi::ResourceSlice& slice,
                                                    const Cancellation* cancel);
  // Do sends a request, trying it again as the header says; Cancelled once `cancel` is set. With
  // `on_data` it streams the body of a 2xx answer to it, and retries only answers the server
  // asks to have tried again (never a stream that broke).
  absl::StatusOr<HttpResponse> Do(const HttpRequest& request, const Cancellation* cancel = nullptr,
                                  const std::function<bool(std::string_view)>* on_data = nullptr);
  // Json: the body of a 2xx answer, parsed; the answer's error otherwise.
  absl::StatusOr<nlohmann::json> DoJson(HttpRequest request, const Cancellation* cancel = nullptr);
  // WithVersion runs `call` with the version in use, and with the next ones while it answers
  // NotFound; the last version tried is kept, unless its answer was a transient failure.
  template <typename T>
  absl::StatusOr<T> WithVersion(
      const std::function<absl::StatusOr<T>(kubeapi::ResourceVersion)>& call);

  // Throttle takes a token for `request`, pausing for it when none is left: false, the token
  // given back, when `pause` was cut short (its Cancellation set). `reason` says why the
  // request is tried again, "" for a first try (client-go's retry reason, for the log).
  bool Throttle(const HttpRequest& request, const std::string& reason,
                const std::function<bool(absl::Duration)>& pause) ABSL_LOCKS_EXCLUDED(throttle_mu_);
  // LogThrottle logs a wait for a token of `delay`, as client-go does.
  void LogThrottle(const HttpRequest& request, const std::string& reason, absl::Duration delay)
      ABSL_LOCKS_EXCLUDED(throttle_mu_);
  // CountThrottle tells the metrics of a token taken after `wait`.
  void CountThrottle(const HttpRequest& request, absl::Duration wait);

  const std::unique_ptr<HttpTransport> transport_;
  const ClientOptions options_;
  const Clock& clock_;
  std::atomic<int> version_{0};
  absl::Mutex throttle_mu_;
  // Null without throttling.
  std::optional<TokenBucket> bucket_ ABSL_GUARDED_BY(throttle_mu_);
  // When a wait was last logged at info.
  absl::Time throttle_logged_ ABSL_GUARDED_BY(throttle_mu_) = absl::InfinitePast();
};

// SliceFieldSelector: "spec.driver=D,spec.nodeName=N", leaving out an empty driver and a node
// name not given; an empty node name selects the slices that have none ("spec.nodeName=").
std::string SliceFieldSelector(const std::string& driver,
                               const std::optional<std::string>& node_name);

}  // namespace devmgr::kubeclient
