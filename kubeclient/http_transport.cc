#include "kubeclient/http_transport.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/file_store.h"
#include "common/go_url.h"
#include "kubeclient/curl_library.h"

namespace devmgr::kubeclient {
namespace {

constexpr char kUserAgent[] = "devmgr/0.1.0";
// The payload that marks a connection lost after the request went out.
constexpr char kConnectionLostPayload[] = "devmgr.kubeclient/connection-lost";
// Connecting never waits longer than this, even for a watch (curl's default is 300 s).
constexpr absl::Duration kConnectTimeout = absl::Seconds(30);
// How long a quiet transfer sleeps in curl_multi_poll before it looks again; Cancel wakes it.
constexpr int kPollMillis = 1000;

struct SlistDeleter {
  const CurlLibrary* curl;
  void operator()(curl_slist* list) const { curl->slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

void Append(Slist& list, const std::string& header) {
  curl_slist* appended = list.get_deleter().curl->slist_append(list.get(), header.c_str());
  if (appended != nullptr) {
    static_cast<void>(list.release());
    list.reset(appended);
  }
}

// A blob curl copies (CURL_BLOB_COPY), so the string need not outlive the option.
curl_blob Blob(const std::string& pem) {
  return curl_blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
}

// Where one transfer's answer goes while curl runs it.
struct Transfer {
  const CurlLibrary* curl = nullptr;
  CURL* easy = nullptr;
  const std::function<bool(std::string_view)>* on_data = nullptr;
  std::string body;
  // Set when on_data asked to stop: the write error curl then reports is not an error.
  bool stopped = false;
};

// IsCertificateBundle: `pem` holds at least one certificate, and every PEM certificate block in
// it parses (a file caught half written has a broken last block).
bool IsCertificateBundle(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return false;
  ERR_clear_error();
  int certificates = 0;
  while (X509* certificate = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_free(certificate);
    ++certificates;
  }
  // The reading ends cleanly when no block is left to start.
  const unsigned long ended = ERR_peek_last_error();  // NOLINT(google-runtime-int): OpenSSL's
  const bool clean =
      ERR_GET_LIB(ended) == ERR_LIB_PEM && ERR_GET_REASON(ended) == PEM_R_NO_START_LINE;
  ERR_clear_error();
  BIO_free(bio);
  return clean && certificates > 0;
}

size_t OnWrite(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  long code = 0;  // NOLINT(google-runtime-int): curl's type
  transfer->curl->easy_getinfo(transfer->easy, CURLINFO_RESPONSE_CODE, &code);
  if (transfer->on_data != nullptr && code >= 200 && code < 300) {
    if (!(*transfer->on_data)(std::string_view(data, bytes))) {
      transfer->stopped = true;
      return 0;  // curl ends the transfer with CURLE_WRITE_ERROR
    }
    return bytes;
  }
  transfer->body.append(data, bytes);
  return bytes;
}

absl::Status TransportError(const CurlLibrary& curl, CURLcode code, const char* detail,
                            const std::string& url, const HttpRequest& request) {
  const std::string what = absl::StrCat(request.method, " ", url, ": ",
                                        *detail != '\0' ? detail : curl.easy_strerror(code));
  // A TLS alert from the server (a client certificate it refuses) reaches curl as a failed
  // read: it is a refusal, not a connection to try again.
  const bool tls_alert = absl::StrContains(detail, "SSL routines");
  if (tls_alert) code = CURLE_SSL_CONNECT_ERROR;
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return absl::DeadlineExceededError(
          absl::StrCat(what, " (no answer within ", absl::FormatDuration(request.timeout), ")"));
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
      return absl::UnavailableError(absl::StrCat("TLS with the API server failed: ", what));
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: {
      absl::Status lost = absl::UnavailableError(absl::StrCat("connection lost: ", what));
      lost.SetPayload(kConnectionLostPayload, absl::Cord("1"));
      return lost;
    }
    default:
      return absl::UnavailableError(absl::StrCat("cannot reach the API server: ", what));
  }
}

// ValidHeaderValue: `value` can be a header's value, as Go's httpguts.ValidHeaderFieldValue
// decides: no control character but a tab. (curl would send a line break as it is, starting
// another header.)
bool ValidHeaderValue(absl::string_view value) {
  return absl::c_none_of(value, [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < ' ' && byte != '\t') || byte == 0x7f;
  });
}

// HeaderLine: "Name: value" for curl's list; "Name;" for an empty value (curl drops a header
// written "Name:"). InvalidArgument in Go's transport's words for a value a header cannot hold.
absl::StatusOr<std::string> HeaderLine(absl::string_view name, absl::string_view value) {
  if (!ValidHeaderValue(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("net/http: invalid header field value for \"", name, "\""));
  }
  // Go writes a value without its leading and trailing spaces and tabs (textproto.TrimString),
  // and curl would drop a header whose value is blank.
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value.empty() ? absl::StrCat(name, ";") : absl::StrCat(name, ": ", value);
}

// ExtraHeaderName: the header that carries the impersonated user's extra `key`, as client-go
// names it: the key's bytes that a header name cannot hold, and '%', %-escaped
// (headerKeyEscape), then in Go's canonical form (each word capitalized).
std::string ExtraHeaderName(absl::string_view key) {
  std::string name = "Impersonate-Extra-";
  for (const char c : key) {
    const bool token = absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
                       std::string_view("!#$&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (token) {
      name.push_back(c);
    } else {
      absl::StrAppendFormat(&name, "%%%02X", static_cast<unsigned char>(c));
    }
  }
  bool word_start = true;
  for (char& c : name) {
    c = word_start ? absl::ascii_toupper(static_cast<unsigned char>(c))
                   : absl::ascii_tolower(static_cast<unsigned char>(c));
    word_start = c == '-';
  }
  return name;
}

// ImpersonationHeaders: the lines client-go's impersonating round tripper adds for `as`; none
// while every field is empty.
absl::StatusOr<std::vector<std::string>> ImpersonationHeaders(const Impersonation& as) {
  if (as == Impersonation{}) return std::vector<std::string>();
  std::vector<std::pair<std::string, std::string>> fields;
  fields.emplace_back("Impersonate-User", as.user);
  if (!as.uid.empty()) fields.emplace_back("Impersonate-Uid", as.uid);
  for (const std::string& group : as.groups) fields.emplace_back("Impersonate-Group", group);
  for (const auto& [key, values] : as.extra) {
    for (const std::string& value : values) fields.emplace_back(ExtraHeaderName(key), value);
  }
  std::vector<std::string> lines;
  for (const auto& [name, value] : fields) {
    absl::StatusOr<std::string> line = HeaderLine(name, value);
    if (!line.ok()) return line.status();
    lines.push_back(*std::move(line));
  }
  return lines;
}

// UrlHost: the host and port of `url` as Go's URL.Host has them; "none" as client-go's metrics
// name a client without a URL.
std::string UrlHost(const std::string& url) {
  absl::StatusOr<GoURL> parsed = GoURL::Parse(url);
  return parsed.ok() ? parsed->host : "none";
}

}  // namespace

bool IsConnectionLost(const absl::Status& status) {
  return status.GetPayload(kConnectionLostPayload).has_value();
}

// One easy handle on a multi handle of its own: the multi handle keeps the connections and is
// what curl_multi_wakeup interrupts.
struct HttpTransport::Handle {
  explicit Handle(const CurlLibrary& library)
      : curl(library), easy(library.easy_init()), multi(library.multi_init()) {}
  ~Handle() {
    curl.multi_cleanup(multi);
    curl.easy_cleanup(easy);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  const CurlLibrary& curl;
  CURL* easy;
  CURLM* multi;
  // The TLS material its connections were made with (TlsMaterial::generation).
  uint64_t tls_generation = 0;
};

absl::StatusOr<std::unique_ptr<HttpTransport>> HttpTransport::Create(const RestConfig& config,
                                                                     LoggerPtr logger,
                                                                     ClientMetrics* metrics) {
  // A server without a scheme gets https:// when TLS is configured, as client-go's
  // DefaultServerUrlFor decides.
  const bool default_tls =
      !config.certificate_authority_pem.empty() || !config.certificate_authority_file.empty() ||
      !config.client_certificate_pem.empty() || !config.client_certificate_file.empty() ||
      config.insecure_skip_tls_verify;
  absl::StatusOr<std::string> server = ServerUrl(config.server, default_tls);
  if (!server.ok()) return server.status();
  const bool https = absl::StartsWith(*server, "https://");
  if (!https && !absl::StartsWith(*server, "http://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("the API server \"", config.server, "\" is not an http(s):// URL"));
  }
  if (config.insecure_skip_tls_verify && !config.certificate_authority_pem.empty()) {
    return absl::InvalidArgumentError(kInsecureWithCaMessage);
  }
  if (!config.proxy_url.empty()) {
    if (absl::Status proxy = CheckProxyUrl(config.proxy_url); !proxy.ok()) return proxy;
  }
  absl::StatusOr<const CurlLibrary*> curl = Curl();
  if (!curl.ok()) return curl.status();
  // Credentials go only where TLS protects them, as clientcmd reads none for a kubeconfig whose
  // server is not https://; here for a configuration built in code too. To a plain http://
  // server (a `kubectl proxy`, an authenticating proxy) requests go without them.
  RestConfig used = config;
  used.server = *std::move(server);
  if (!https) {
    used.bearer_token.clear();
    used.bearer_token_file.clear();
    used.client_certificate_pem.clear();
    used.client_key_pem.clear();
    used.client_certificate_file.clear();
    used.client_key_file.clear();
    used.exec.reset();
  }
  absl::StatusOr<std::vector<std::string>> impersonation = ImpersonationHeaders(config.impersonate);
  if (!impersonation.ok()) return impersonation.status();
  auto transport =
      std::unique_ptr<HttpTransport>(new HttpTransport(**curl, used, std::move(logger), metrics));
  transport->impersonation_ = *std::move(impersonation);
  if (!config.tls_server_name.empty()) {
    // Split the URL with curl's own parser, so that IPv6 brackets and ports come out right.
    const CurlLibrary& lib = **curl;
    CURLU* url = lib.url();
    char* host = nullptr;
    char* port = nullptr;
    const bool parsed =
        lib.url_set(url, CURLUPART_URL, transport->server_.c_str(), 0) == CURLUE_OK &&
        lib.url_get(url, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        lib.url_get(url, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK;
    if (parsed) {
      transport->connect_to_ =
          absl::StrCat(config.tls_server_name, ":", port, ":", host, ":", port);
      // The server's own authority stays the request's Host, as client-go's, whose
      // tls-server-name reaches TLS alone (a proxy or router in front of the API server
      // routes by it).
      char* written_port = nullptr;
      const bool has_port = lib.url_get(url, CURLUPART_PORT, &written_port, 0) == CURLUE_OK;
      transport->host_header_ =
          absl::StrCat("Host: ", host, has_port ? ":" : "", has_port ? written_port : "");
      lib.free(written_port);
      lib.url_set(url, CURLUPART_HOST, config.tls_server_name.c_str(), 0);
      char* rewritten = nullptr;
      if (lib.url_get(url, CURLUPART_URL, &rewritten, 0) == CURLUE_OK) {
        transport->url_base_ = std::string(absl::StripSuffix(rewritten, "/"));
        lib.free(rewritten);
      }
    }
    lib.free(host);
    lib.free(port);
    lib.url_cleanup(url);
    if (!parsed) {
      return absl::InvalidArgumentError(
          absl::StrCat("the API server \"", config.server, "\" is not a valid URL"));
    }
  }
  return transport;
}

HttpTransport::HttpTransport(const CurlLibrary& curl, const RestConfig& config, LoggerPtr logger,
                             ClientMetrics* metrics)
    : curl_(curl),
      config_(config),
      logger_(std::move(logger)),
      server_(absl::StripSuffix(config.server, "/")),
      host_(UrlHost(server_)),
      url_base_(server_),
      // Go's socks5 proxies resolve the server's name at the proxy: libcurl's socks5h.
      proxy_(absl::StartsWith(config.proxy_url, "socks5://")
                 ? absl::StrCat("socks5h://", absl::StripPrefix(config.proxy_url, "socks5://"))
                 : config.proxy_url),
      tls_{config.certificate_authority_pem, config.client_certificate_pem, config.client_key_pem,
           0} {
  if (config_.exec.has_value()) {
    exec_ = std::make_unique<ExecCredentialPlugin>(
        *config_.exec, [] { return ::isatty(STDIN_FILENO) == 1; }, RealClock(), metrics);
  }
}

HttpTransport::~HttpTransport() = default;

std::unique_ptr<HttpTransport::Handle> HttpTransport::Borrow(uint64_t tls_generation) {
  std::vector<std::unique_ptr<Handle>> retired;  // closed outside the lock
  {
    absl::MutexLock lock(&mu_);
    while (!idle_.empty()) {
      std::unique_ptr<Handle> handle = std::move(idle_.back());
      idle_.pop_back();
      if (handle->tls_generation == tls_generation) return handle;
      retired.push_back(std::move(handle));
    }
  }
  auto handle = std::make_unique<Handle>(curl_);
  handle->tls_generation = tls_generation;
  return handle;
}

void HttpTransport::GiveBack(std::unique_ptr<Handle> handle) {
  absl::MutexLock lock(&mu_);
  idle_.push_back(std::move(handle));
}

absl::StatusOr<std::string> HttpTransport::Authorization(const ExecCredential* exec) {
  if (exec != nullptr) return exec->token.empty() ? "" : absl::StrCat("Bearer ", exec->token);
  if (config_.bearer_token_file.empty()) {
    return config_.bearer_token.empty() ? std::string()
                                        : absl::StrCat("Bearer ", config_.bearer_token);
  }
  absl::MutexLock lock(&token_mu_);
  const absl::Time now = absl::Now();
  if (now - file_token_read_ >= config_.bearer_token_file_refresh) {
    absl::StatusOr<std::string> read = ReadWholeFile(config_.bearer_token_file);
    const std::string token = read.ok() ? std::string(absl::StripAsciiWhitespace(*read)) : "";
    if (!token.empty()) {
      file_token_ = token;
      file_token_read_ = now;
    } else if (file_token_.empty() && config_.bearer_token.empty()) {
      // As client-go's file token source: nothing to send. Unauthenticated, whatever the
      // file's error: a missing file must not read as a missing object.
      return absl::UnauthenticatedError(
          absl::StrCat("cannot read the token file ", config_.bearer_token_file.string(), ": ",
                       read.ok() ? "it is empty" : read.status().message()));
    }
    // Otherwise the token in hand is sent, and the file read again at the next request, as
    // client-go's caching token source does while a rotation fails.
  }
  return absl::StrCat("Bearer ", file_token_.empty() ? config_.bearer_token : file_token_);
}

HttpTransport::TlsMaterial HttpTransport::CurrentTlsMaterial(const ExecCredential* exec) {
  absl::MutexLock lock(&tls_mu_);
  const absl::Time now = absl::Now();
  bool changed = false;
  if (exec != nullptr &&
      (exec->client_certificate_pem != tls_.cert_pem || exec->client_key_pem != tls_.key_pem)) {
    tls_.cert_pem = exec->client_certificate_pem;
    tls_.key_pem = exec->client_key_pem;
    changed = true;
  }
  if (!config_.certificate_authority_file.empty() &&
      now - ca_read_ >= config_.certificate_authority_refresh) {
    // As client-go's CA rotation: a CA replaced on disk (a cluster's CA rotation, the service
    // account's ca.crt updated) is trusted for the connections made after. A file that cannot
    // be read, or whose certificates do not all parse (caught half written), leaves the CA in
    // hand until the next look.
    ca_read_ = now;
    absl::StatusOr<std::string> ca = ReadWholeFile(config_.certificate_authority_file);
    if (ca.ok() && *ca != tls_.ca_pem && IsCertificateBundle(*ca)) {
      tls_.ca_pem = *std::move(ca);
      changed = true;
    }
  }
  if (!config_.client_certificate_file.empty() && !config_.client_key_file.empty() &&
      now - certificate_read_ >= config_.client_certificate_refresh) {
    // The kubelet keeps its rotating certificate and key in one file: read once, it cannot be
    // caught half way through a rotation.
    absl::StatusOr<std::string> cert = ReadWholeFile(config_.client_certificate_file);
    absl::StatusOr<std::string> key = config_.client_key_file == config_.client_certificate_file
                                          ? cert
                                          : ReadWholeFile(config_.client_key_file);
    if (cert.ok() && key.ok() && !cert->empty() && !key->empty()) {
      if (*cert != tls_.cert_pem || *key != tls_.key_pem) {
        tls_.cert_pem = *std::move(cert);
        tls_.key_pem = *std::move(key);
        changed = true;
      }
      certificate_read_ = now;
    }
    // Otherwise (a rotation that replaces the files can leave them missing or empty for a
    // moment) the pair in hand is presented and the files read again at the next request.
  }
  // A server checks a client's certificate, and the client the server's, when a connection is
  // made: the connections made with the old material are closed rather than reused (client-go
  // closes them too).
  if (changed) ++tls_.generation;
  return tls_;
}

absl::StatusOr<HttpResponse> HttpTransport::Send(const HttpRequest& request,
                                                 const Cancellation* cancel) {
  return Perform(request, nullptr, cancel);
}

absl::StatusOr<HttpResponse> HttpTransport::Stream(
    const HttpRequest& request, const std::function<bool(std::string_view)>& on_data,
    const Cancellation* cancel) {
  return Perform(request, &on_data, cancel);
}

absl::StatusOr<HttpResponse> HttpTransport::Perform(
    const HttpRequest& request, const std::function<bool(std::string_view)>* on_data,
    const Cancellation* cancel) {
  // The request's timeout covers the wait for the exec plugin and the exchange together.
  absl::Duration timeout = request.timeout;
  const absl::Time deadline =
      timeout > absl::ZeroDuration() ? absl::Now() + timeout : absl::InfiniteFuture();
  std::shared_ptr<const ExecCredential> exec;
  if (exec_ != nullptr) {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::shared_ptr<const ExecCredential>> got =
        exec_->Get(cancel, timeout > absl::ZeroDuration() ? timeout : absl::InfiniteDuration());
    if (!got.ok()) return got.status();
    exec = *std::move(got);
    if (timeout > absl::ZeroDuration()) {
      timeout -= absl::Now() - start;
      if (timeout <= absl::ZeroDuration()) {
        return absl::DeadlineExceededError(absl::StrCat(
            request.method, " ", request.target, ": the exec plugin took the whole timeout"));
      }
    }
  }
  absl::StatusOr<std::string> authorization = Authorization(exec.get());
  if (!authorization.ok()) return authorization.status();
  std::string authorization_line;
  if (!authorization->empty()) {
    absl::StatusOr<std::string> line = HeaderLine("Authorization", *authorization);
    if (!line.ok()) return line.status();
    authorization_line = *std::move(line);
  }

  const TlsMaterial tls = CurrentTlsMaterial(exec.get());
  std::unique_ptr<Handle> handle = Borrow(tls.generation);
  if (handle->easy == nullptr || handle->multi == nullptr) {
    return absl::ResourceExhaustedError("cannot make a curl handle");
  }
  CURL* easy = handle->easy;
  // Reset keeps the handle's connections, DNS and TLS session caches: only options go.
  curl_.easy_reset(easy);

  const std::string url = url_base_ + request.target;
  Transfer transfer{.curl = &curl_, .easy = easy, .on_data = on_data, .body = {}, .stopped = false};
  char error_buffer[CURL_ERROR_SIZE] = {0};
  Slist headers(nullptr, SlistDeleter{&curl_});
  Append(headers, "Accept: application/json");
  if (!request.body.empty()) Append(headers, "Content-Type: application/json");
  if (!authorization_line.empty()) Append(headers, authorization_line);
  for (const std::string& line : impersonation_) Append(headers, line);
  if (!host_header_.empty()) Append(headers, host_header_);
  Slist connect_to(nullptr, SlistDeleter{&curl_});
  if (!connect_to_.empty()) Append(connect_to, connect_to_);

  curl_.easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_.easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method == "HEAD") curl_.easy_setopt(easy, CURLOPT_NOBODY, 1L);
  if (!request.body.empty()) {
    curl_.easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
    curl_.easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                      static_cast<curl_off_t>(request.body.size()));
  }
  curl_.easy_setopt(easy, CURLOPT_HTTPHEADER, headers.get());
  curl_.easy_setopt(easy, CURLOPT_USERAGENT, kUserAgent);
  curl_.easy_setopt(easy, CURLOPT_WRITEFUNCTION, OnWrite);
  curl_.easy_setopt(easy, CURLOPT_WRITEDATA, &transfer);
  curl_.easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer);
  curl_.easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  // HTTP/1.1, the protocol the tests' API server speaks: a libcurl built with nghttp2 would
  // otherwise offer HTTP/2 to a TLS server, a path nothing here exercises.
  curl_.easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  // As client-go: answers may come gzip'd (the API server compresses those of 128 KiB and
  // more), unless the kubeconfig's cluster disables compression; curl inflates them.
  if (!config_.disable_compression) curl_.easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "gzip");
  curl_.easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_.easy_setopt(easy, CURLOPT_TCP_KEEPIDLE, 30L);
  curl_.easy_setopt(easy, CURLOPT_TCP_KEEPINTVL, 30L);
  // Redirects are not followed: an API server does not send them, and following one would
  // hand the credentials to another host.
  curl_.easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
  const absl::Duration connect_timeout =
      timeout > absl::ZeroDuration() ? std::min(timeout, kConnectTimeout) : kConnectTimeout;
  curl_.easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                    static_cast<long>(absl::ToInt64Milliseconds(connect_timeout)));  // NOLINT
  curl_.easy_setopt(easy, CURLOPT_TIMEOUT_MS,
                    static_cast<long>(absl::ToInt64Milliseconds(timeout)));  // NOLINT
  if (connect_to != nullptr) curl_.easy_setopt(easy, CURLOPT_CONNECT_TO, connect_to.get());
  if (!proxy_.empty()) {
    curl_.easy_setopt(easy, CURLOPT_PROXY, proxy_.c_str());
    // Every host through it: the environment's no_proxy is not read, as client-go's
    // http.ProxyURL reads none.
    curl_.easy_setopt(easy, CURLOPT_NOPROXY, "");
  }

  // TLS: the cluster's CA only (not the system's as well) when the kubeconfig names one.
  curl_.easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, config_.insecure_skip_tls_verify ? 0L : 1L);
  curl_.easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, config_.insecure_skip_tls_verify ? 0L : 2L);
  curl_blob ca = Blob(tls.ca_pem);
  curl_blob cert = Blob(tls.cert_pem);
  curl_blob key = Blob(tls.key_pem);
  if (!tls.ca_pem.empty()) {
    curl_.easy_setopt(easy, CURLOPT_CAINFO, static_cast<char*>(nullptr));
    curl_.easy_setopt(easy, CURLOPT_CAPATH, static_cast<char*>(nullptr));
    curl_.easy_setopt(easy, CURLOPT_CAINFO_BLOB, &ca);
  }
  if (!tls.cert_pem.empty()) {
    curl_.easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    curl_.easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &cert);
    curl_.easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
    curl_.easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &key);
  }

  CURLcode result = CURLE_OK;
  bool cancelled = false;
  {
    Cancellation::Waker waker(cancel, [this, multi = handle->multi] { curl_.multi_wakeup(multi); });
    if (waker.too_late()) {
      GiveBack(std::move(handle));
      return absl::CancelledError(absl::StrCat(request.method, " ", url, ": cancelled"));
    }
    curl_.multi_add_handle(handle->multi, easy);
    bool done = false;
    while (!done) {
      int running = 0;
      if (curl_.multi_perform(handle->multi, &running) != CURLM_OK) {
        result = CURLE_FAILED_INIT;
        break;
      }
      int queued = 0;
      while (CURLMsg* message = curl_.multi_info_read(handle->multi, &queued)) {
        if (message->msg == CURLMSG_DONE) {
          result = message->data.result;
          done = true;
        }
      }
      if (done) break;
      if (cancel != nullptr && cancel->cancelled()) {
        cancelled = true;
        break;
      }
      curl_.multi_poll(handle->multi, nullptr, 0, kPollMillis, nullptr);
    }
    curl_.multi_remove_handle(handle->multi, easy);
  }

  HttpResponse response;
  long code = 0;  // NOLINT(google-runtime-int): curl's type
  curl_.easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
  response.code = static_cast<int>(code);
  curl_header* retry_after = nullptr;
  if (curl_.easy_header(easy, "Retry-After", 0, CURLH_HEADER, -1, &retry_after) == CURLHE_OK) {
    int seconds = 0;
    if (absl::SimpleAtoi(retry_after->value, &seconds) && seconds >= 0) {
      response.retry_after_seconds = seconds;
    }
  }
  curl_header* flow_schema = nullptr;
  if (curl_.easy_header(easy, "X-Kubernetes-PF-FlowSchema-UID", 0, CURLH_HEADER, -1,
                        &flow_schema) == CURLHE_OK) {
    response.flow_schema_uid = flow_schema->value;
  }
  // As client-go's exec round tripper: credentials the server refused are replaced before this
  // answer, which stays the caller's, is returned; a run that fails is only logged. A request
  // cancelled meanwhile leaves the run to the next one.
  if (response.code == 401 && exec != nullptr && !cancelled &&
      (cancel == nullptr || !cancel->cancelled())) {
    const absl::Status refreshed =
        exec_->Refresh(exec.get(), cancel, std::max(deadline - absl::Now(), absl::ZeroDuration()));
    if (absl::IsCancelled(refreshed) || absl::IsDeadlineExceeded(refreshed)) {
      // The run goes on, for the next request; client-go puts no bound on it to log.
      DEVMGR_LOG(logger_, debug, "Refreshing credentials goes on after the request", "err",
                 refreshed.message());
    } else if (!refreshed.ok()) {
      DEVMGR_LOG(logger_, err, "refreshing credentials", "err", refreshed.message());
    }
  }
  if (cancelled) {
    // A cancelled transfer leaves its connection half-used: the handle and its connections
    // are closed rather than reused.
    return absl::CancelledError(absl::StrCat(request.method, " ", url, ": cancelled"));
  }
  GiveBack(std::move(handle));
  if (result == CURLE_SSL_CERTPROBLEM) {
    // A pair curl cannot use (a key read before its certificate's rotation ended) is read
    // again at the next request, not at the next refresh.
    absl::MutexLock lock(&tls_mu_);
    certificate_read_ = absl::InfinitePast();
  }
  const bool stream_began = on_data != nullptr && response.code >= 200 && response.code < 300;
  if (result != CURLE_OK && !(result == CURLE_WRITE_ERROR && transfer.stopped) &&
      !(result == CURLE_OPERATION_TIMEDOUT && stream_began)) {
    return TransportError(curl_, result, error_buffer, url, request);
  }
  response.body = std::move(transfer.body);
  return response;
}

}  // namespace devmgr::kubeclient
