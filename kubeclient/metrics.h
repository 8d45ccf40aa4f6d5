// What the API client tells a metrics sink, as client-go's rest client and exec authenticator
// count it (a kubelet exports them through component-base's restclient package):
//   rest_client_requests_total{code,method,host}: every try of a request, a watch's included;
//     code the answer's HTTP status, or "<error>" for a try that got none;
//   rest_client_request_retries_total{code,verb,host}: every try after a request's first;
//   rest_client_request_duration_seconds{verb,host}: each request other than a watch, from its
//     first wait for a token to its last answer;
//   rest_client_rate_limiter_duration_seconds{verb,host}: each token a request takes, with the
//     wait for it (0 when one was at hand);
//   rest_client_request_size_bytes{verb,host}: the body of each try but a watch's (0 without
//     one);
//   rest_client_response_size_bytes{verb,host}: the body of each request's answer but a
//     watch's, when it succeeded or its body is not empty;
//   rest_client_exec_plugin_call_total{code,call_status}: each run of the exec credential
//     plugin, with its exit code (0 when it succeeded, 1 when it did not run).
// `host` is the server URL's host and port, as Go's URL.Host gives it. node/node_metrics.h
// renders them. Calls come from the threads making requests and running the plugin, and must
// not block.
#pragma once

#include <cstddef>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace devmgr::kubeclient {

// rest_client_exec_plugin_call_total's call_status values, client-go's.
inline constexpr absl::string_view kExecPluginNoError = "no_error";
inline constexpr absl::string_view kExecPluginExecutionError = "plugin_execution_error";
inline constexpr absl::string_view kExecPluginNotFoundError = "plugin_not_found_error";
inline constexpr absl::string_view kExecPluginInternalError = "client_internal_error";

// The code of a try that got no answer.
inline constexpr absl::string_view kNoAnswerCode = "<error>";

class ClientMetrics {
 public:
  virtual ~ClientMetrics() = default;
  // TryDone: one try of a request, `retry` when it was not the first.
  virtual void TryDone(absl::string_view verb, absl::string_view host, absl::string_view code,
                       bool retry) = 0;
  // RequestDone: a request other than a watch, all its tries and waits together.
  virtual void RequestDone(absl::string_view verb, absl::string_view host,
                           absl::Duration duration) = 0;
  // RequestSent: a try's body, of `bytes`.
  virtual void RequestSent(absl::string_view verb, absl::string_view host, size_t bytes) = 0;
  // ResponseRead: a request's answer, whose body is `bytes`.
  virtual void ResponseRead(absl::string_view verb, absl::string_view host, size_t bytes) = 0;
  // Throttled: a token taken, after `wait`.
  virtual void Throttled(absl::string_view verb, absl::string_view host, absl::Duration wait) = 0;
  // ExecPluginCalled: one run of the exec credential plugin.
  virtual void ExecPluginCalled(int exit_code, absl::string_view call_status) = 0;
};

}  // namespace devmgr::kubeclient
