#include "kubeclient/client.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/go_quote.h"
#include "common/json_depth.h"
#include "kubeapi/json_member.h"
#include "kubeapi/json_text.h"
#include "kubeclient/api_status.h"

namespace devmgr::kubeclient {
namespace {

using Json = nlohmann::json;
using kubeapi::ResourceVersion;

// A connection that broke under a GET is tried again after this (client-go's artificial
// Retry-After of 1 s).
constexpr absl::Duration kConnectionLostWait = absl::Seconds(1);
// client-go's rest.DefaultQPS and DefaultBurst, for ClientOptions that give 0.
constexpr double kDefaultQps = 5;
constexpr int kDefaultBurst = 10;
// Waits for a token longer than these are logged, at debug and at info (client-go's
// longThrottleLatency and extraLongThrottleLatency).
constexpr absl::Duration kLongThrottle = absl::Milliseconds(50);
constexpr absl::Duration kExtraLongThrottle = absl::Seconds(1);

// Escape: a query parameter value, percent-encoded: every byte but RFC 3986's unreserved
// characters (letters, digits, "-", ".", "_", "~") as %XX, in upper case.
std::string Escape(const std::string& value) {
  constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
      continue;
    }
    const auto byte = static_cast<unsigned char>(c);
    out += '%';
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
  }
  return out;
}

// PathSegment: an object's name or namespace as one segment of a request's path, escaped; refused
// as client-go's IsValidPathSegmentName refuses it, with its words: "." or "..", or holding '/'
// or '%', each of which would make the request name another path than the object's. Empty is
// refused too ("resource name may not be empty", as client-go; an empty namespace, which
// client-go would send as a path without one, is refused here, since every object these calls
// name in a namespace is namespaced).
absl::StatusOr<std::string> PathSegment(absl::string_view what, const std::string& value) {
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " may not be empty"));
  std::vector<std::string> problems;
  if (value == "." || value == "..") problems.push_back(absl::StrCat("may not be '", value, "'"));
  for (const char* part : {"/", "%"}) {
    if (absl::StrContains(value, part)) {
      problems.push_back(absl::StrCat("may not contain '", part, "'"));
    }
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ", what, " \"", value, "\": [", absl::StrJoin(problems, " "), "]"));
  }
  return Escape(value);
}

// Transient: a failure that says nothing of the version asked for: the server or the connection
// unavailable (503, 502, no connection), overloaded (429), timed out (504, the client's deadline)
// or failing inside (500).
bool Transient(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kCancelled:
      return true;
    default:
      return false;
  }
}

// Query: "?a=1&b=2" of the non-empty parameters, or "".
std::string Query(const std::vector<std::pair<const char*, std::string>>& parameters) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : parameters) {
    if (!value.empty()) parts.push_back(absl::StrCat(key, "=", Escape(value)));
  }
  return parts.empty() ? std::string() : absl::StrCat("?", absl::StrJoin(parts, "&"));
}

std::string SlicesPath(ResourceVersion version) {
  return absl::StrCat("/apis/", kubeapi::GroupVersion(version), "/resourceslices");
}

absl::StatusOr<kubeapi::ResourceSlice> DecodeSlice(Json object, ResourceVersion version) {
  absl::StatusOr<kubeapi::ResourceSlice> slice =
      kubeapi::DecodeResourceSlice(kubeapi::ResourceSliceToV1(std::move(object), version));
  if (!slice.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the server sent a ResourceSlice devmgr cannot read: ", slice.status().message()));
  }
  return slice;
}

std::string Body(const kubeapi::ResourceSlice& slice, ResourceVersion version) {
  return kubeapi::JsonText(
      kubeapi::ResourceSliceFromV1(kubeapi::EncodeResourceSlice(slice), version));
}

// ParseEvent: one line of a watch stream.
absl::StatusOr<SliceEvent> ParseEvent(std::string_view line, ResourceVersion version) {
  if (absl::Status depth =
          CheckJsonDepth(absl::string_view(line.data(), line.size()), kMaxApiObjectJsonDepth);
      !depth.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the watch stream sent an event devmgr cannot read: ", depth.message()));
  }
  Json event = Json::parse(line, nullptr, false);
  if (event.is_discarded() || !event.is_object() || !event.contains("type") ||
      !event["type"].is_string() || !event.contains("object")) {
    return absl::InvalidArgumentError(
        absl::StrCat("the watch stream sent a line that is not an event: ",
                     std::string(line.substr(0, std::min<size_t>(line.size(), 200)))));
  }
  const std::string type = event["type"].get<std::string>();
  Json& object = event["object"];
  if (type == "ERROR") {
    const auto text = [&](const char* key) {
      auto it = object.find(key);
      return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    // A Status's code is an int32; one past it (4294967706 is 410 wrapped) is no code.
    const bool has_code = object.is_object() && object.contains("code") &&
                          kubeapi::IsInt64(object["code"]) &&
                          object["code"].get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
                          object["code"].get<int64_t>() <= std::numeric_limits<int32_t>::max();
    const int code = has_code ? static_cast<int>(object["code"].get<int64_t>()) : 500;
    return StatusFromApiError(code, text("reason"), absl::StrCat("watch: ", text("message")));
  }
  SliceEvent out;
  if (type == "ADDED") {
    out.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    out.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    out.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    out.type = WatchEventType::kBookmark;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("the watch stream sent an event of type \"", type, "\""));
  }
  absl::StatusOr<kubeapi::ResourceSlice> slice = DecodeSlice(std::move(object), version);
  if (!slice.ok()) return slice.status();
  out.slice = *std::move(slice);
  out.resource_version = out.slice.metadata.resource_version;
  return out;
}

}  // namespace

std::string SliceFieldSelector(const std::string& driver,
                               const std::optional<std::string>& node_name) {
  std::vector<std::string> terms;
  if (!driver.empty()) terms.push_back(absl::StrCat("spec.driver=", driver));
  if (node_name.has_value()) terms.push_back(absl::StrCat("spec.nodeName=", *node_name));
  return absl::StrJoin(terms, ",");
}

absl::StatusOr<std::unique_ptr<Client>> Client::Create(const RestConfig& config,
                                                       ClientOptions options) {
  absl::StatusOr<std::unique_ptr<HttpTransport>> transport =
      HttpTransport::Create(config, options.logger, options.metrics);
  if (!transport.ok()) return transport.status();
  if (!options.sleep) options.sleep = [](absl::Duration wait) { absl::SleepFor(wait); };
  return std::unique_ptr<Client>(new Client(*std::move(transport), std::move(options)));
}

Client::Client(std::unique_ptr<HttpTransport> transport, ClientOptions options)
    : transport_(std::move(transport)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : MonotonicClock()) {
  // client-go's rest client: 0 takes its defaults, a negative rate no limiter.
  const double qps = options_.qps == 0 ? kDefaultQps : options_.qps;
  const int burst = options_.burst == 0 ? kDefaultBurst : std::max(1, options_.burst);
  if (qps > 0) bucket_.emplace(qps, burst, clock_.Now());
}

bool Client::Throttle(const HttpRequest& request, const std::string& reason,
                      const std::function<bool(absl::Duration)>& pause) {
  absl::Duration wait;
  absl::Time act_at;
  {
    absl::MutexLock lock(&throttle_mu_);
    if (!bucket_.has_value()) return true;
    const absl::Time now = clock_.Now();
    wait = bucket_->Reserve(now);
    act_at = now + wait;
  }
  if (wait <= absl::ZeroDuration()) {
    CountThrottle(request, absl::ZeroDuration());
    return true;
  }
  const absl::Time start = clock_.Now();
  // A wait made whole is logged and counted as the wait planned (client-go measures it; they
  // differ by the scheduler's delay, and the planned one is what a test's pause sees), a cut
  // one as measured.
  if (pause(wait)) {
    LogThrottle(request, reason, wait);
    CountThrottle(request, wait);
    return true;
  }
  const absl::Time now = clock_.Now();
  {
    absl::MutexLock lock(&throttle_mu_);
    bucket_->CancelReservation(act_at, now);
  }
  LogThrottle(request, reason, now - start);
  CountThrottle(request, now - start);
  return false;
}

void Client::CountThrottle(const HttpRequest& request, absl::Duration wait) {
  if (options_.metrics != nullptr) {
    options_.metrics->Throttled(request.method, transport_->host(), wait);
  }
}

void Client::LogThrottle(const HttpRequest& request, const std::string& reason,
                         absl::Duration delay) {
  if (delay <= kLongThrottle || options_.logger == nullptr) return;
  const std::string why =
      reason.empty() ? "client-side throttling, not priority and fairness" : reason;
  const std::string url = absl::StrCat(server(), request.target);
  DEVMGR_LOG(options_.logger, debug, "Waited before sending request", "delay", delay, "reason", why,
             "verb", request.method, "URL", url);
  if (delay <= kExtraLongThrottle) return;
  // Long waits at info, but not so often that they flood the log (client-go's throttled
  // logger; klog's V(2) is debug's neighbour here, so debug on stands for it).
  const absl::Duration interval =
      options_.logger->should_log(spdlog::level::debug) ? absl::Seconds(1) : absl::Seconds(10);
  {
    absl::MutexLock lock(&throttle_mu_);
    const absl::Time now = clock_.Now();
    if (now - throttle_logged_ < interval) return;
    throttle_logged_ = now;
  }
  DEVMGR_LOG(options_.logger, info, "Waited before sending request", "delay", delay, "reason", why,
             "verb", request.method, "URL", url);
}

ResourceVersion Client::resource_version() const {
  return static_cast<ResourceVersion>(version_.load());
}

absl::StatusOr<HttpResponse> Client::Do(const HttpRequest& request, const Cancellation* cancel,
                                        const std::function<bool(std::string_view)>* on_data) {
  // A pause before a retry: false when cancelled meanwhile.
  const auto pause = [&](absl::Duration wait) {
    if (cancel == nullptr) {
      options_.sleep(wait);
      return true;
    }
    return !cancel->WaitForCancel(wait);
  };
  // Why the next try is made, as client-go words it (for the throttle's log).
  std::string retry_reason;
  // client-go times each request but a watch, from its first token to its last answer.
  const absl::Time started = clock_.Now();
  absl::Cleanup timed = [&] {
    if (options_.metrics != nullptr && on_data == nullptr) {
      options_.metrics->RequestDone(request.method, transport_->host(), clock_.Now() - started);
    }
  };
  for (int attempt = 0;; ++attempt) {
    // A request already cancelled takes no token, as x/time/rate's Wait checks its context
    // first.
    if (cancel != nullptr && cancel->cancelled()) break;
    // A watch's first try takes no token, as client-go's Watch; its retries do.
    if ((attempt > 0 || on_data == nullptr) && !Throttle(request, retry_reason, pause)) break;
    absl::StatusOr<HttpResponse> response = on_data == nullptr
                                                ? transport_->Send(request, cancel)
                                                : transport_->Stream(request, *on_data, cancel);
    if (options_.metrics != nullptr) {
      if (on_data == nullptr) {
        options_.metrics->RequestSent(request.method, transport_->host(), request.body.size());
      }
      options_.metrics->TryDone(request.method, transport_->host(),
                                response.ok() ? absl::StrCat(response->code) : kNoAnswerCode,
                                attempt > 0);
    }
    const bool last = attempt >= options_.max_retries;
    if (!response.ok()) {
      // A stream that broke may have handed on part of its body: its caller resumes it.
      if (last || request.method != "GET" || on_data != nullptr ||
          !IsConnectionLost(response.status())) {
        return response;
      }
      retry_reason = absl::StrCat(
          "retries: ", attempt + 1, ", retry-after: ", absl::ToInt64Seconds(kConnectionLostWait),
          "s - retry-reason: due to retryable error, error: ", response.status().message());
      if (!pause(kConnectionLostWait)) break;
      continue;
    }
    const absl::Duration wait = absl::Seconds(response->retry_after_seconds);
    // A wait longer than the request's own limit is not made (client-go's request ends at its
    // context's deadline): the answer is the caller's, so a call stays bounded whatever the
    // server asks.
    const bool server_asks_to_wait =
        (response->code == 429 || response->code >= 500) && response->retry_after_seconds >= 0 &&
        (options_.timeout <= absl::ZeroDuration() || wait <= options_.timeout);
    if (last || !server_asks_to_wait) {
      // client-go counts the body of an answer that succeeded, or that has one.
      if (options_.metrics != nullptr && on_data == nullptr &&
          ((response->code >= 200 && response->code <= 206) || !response->body.empty())) {
        options_.metrics->ResponseRead(request.method, transport_->host(), response->body.size());
      }
      return response;
    }
    retry_reason = absl::StrCat(
        "retries: ", attempt + 1, ", retry-after: ", response->retry_after_seconds,
        "s - retry-reason: ",
        response->code == 429 ? absl::StrCat("due to server-side throttling, FlowSchema UID: ",
                                             GoQuote(response->flow_schema_uid))
                              : absl::StrCat(response->code));
    if (!pause(wait)) break;
  }
  return absl::CancelledError(absl::StrCat(request.method, " ", request.target, ": cancelled"));
}

absl::StatusOr<Json> Client::DoJson(HttpRequest request, const Cancellation* cancel) {
  request.timeout = options_.timeout;
  absl::StatusOr<HttpResponse> response = Do(request, cancel);
  if (!response.ok()) return response.status();
  if (absl::Status status = StatusFromResponse(*response); !status.ok()) return status;
  if (absl::Status depth = CheckJsonDepth(response->body, kMaxApiObjectJsonDepth); !depth.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(request.method, " ", request.target,
                                                   ": the server's answer: ", depth.message()));
  }
  Json body = Json::parse(response->body, nullptr, false);
  if (body.is_discarded()) {
    return absl::InvalidArgumentError(
        absl::StrCat(request.method, " ", request.target, ": the server's answer is not JSON"));
  }
  return body;
}

template <typename T>
absl::StatusOr<T> Client::WithVersion(
    const std::function<absl::StatusOr<T>(ResourceVersion)>& call) {
  const int first = version_.load();
  int version = first;
  std::optional<absl::StatusOr<T>> first_result;
  for (int tried = 0; tried < kubeapi::kResourceVersionCount; ++tried) {
    absl::StatusOr<T> result = call(static_cast<ResourceVersion>(version));
    if (!absl::IsNotFound(result.status())) {
      // An answer of the version keeps it; a failure that says nothing of it (the server or the
      // connection unavailable, overloaded, timed out) does not pin the client to it, as
      // upstream's does: the next call starts again from the version in use.
      if (!Transient(result.status())) version_.store(version);
      return result;
    }
    if (!first_result.has_value()) first_result = std::move(result);
    version = (version + 1) % kubeapi::kResourceVersionCount;
  }
  // NotFound from every version: the object itself is missing. The version in use stays (as
  // upstream leaves it), and its answer is the one that names the object.
  return *std::move(first_result);
}

absl::StatusOr<SliceList> Client::ListResourceSlices(const ListOptions& options,
                                                     const Cancellation* cancel) {
  return WithVersion<SliceList>([&](ResourceVersion version) -> absl::StatusOr<SliceList> {
    SliceList list;
    // As client-go's pager in a reflector: a list of the newest state goes in pages; one from
    // a resourceVersion is read whole (from the API server's watch cache).
    bool paged = options.resource_version.empty();
    std::string continue_token;
    for (;;) {
      HttpRequest request;
      request.target = absl::StrCat(
          SlicesPath(version),
          Query({{"fieldSelector", options.field_selector},
                 {"labelSelector", options.label_selector},
                 {"limit", paged ? absl::StrCat(kListPageSize) : ""},
                 {"continue", continue_token},
                 // A page after the first is of the first one's version, which its token holds.
                 {"resourceVersion", continue_token.empty() ? options.resource_version : ""}}));
      absl::StatusOr<Json> body = DoJson(request, cancel);
      if (!body.ok()) {
        const std::optional<ApiError> error = ApiErrorOf(body.status());
        if (!continue_token.empty() && error.has_value() && error->reason == "Expired") {
          // The token outlived the server's history: one whole list instead, as client-go's
          // pager falls back to.
          paged = false;
          continue_token.clear();
          list = SliceList();
          continue;
        }
        return body.status();
      }
      // Read as a list would be a list of nothing, which a reflector takes as every slice
      // deleted; client-go's decoder refuses it, and the list is tried again.
      if (!body->is_object()) {
        return absl::InvalidArgumentError("the server's ResourceSliceList is not a JSON object");
      }
      if (auto meta = body->find("metadata");
          meta != body->end() && !meta->is_null() && !meta->is_object()) {
        return absl::InvalidArgumentError(
            "the server's ResourceSliceList has metadata that is not an object");
      }
      const bool first_page = continue_token.empty();
      const std::string asked = std::move(continue_token);
      continue_token.clear();
      if (auto meta = body->find("metadata"); meta != body->end()) {
        // The list is of its first page's version, as client-go's pager keeps it (every page
        // of one list is of that version).
        if (first_page) list.resource_version = kubeapi::StringMember(*meta, "resourceVersion");
        if (paged) continue_token = kubeapi::StringMember(*meta, "continue");
      }
      // A server that answers a page with the token it was asked for would be asked forever.
      if (!continue_token.empty() && continue_token == asked) {
        return absl::InvalidArgumentError(
            "the server's ResourceSliceList gave the continue token it was asked for again");
      }
      auto items = body->find("items");
      if (items != body->end() && !items->is_null()) {
        if (!items->is_array()) {
          return absl::InvalidArgumentError("the server's ResourceSliceList has no list of items");
        }
        for (Json& item : *items) {
          absl::StatusOr<kubeapi::ResourceSlice> slice = DecodeSlice(std::move(item), version);
          if (!slice.ok()) return slice.status();
          list.items.push_back(*std::move(slice));
        }
      }
      if (continue_token.empty()) return list;
    }
  });
}

absl::StatusOr<kubeapi::ResourceSlice> Client::GetResourceSlice(const std::string& name) {
  absl::StatusOr<std::string> segment = PathSegment("resource name", name);
  if (!segment.ok()) return segment.status();
  return WithVersion<kubeapi::ResourceSlice>(
      [&](ResourceVersion version) -> absl::StatusOr<kubeapi::ResourceSlice> {
        HttpRequest request;
        request.target = absl::StrCat(SlicesPath(version), "/", *segment);
        absl::StatusOr<Json> body = DoJson(request);
        if (!body.ok()) return body.status();
        return DecodeSlice(*std::move(body), version);
      });
}

absl::StatusOr<kubeapi::ResourceSlice> Client::CreateResourceSlice(
    const kubeapi::ResourceSlice& slice, const Cancellation* cancel) {
  return WriteSlice("POST", slice, cancel);
}

absl::StatusOr<kubeapi::ResourceSlice> Client::UpdateResourceSlice(
    const kubeapi::ResourceSlice& slice, const Cancellation* cancel) {
  return WriteSlice("PUT", slice, cancel);
}

absl::StatusOr<kubeapi::ResourceSlice> Client::WriteSlice(const std::string& method,
                                                          const kubeapi::ResourceSlice& slice,
                                                          const Cancellation* cancel) {
  // A create names the collection, an update the slice.
  std::string segment;
  if (method != "POST") {
    absl::StatusOr<std::string> named = PathSegment("resource name", slice.metadata.name);
    if (!named.ok()) return named.status();
    segment = absl::StrCat("/", *named);
  }
  return WithVersion<kubeapi::ResourceSlice>(
      [&](ResourceVersion version) -> absl::StatusOr<kubeapi::ResourceSlice> {
        HttpRequest request;
        request.method = method;
        request.target = absl::StrCat(SlicesPath(version), segment);
        request.body = Body(slice, version);
        absl::StatusOr<Json> body = DoJson(request, cancel);
        if (!body.ok()) return body.status();
        return DecodeSlice(*std::move(body), version);
      });
}

absl::Status Client::DeleteResourceSlice(const std::string& name,
                                         const Preconditions& preconditions,
                                         const Cancellation* cancel) {
  absl::StatusOr<std::string> segment = PathSegment("resource name", name);
  if (!segment.ok()) return segment.status();
  return WithVersion<Json>([&](ResourceVersion version) -> absl::StatusOr<Json> {
           HttpRequest request;
           request.method = "DELETE";
           request.target = absl::StrCat(SlicesPath(version), "/", *segment);
           Json options = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
           if (!preconditions.uid.empty()) options["preconditions"]["uid"] = preconditions.uid;
           if (!preconditions.resource_version.empty()) {
             options["preconditions"]["resourceVersion"] = preconditions.resource_version;
           }
           request.body = options.dump();
           return DoJson(request, cancel);
         })
      .status();
}

absl::Status Client::DeleteResourceSlices(const ListOptions& options, const Cancellation* cancel) {
  return WithVersion<Json>([&](ResourceVersion version) -> absl::StatusOr<Json> {
           HttpRequest request;
           request.method = "DELETE";
           request.target = absl::StrCat(SlicesPath(version),
                                         Query({{"fieldSelector", options.field_selector},
                                                {"labelSelector", options.label_selector}}));
           return DoJson(request, cancel);
         })
      .status();
}

absl::Status Client::WatchResourceSlices(const ListOptions& options,
                                         const std::function<bool(const SliceEvent&)>& on_event,
                                         const Cancellation* cancel) {
  return WithVersion<bool>([&](ResourceVersion version) -> absl::StatusOr<bool> {
           HttpRequest request;
           const int64_t timeout_seconds = absl::ToInt64Seconds(options.watch_timeout);
           // client-go finds a connection that stalled silently (a dead peer behind a proxy,
           // which TCP keepalive does not see) with HTTP/2 pings; this client speaks HTTP/1.1 and
           // has none. It ends a watch still open a tenth (and a second) past the timeout it asked
           // the server for, by when the server's own end has come if the connection lives.
           if (timeout_seconds > 0) {
             const absl::Duration asked = absl::Seconds(timeout_seconds);
             request.timeout = asked + asked / 10 + absl::Seconds(1);
           } else {
             request.timeout = absl::ZeroDuration();
           }
           request.target = absl::StrCat(
               SlicesPath(version),
               Query({{"watch", "true"},
                      {"allowWatchBookmarks", "true"},
                      {"fieldSelector", options.field_selector},
                      {"labelSelector", options.label_selector},
                      {"resourceVersion", options.resource_version},
                      {"timeoutSeconds",
                       timeout_seconds > 0 ? absl::StrCat(timeout_seconds) : std::string()}}));
           std::string pending;
           absl::Status stream_error;
           bool consumer_stopped = false;
           const auto too_long = [&] {
             stream_error = absl::InvalidArgumentError(
                 absl::StrCat("a watch event longer than ", kMaxWatchEventBytes, " bytes"));
             return false;
           };
           const std::function<bool(std::string_view)> on_data = [&](std::string_view data) {
             // What was pending holds no newline (its lines were handed on): only the new data
             // is searched, so an event that comes in many pieces is scanned once.
             const size_t searched = pending.size();
             pending.append(data);
             size_t start = 0;
             for (size_t end;
                  (end = pending.find('\n', std::max(start, searched))) != std::string::npos;
                  start = end + 1) {
               const std::string_view line(pending.data() + start, end - start);
               if (line.size() > kMaxWatchEventBytes) return too_long();
               if (line.empty()) continue;
               absl::StatusOr<SliceEvent> event = ParseEvent(line, version);
               if (!event.ok()) {
                 stream_error = event.status();
                 return false;
               }
               if (!on_event(*event)) {
                 consumer_stopped = true;
                 return false;
               }
             }
             if (pending.size() - start > kMaxWatchEventBytes) return too_long();
             pending.erase(0, start);
             return true;
           };
           // Tried again when the server asks for it before streaming (a 429 of priority and
           // fairness, a 503 of a server starting), as client-go's watch is: a stream hands on
           // only the body of a 2xx answer, so nothing was seen yet.
           absl::StatusOr<HttpResponse> response = Do(request, cancel, &on_data);
           if (!response.ok()) return response.status();
           if (absl::Status status = StatusFromResponse(*response); !status.ok()) return status;
           if (!stream_error.ok()) return stream_error;
           // The stream ended whole; its last event may have come without a newline, which
           // client-go's decoder reads all the same.
           const absl::string_view stripped = absl::StripAsciiWhitespace(pending);
           const std::string_view last(stripped.data(), stripped.size());
           if (consumer_stopped || last.empty()) return true;
           absl::StatusOr<SliceEvent> event = ParseEvent(last, version);
           if (!event.ok()) return event.status();
           on_event(*event);
           return true;
         })
      .status();
}

absl::StatusOr<Json> Client::GetResourceClaim(const std::string& namespace_name,
                                              const std::string& name) {
  absl::StatusOr<std::string> namespace_segment = PathSegment("namespace", namespace_name);
  if (!namespace_segment.ok()) return namespace_segment.status();
  absl::StatusOr<std::string> name_segment = PathSegment("resource name", name);
  if (!name_segment.ok()) return name_segment.status();
  return WithVersion<Json>([&](ResourceVersion version) -> absl::StatusOr<Json> {
    HttpRequest request;
    request.target = absl::StrCat("/apis/", kubeapi::GroupVersion(version), "/namespaces/",
                                  *namespace_segment, "/resourceclaims/", *name_segment);
    absl::StatusOr<Json> body = DoJson(request);
    if (!body.ok()) return body.status();
    return kubeapi::ResourceClaimToV1(*std::move(body), version);
  });
}

absl::StatusOr<Json> Client::GetNode(const std::string& name, const Cancellation* cancel) {
  absl::StatusOr<std::string> segment = PathSegment("resource name", name);
  if (!segment.ok()) return segment.status();
  HttpRequest request;
  request.target = absl::StrCat("/api/v1/nodes/", *segment);
  return DoJson(request, cancel);
}

}  // namespace devmgr::kubeclient
