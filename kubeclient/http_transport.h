// HttpTransport: HTTPS requests to one Kubernetes API server, with the TLS settings and
// credentials of a RestConfig, on libcurl (loaded by the first Create: curl_library.h). It knows
// HTTP and TLS, not the Kubernetes API: any answer the server gives, whatever its code, is a
// response; only a request that got no answer (no connection, a TLS failure, a timeout) is an
// error.
//
// Connections are kept open and reused: each request borrows one of the transport's curl handles
// (each keeps its own connections) and gives it back, so concurrent requests run on separate
// connections and sequential ones reuse theirs.
//
// A bearer token file is read again when RestConfig::bearer_token_file_refresh (a minute) has
// passed since the last read (client-go's cached file token source), so a rotated service
// account token is picked up; a read that fails keeps the token in hand. A client certificate
// and key named as files are read again the same way every
// RestConfig::client_certificate_refresh (five minutes, client-go's rotating client
// certificate), and at the next request after curl could not use them. A user's exec plugin
// gives the token and the client certificate instead (exec_credential.h): it runs at the first
// request, again when they expire, and when the server answers 401 to a request made with them:
// as client-go's, before that answer is returned as it came, the old credentials kept (and the
// run's error logged) if the run fails. A request waits for the plugin no longer than its
// timeout or its cancellation.
//
// The user the configuration impersonates (RestConfig::impersonate) is named in every request's
// Impersonate-* headers, as client-go names it; a header value that cannot be sent (a control
// character, as a line break) fails the request, or for impersonation Create, in Go's words.
//
// Thread-safety: every method may be called from any thread at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "kubeclient/cancellation.h"
#include "kubeclient/exec_credential.h"
#include "kubeclient/metrics.h"
#include "kubeclient/rest_config.h"

namespace devmgr::kubeclient {

struct CurlLibrary;

struct HttpRequest {
  std::string method = "GET";
  // Path and query below the server's URL: "/apis/resource.k8s.io/v1/resourceslices?...".
  std::string target;
  // Sent as application/json when not empty.
  std::string body;
  // The whole exchange, from connecting to the last byte; zero means no limit. A stream's
  // timeout that passes after its 2xx answer began ends it as the server's end would. It covers
  // the wait for an exec plugin's credentials too: the exchange gets what that wait left.
  absl::Duration timeout = absl::Seconds(30);
};

struct HttpResponse {
  int code = 0;
  std::string body;
  // The Retry-After header, in seconds; -1 when absent or not a number of seconds.
  int retry_after_seconds = -1;
  // X-Kubernetes-PF-FlowSchema-UID: the flow schema of priority and fairness that matched the
  // request (client-go names it when it waits after a 429).
  std::string flow_schema_uid;
};

// IsConnectionLost: `status` is a transport error for a connection that broke after the
// request went out (reset, or closed before a whole answer): a GET may be tried again, as
// client-go does; a connection that could not be made is not this.
bool IsConnectionLost(const absl::Status& status);

class HttpTransport {
 public:
  // Create checks the configuration (a server URL with https:// or http://, not
  // insecure_skip_tls_verify beside a CA; PEM material curl can load is checked at the first
  // request). InvalidArgument for a server that is not a URL, both TLS settings, a proxy
  // URL of another scheme than http, https or socks5, or an impersonation whose values a header
  // cannot carry;
  // FailedPrecondition when libcurl cannot be loaded. To an http:// server no credentials are
  // sent (the token, its file, the client certificate and the exec plugin are left unused), as
  // clientcmd reads none for such a kubeconfig; here for a configuration built in code too.
  // `logger` gets what client-go logs here (an exec plugin's failed refresh), `metrics` the exec
  // plugin's runs; null: nothing.
  static absl::StatusOr<std::unique_ptr<HttpTransport>> Create(const RestConfig& config,
                                                               LoggerPtr logger = nullptr,
                                                               ClientMetrics* metrics = nullptr);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Send makes one request and returns the whole answer. Unavailable when the server cannot be
  // reached or the TLS handshake fails (the message says which), DeadlineExceeded after the
  // request's timeout, Cancelled when `cancel` is set; blocks until then.
  absl::StatusOr<HttpResponse> Send(const HttpRequest& request,
                                    const Cancellation* cancel = nullptr);

  // Stream makes one request and hands the body of a 2xx answer to `on_data` piece by piece as
  // it arrives (the response it returns then has an empty body); any other answer is returned
  // whole, as Send's. It ends when the server ends the body, when `on_data` returns false or the
  // request's timeout passes after a 2xx answer began (an OK response: a watch the client ends
  // past its timeoutSeconds), or as Send's errors say. `on_data` runs on the
  // caller's thread.
  absl::StatusOr<HttpResponse> Stream(const HttpRequest& request,
                                      const std::function<bool(std::string_view)>& on_data,
                                      const Cancellation* cancel = nullptr);

  // The server's URL, as configured.
  const std::string& server() const { return server_; }
  // Its host and port, as Go's URL.Host gives them ("10.0.0.1:6443", "[::1]:6443",
  // "api.example.com"): the host label of client-go's metrics.
  const std::string& host() const { return host_; }

 private:
  struct Handle;
  HttpTransport(const CurlLibrary& curl, const RestConfig& config, LoggerPtr logger,
                ClientMetrics* metrics);

  absl::StatusOr<HttpResponse> Perform(const HttpRequest& request,
                                       const std::function<bool(std::string_view)>* on_data,
                                       const Cancellation* cancel);
  // Borrow: an idle handle whose connections were made with the TLS material of
  // `tls_generation` (older ones are closed), or a new one.
  std::unique_ptr<Handle> Borrow(uint64_t tls_generation) ABSL_LOCKS_EXCLUDED(mu_);
  void GiveBack(std::unique_ptr<Handle> handle) ABSL_LOCKS_EXCLUDED(mu_);
  // The Authorization header's value, or "" for an anonymous user; `exec` is the exec
  // plugin's credential, when the user has one.
  absl::StatusOr<std::string> Authorization(const ExecCredential* exec)
      ABSL_LOCKS_EXCLUDED(token_mu_);
  struct TlsMaterial {
    // The CA to trust (empty: the system's), and the client certificate and key to present
    // (empty: none).
    std::string ca_pem;
    std::string cert_pem;
    std::string key_pem;
    // Counts the changes: connections made with older material are not reused.
    uint64_t generation = 0;
  };
  // The TLS material, the CA and the client pair each read again from their files when the
  // configuration names them and their refresh has passed; the client pair `exec` gives, when
  // the user has an exec plugin.
  TlsMaterial CurrentTlsMaterial(const ExecCredential* exec) ABSL_LOCKS_EXCLUDED(tls_mu_);

  const CurlLibrary& curl_;
  const RestConfig config_;
  const LoggerPtr logger_;
  // server_ without a trailing slash; URLs are server_ + target.
  const std::string server_;
  const std::string host_;
  // For tls-server-name: the URL's host is replaced by that name (so SNI and the certificate
  // check use it), curl is told to connect to the real host ("name:port:host:port"), and the
  // requests carry the real host as their Host header.
  std::string url_base_;
  std::string connect_to_;
  std::string host_header_;
  // The proxy every request goes through, as libcurl names it; empty: the environment's.
  const std::string proxy_;
  // The Impersonate-* header lines every request carries (RestConfig::impersonate).
  std::vector<std::string> impersonation_;

  // The user's exec plugin; null when it has none.
  std::unique_ptr<ExecCredentialPlugin> exec_;

  absl::Mutex mu_;
  std::vector<std::unique_ptr<Handle>> idle_ ABSL_GUARDED_BY(mu_);

  absl::Mutex token_mu_;
  std::string file_token_ ABSL_GUARDED_BY(token_mu_);
  absl::Time file_token_read_ ABSL_GUARDED_BY(token_mu_) = absl::InfinitePast();

  absl::Mutex tls_mu_;
  TlsMaterial tls_ ABSL_GUARDED_BY(tls_mu_);
  absl::Time certificate_read_ ABSL_GUARDED_BY(tls_mu_) = absl::Now();
  absl::Time ca_read_ ABSL_GUARDED_BY(tls_mu_) = absl::Now();
};

}  // namespace devmgr::kubeclient
