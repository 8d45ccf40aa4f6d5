// The API server's answers as absl::Status: a code the caller can act on, the server's own
// message (from the metav1.Status object it sends with every error), and the HTTP code and
// reason kept beside it for callers that need the exact kind (a conflict is not "already
// exists", though both are 409).
//
//   HTTP (reason)            absl code            what the caller does
//   400, 422 (Invalid)       InvalidArgument      fix the object; do not retry
//   401                      Unauthenticated      new credentials
//   403                      PermissionDenied     RBAC
//   404                      NotFound             the object or the API version is not there
//   409 (AlreadyExists)      AlreadyExists        pick another name
//   409 (Conflict, other)    Aborted              read again, then write again
//   410 (Gone, Expired)      OutOfRange           a resourceVersion too old: list again
//   429                      ResourceExhausted    wait (Retry-After)
//   500                      Internal
//   503                      Unavailable          retry
//   504 (Timeout)            DeadlineExceeded     retry
//   other                    Unknown
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "kubeclient/http_transport.h"

namespace devmgr::kubeclient {

// ApiError: what the server said of a failed request.
struct ApiError {
  int http_code = 0;
  // metav1.Status reason ("NotFound", "Conflict", "AlreadyExists", "Expired", ...); empty when
  // the body was not a Status.
  std::string reason;
};

// StatusFromResponse: OK for a 2xx answer, else the error it carries. A body that is not a
// Status object (a proxy's page, garbage) still gives the code, with the start of the body in
// the message.
absl::Status StatusFromResponse(const HttpResponse& response);

// StatusFromApiError: the Status of an answer with this code, reason and message (a watch's
// ERROR event carries a Status object without an HTTP answer around it).
absl::Status StatusFromApiError(int http_code, const std::string& reason,
                                const std::string& message);

// ApiErrorOf: the server's code and reason behind a Status this client made; std::nullopt for
// transport errors and OK.
std::optional<ApiError> ApiErrorOf(const absl::Status& status);

}  // namespace devmgr::kubeclient
