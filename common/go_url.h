// URLs as Go's net/url parses and prints them (Go 1.26, with the GODEBUG defaults of a module at
// go 1.26, Kubernetes' own), for what devmgr must judge as the API server and the scheduler do:
// Kubernetes' CEL URL library (`url()`, `isURL()` and the accessors) and its "uri" format.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr {

// GoUserinfo: url.Userinfo, the user information before a host's '@', unescaped.
struct GoUserinfo {
  std::string username{};
  std::string password{};
  bool password_set = false;

  bool operator==(const GoUserinfo&) const = default;
};

// GoQueryValues: url.Values, each key with its values in the order the query gives them; the
// keys in the order of their first appearance (Go's map has none).
using GoQueryValues = std::vector<std::pair<std::string, std::vector<std::string>>>;

// GoURL: url.URL. The fields hold what Go's do: `path` and `fragment` unescaped, `raw_path` and
// `raw_fragment` the text they came from when it is not their default escaping, `raw_query`
// as written.
struct GoURL {
  std::string scheme{};  // lower case
  std::string opaque{};  // scheme:opaque, a scheme without "/" after its ':'
  std::optional<GoUserinfo> user{};
  std::string host{};  // host or host:port, unescaped; an IPv6 address between brackets
  std::string path{};
  std::string raw_path{};
  bool omit_host = false;    // a scheme followed by a path without an authority ("file:/x")
  bool force_query = false;  // a '?' with nothing after it
  std::string raw_query{};
  std::string fragment{};
  std::string raw_fragment{};

  // Parse: url.Parse: a URL or a relative reference, the fragment after the first '#'. Errors
  // are Go's texts: `parse "https://a:b:c/": invalid port ":b:c" after host`.
  static absl::StatusOr<GoURL> Parse(absl::string_view raw);
  // ParseRequestURI: url.ParseRequestURI: an absolute URL or an absolute path, as an HTTP
  // request names one; a '#' is no fragment there.
  static absl::StatusOr<GoURL> ParseRequestURI(absl::string_view raw);

  // EscapedPath: URL.EscapedPath: raw_path when it is a valid escaping of path, otherwise path
  // escaped ("/with space" gives "/with%20space").
  std::string EscapedPath() const;
  // EscapedFragment: URL.EscapedFragment, as EscapedPath for the fragment.
  std::string EscapedFragment() const;
  // Hostname: URL.Hostname: the host without a valid port and without an IPv6 address's
  // brackets.
  std::string Hostname() const;
  // Port: URL.Port: the host's numeric port without its ':', or "".
  std::string Port() const;
  // Query: URL.Query: raw_query parsed, the pairs that cannot be (a bad escape, a ';') left out,
  // and nothing for a query of more than 10,000 parameters (Go's urlmaxqueryparams).
  GoQueryValues Query() const;
  // String: URL.String, the URL reassembled; Kubernetes' URL values are equal when theirs are.
  std::string String() const;
};

}  // namespace devmgr
