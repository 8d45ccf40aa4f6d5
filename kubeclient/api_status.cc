#include "kubeclient/api_status.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kubeapi/json_member.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeclient {
namespace {

// The payload that carries "<http code> <reason>".
constexpr char kApiErrorPayload[] = "devmgr.kubeclient/api-error";
// How much of a body that is not a Status goes into the message.
constexpr size_t kBodyExcerpt = 200;

absl::StatusCode CodeFor(int http_code, const std::string& reason) {
  switch (http_code) {
    case 400:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return absl::StatusCode::kOutOfRange;
    case 429:
      return absl::StatusCode::kResourceExhausted;
    case 500:
      return absl::StatusCode::kInternal;
    case 503:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      return absl::StatusCode::kUnknown;
  }
}

}  // namespace

absl::Status StatusFromApiError(int http_code, const std::string& reason,
                                const std::string& message) {
  absl::Status status(CodeFor(http_code, reason), message);
  status.SetPayload(kApiErrorPayload, absl::Cord(absl::StrCat(http_code, " ", reason)));
  return status;
}

absl::Status StatusFromResponse(const HttpResponse& response) {
  if (response.code >= 200 && response.code < 300) return absl::OkStatus();
  const nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
  if (!body.is_discarded() && kubeapi::StringMember(body, "kind") == "Status") {
    std::string message = kubeapi::StringMember(body, "message");
    if (message.empty()) message = absl::StrCat("the server answered HTTP ", response.code);
    return StatusFromApiError(response.code, kubeapi::StringMember(body, "reason"), message);
  }
  std::string excerpt = response.body.substr(0, kBodyExcerpt);
  if (response.body.size() > kBodyExcerpt) excerpt += "...";
  return StatusFromApiError(
      response.code, "",
      absl::StrCat(
          "the server answered HTTP ", response.code,
          excerpt.empty() ? "" : absl::StrCat(" with a body that is not a Status: ", excerpt)));
}

std::optional<ApiError> ApiErrorOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kApiErrorPayload);
  if (!payload.has_value()) return std::nullopt;
  const std::string text(*payload);
  std::pair<std::string, std::string> parts = absl::StrSplit(text, absl::MaxSplits(' ', 1));
  ApiError error;
  if (!absl::SimpleAtoi(parts.first, &error.http_code)) return std::nullopt;
  error.reason = parts.second;
  return error;
}

}  // namespace devmgr::kubeclient
