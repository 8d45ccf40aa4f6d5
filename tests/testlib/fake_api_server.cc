#include "tests/testlib/fake_api_server.h"

#include <sys/socket.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace devmgr::testing {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Json = nlohmann::json;
using SslStream = ssl::stream<tcp::socket>;

constexpr char kGroup[] = "resource.k8s.io";
// A v1 ExactDeviceRequest's fields, which a v1beta1 request keeps at its own level.
constexpr const char* kExactFields[] = {"deviceClassName", "selectors",   "allocationMode", "count",
                                        "adminAccess",     "tolerations", "capacity"};

std::string RandomSuffix(std::mt19937& random, size_t length) {
  static constexpr char kChars[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (size_t i = 0; i < length; ++i) out += kChars[random() % (sizeof(kChars) - 1)];
  return out;
}

std::string Uid(std::mt19937& random) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) out += '-';
    out += kHex[random() % 16];
  }
  return out;
}

std::string PercentDecode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 2 < in.size()) {
      int value = 0;
      if (absl::SimpleHexAtoi(std::string(in.substr(i + 1, 2)), &value)) {
        out += static_cast<char>(value);
        i += 2;
        continue;
      }
    }
    out += in[i] == '+' ? ' ' : in[i];
  }
  return out;
}

Json StatusBody(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", Json::object()},
          {"status", "Failure"}, {"message", message}, {"reason", reason},
          {"code", code}};
}

// The shape of objects in the versions the fake serves: only v1beta1 differs from v1.
Json SliceForVersion(Json slice, const std::string& version) {
  if (version == "v1beta1" && slice.contains("spec") && slice["spec"].contains("devices")) {
    for (Json& device : slice["spec"]["devices"]) {
      Json basic = Json::object();
      for (auto it = device.begin(); it != device.end();) {
        if (it.key() != "name") {
          basic[it.key()] = it.value();
          it = device.erase(it);
        } else {
          ++it;
        }
      }
      device["basic"] = basic;
    }
  }
  slice["apiVersion"] = absl::StrCat(kGroup, "/", version);
  return slice;
}

Json SliceFromVersion(Json slice, const std::string& version) {
  if (version == "v1beta1" && slice.contains("spec") && slice["spec"].contains("devices")) {
    for (Json& device : slice["spec"]["devices"]) {
      if (!device.contains("basic")) continue;
      Json basic = device["basic"];
      device.erase("basic");
      for (auto& [key, value] : basic.items()) device[key] = value;
    }
  }
  slice["apiVersion"] = absl::StrCat(kGroup, "/v1");
  return slice;
}

Json ClaimForVersion(Json claim, const std::string& version) {
  if (version == "v1beta1" && claim.contains("spec") && claim["spec"].contains("devices") &&
      claim["spec"]["devices"].contains("requests")) {
    for (Json& request : claim["spec"]["devices"]["requests"]) {
      if (!request.contains("exactly")) continue;
      Json exactly = request["exactly"];
      request.erase("exactly");
      for (const char* field : kExactFields) {
        if (exactly.contains(field)) request[field] = exactly[field];
      }
    }
  }
  claim["apiVersion"] = absl::StrCat(kGroup, "/", version);
  return claim;
}

std::string Field(const Json& object, const char* a, const char* b) {
  if (!object.contains(a) || !object[a].is_object() || !object[a].contains(b) ||
      !object[a][b].is_string()) {
    return "";
  }
  return object[a][b].get<std::string>();
}

// Selector: the terms of a field selector ("spec.driver=x,spec.nodeName=").
using Selector = std::vector<std::pair<std::string, std::string>>;

Selector ParseSelector(const std::string& text) {
  Selector out;
  for (absl::string_view term : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(term, absl::MaxSplits('=', 1));
    if (!kv.second.empty() && kv.second[0] == '=') kv.second.erase(0, 1);  // "=="
    out.push_back(kv);
  }
  return out;
}

bool Matches(const Json& slice, const Selector& selector) {
  for (const auto& [field, value] : selector) {
    std::string actual;
    if (field == "spec.driver") actual = Field(slice, "spec", "driver");
    if (field == "spec.nodeName") actual = Field(slice, "spec", "nodeName");
    if (field == "metadata.name") actual = Field(slice, "metadata", "name");
    if (actual != value) return false;
  }
  return true;
}

struct Response {
  int code = 200;
  std::string body;
  int retry_after = -1;
  std::string flow_schema_uid;
};

Response JsonResponse(int code, const Json& body) { return {code, body.dump(), -1, ""}; }

// The size from which the API server compresses an answer for a client that takes gzip.
constexpr size_t kCompressFrom = 128 * 1024;

// Gzip: `data` in the gzip format, as the API server's compression writes it.
std::string Gzip(const std::string& data) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    std::abort();
  }
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  if (deflate(&stream, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// A list's continue token: where the next page starts, and the version the list was read at.
std::string ContinueToken(int64_t resource_version, const std::string& last_name) {
  return absl::Base64Escape(absl::StrCat(resource_version, "/", last_name));
}
Response Error(int code, const std::string& reason, const std::string& message) {
  return JsonResponse(code, StatusBody(code, reason, message));
}

struct Event {
  std::string type;
  Json object;  // v1 shape
  int64_t rv = 0;
};

}  // namespace

class FakeApiServer::Impl {
 public:
  explicit Impl(FakeApiServerOptions options)
      : options_(std::move(options)), pki_(MakeTestPki()), ssl_(ssl::context::tls_server) {
    ssl_.use_certificate_chain(asio::buffer(pki_.server_cert_pem));
    ssl_.use_private_key(asio::buffer(pki_.server_key_pem), ssl::context::pem);
    if (options_.require_client_certificate) {
      ssl_.add_certificate_authority(asio::buffer(pki_.ca_pem));
      ssl_.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    }
    SSL_CTX_set_alpn_select_cb(ssl_.native_handle(), &Impl::SelectAlpn, this);
    acceptor_.open(tcp::v4());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    Accept();
    io_thread_ = std::thread([this] { io_.run(); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      hang_ = false;
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    }
    changed_.notify_all();
    asio::post(io_, [this] { acceptor_.close(); });
    io_.stop();
    io_thread_.join();
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(connections_);
    }
    for (std::thread& thread : threads) thread.join();
  }

  std::string url() const { return absl::StrCat("https://127.0.0.1:", port_); }
  const TestPki& pki() const { return pki_; }
  const FakeApiServerOptions& options() const { return options_; }

  Json AddSlice(Json slice) {
    std::lock_guard<std::mutex> lock(mu_);
    slice = SliceFromVersion(std::move(slice), "v1");
    slice["kind"] = "ResourceSlice";
    Json& meta = slice["metadata"];
    if (!meta.contains("name") || meta["name"].get<std::string>().empty()) {
      meta["name"] = absl::StrCat(meta.value("generateName", ""), RandomSuffix(random_, 5));
    }
    if (!meta.contains("uid")) meta["uid"] = Uid(random_);
    meta["resourceVersion"] = absl::StrCat(++rv_);
    slices_[meta["name"].get<std::string>()] = slice;
    RecordLocked("ADDED", slice);
    return slice;
  }

  std::vector<Json> Slices() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Json> out;
    for (const auto& [name, slice] : slices_) out.push_back(slice);
    return out;
  }

  bool RemoveSlice(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slices_.find(name);
    if (it == slices_.end()) return false;
    Json gone = it->second;
    slices_.erase(it);
    gone["metadata"]["resourceVersion"] = absl::StrCat(++rv_);
    RecordLocked("DELETED", gone);
    return true;
  }

  void AddClaim(Json claim) {
    std::lock_guard<std::mutex> lock(mu_);
    Json& meta = claim["metadata"];
    if (!meta.contains("uid")) meta["uid"] = Uid(random_);
    meta["resourceVersion"] = absl::StrCat(++rv_);
    claims_[{meta.value("namespace", "default"), meta.value("name", "")}] = claim;
  }

  void AddNode(const std::string& name, const std::string& uid) {
    std::lock_guard<std::mutex> lock(mu_);
    nodes_[name] = {{"kind", "Node"},
                    {"apiVersion", "v1"},
                    {"metadata", {{"name", name}, {"uid", uid}, {"resourceVersion", "1"}}}};
  }

  std::vector<FakeRequest> Requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  void ClearRequests() {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.clear();
  }

  void SetHang(bool hang) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hang_ = hang;
    }
    changed_.notify_all();
  }
  void FailNext(FakeFailure failure) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.push_back(std::move(failure));
  }
  void SetConflictOnEveryUpdate(bool conflict) {
    std::lock_guard<std::mutex> lock(mu_);
    conflict_on_update_ = conflict;
  }
  void Compact() {
    std::lock_guard<std::mutex> lock(mu_);
    history_.clear();
    compacted_rv_ = rv_;
  }
  void CutWatches() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++cuts_;
    }
    changed_.notify_all();
  }
  void Bookmark() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++bookmarks_;
    }
    changed_.notify_all();
  }
  void EndWatchesAtOnce(bool end) {
    std::lock_guard<std::mutex> lock(mu_);
    end_watches_at_once_ = end;
  }
  void KeepWatchesPastTheirTimeout(bool keep) {
    std::lock_guard<std::mutex> lock(mu_);
    keep_watches_open_ = keep;
  }
  void JoinWatchEvents(bool join) {
    std::lock_guard<std::mutex> lock(mu_);
    join_watch_events_ = join;
  }

  void HoldWatches(bool hold) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hold_watches_ = hold;
    }
    changed_.notify_all();
  }
  int open_watches() const { return open_watches_.load(); }
  int http2_offers() const { return http2_offers_.load(); }
  int gzipped_answers() const { return gzipped_answers_.load(); }

  // The server speaks HTTP/1.1 only: it counts the handshakes whose client offered h2 and
  // takes http/1.1 when offered (no protocol otherwise).
  static int SelectAlpn(SSL* /*ssl*/, const unsigned char** out, unsigned char* out_length,
                        const unsigned char* in, unsigned int in_length, void* arg) {
    Impl* self = static_cast<Impl*>(arg);
    bool http11 = false;
    for (unsigned int at = 0; at < in_length; at += 1u + in[at]) {
      const std::string_view protocol(reinterpret_cast<const char*>(in + at + 1),
                                      std::min<unsigned int>(in[at], in_length - at - 1));
      if (protocol == "h2") ++self->http2_offers_;
      if (protocol == "http/1.1") {
        http11 = true;
        *out = in + at + 1;
        *out_length = in[at];
      }
    }
    return http11 ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_NOACK;
  }
  std::string resource_version() const {
    std::lock_guard<std::mutex> lock(mu_);
    return absl::StrCat(rv_);
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](beast::error_code error, tcp::socket socket) {
      if (error) return;  // closed
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      open_fds_.insert(socket.native_handle());
      connections_.emplace_back([this, s = std::make_shared<tcp::socket>(
                                           std::move(socket))]() mutable { Serve(std::move(*s)); });
      Accept();
    });
  }

  void Serve(tcp::socket socket) {
    const int fd = socket.native_handle();
    // As an API server's: without it, a response written in two pieces waits for the client's
    // delayed ACK (40 ms).
    beast::error_code ignored_option;
    socket.set_option(tcp::no_delay(true), ignored_option);
    SslStream stream(std::move(socket), ssl_);
    beast::error_code error;
    stream.handshake(ssl::stream_base::server, error);
    beast::flat_buffer buffer;
    while (!error) {
      http::request<http::string_body> request;
      http::read(stream, buffer, request, error);
      if (error) break;
      if (!Handle(stream, request)) break;
      if (!request.keep_alive()) break;
    }
    beast::error_code ignored;
    stream.lowest_layer().shutdown(tcp::socket::shutdown_both, ignored);
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.erase(fd);
  }

  // Handle answers one request; false when the connection must close.
  bool Handle(SslStream& stream, const http::request<http::string_body>& request) {
    const std::string method(request.method_string());
    const std::string target(request.target());
    std::unique_lock<std::mutex> lock(mu_);
    FakeRequest taken{method, target, request.body(), std::string(request[http::field::host]), {}};
    for (const auto& field : request) {
      taken.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    requests_.push_back(std::move(taken));
    changed_.wait(lock, [&] { return !hang_ || stopping_; });
    if (stopping_) return false;

    std::optional<Response> answer;
    if (!options_.token.empty() &&
        std::string(request[http::field::authorization]) != "Bearer " + options_.token) {
      answer = Error(401, "Unauthorized", "Unauthorized");
    }
    if (!answer) {
      for (auto it = failures_.begin(); it != failures_.end(); ++it) {
        if (!it->method.empty() && it->method != method) continue;
        if (target.rfind(it->target_prefix, 0) != 0) continue;
        if (it->close_without_answer) {
          if (--it->times <= 0) failures_.erase(it);
          return false;
        }
        std::string body = it->body;
        if (body.empty()) {
          body = it->garbage ? "<html>not json {"
                             : StatusBody(it->code, it->reason, "injected failure").dump();
        }
        answer = Response{it->code, std::move(body), it->retry_after_seconds, it->flow_schema_uid};
        if (--it->times <= 0) failures_.erase(it);
        break;
      }
    }
    const auto query_start = target.find('?');
    const std::string path = target.substr(0, query_start);
    std::map<std::string, std::string> query;
    if (query_start != std::string::npos) {
      for (absl::string_view pair :
           absl::StrSplit(target.substr(query_start + 1), '&', absl::SkipEmpty())) {
        std::pair<std::string, std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
        query[PercentDecode(kv.first)] = PercentDecode(kv.second);
      }
    }
    std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
    for (std::string& part : parts) part = PercentDecode(part);
    if (!answer && parts.size() >= 3 && parts[0] == "apis" && parts[1] == kGroup &&
        std::find(options_.resource_versions.begin(), options_.resource_versions.end(), parts[2]) ==
            options_.resource_versions.end()) {
      answer = Error(404, "NotFound", "the server could not find the requested resource");
    }
    if (!answer && method == "GET" && query["watch"] == "true" && parts.size() == 4 &&
        parts[3] == "resourceslices") {
      lock.unlock();
      Watch(stream, parts[2], query);
      return false;
    }
    if (!answer) answer = Route(method, parts, query, request.body());
    lock.unlock();

    http::response<http::string_body> response(static_cast<http::status>(answer->code),
                                               request.version());
    response.set(http::field::content_type, "application/json");
    if (answer->retry_after >= 0) {
      response.set(http::field::retry_after, std::to_string(answer->retry_after));
    }
    if (!answer->flow_schema_uid.empty()) {
      response.set("X-Kubernetes-PF-FlowSchema-UID", answer->flow_schema_uid);
    }
    response.keep_alive(request.keep_alive());
    if (answer->body.size() >= kCompressFrom &&
        absl::StrContains(std::string(request[http::field::accept_encoding]), "gzip")) {
      answer->body = Gzip(answer->body);
      response.set(http::field::content_encoding, "gzip");
      ++gzipped_answers_;
    }
    response.body() = std::move(answer->body);
    response.prepare_payload();
    beast::error_code error;
    http::write(stream, response, error);
    return !error;
  }

  Response Route(const std::string& method, const std::vector<std::string>& parts,
                 std::map<std::string, std::string>& query, const std::string& body) {
    if (parts.size() == 4 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "nodes" &&
        method == "GET") {
      auto it = nodes_.find(parts[3]);
      if (it == nodes_.end()) {
        return Error(404, "NotFound", absl::StrCat("nodes \"", parts[3], "\" not found"));
      }
      return JsonResponse(200, it->second);
    }
    if (parts.size() < 4 || parts[0] != "apis" || parts[1] != kGroup) {
      return Error(404, "NotFound", "the server could not find the requested resource");
    }
    const std::string& version = parts[2];
    if (parts.size() == 7 && parts[3] == "namespaces" && parts[5] == "resourceclaims" &&
        method == "GET") {
      auto it = claims_.find({parts[4], parts[6]});
      if (it == claims_.end()) {
        return Error(404, "NotFound",
                     absl::StrCat("resourceclaims.resource.k8s.io \"", parts[6], "\" not found"));
      }
      return JsonResponse(200, ClaimForVersion(it->second, version));
    }
    if (parts[3] != "resourceslices" || parts.size() > 5) {
      return Error(404, "NotFound", "the server could not find the requested resource");
    }
    const Selector selector = ParseSelector(query["fieldSelector"]);
    if (parts.size() == 4 && method == "GET") {
      // Pages: `limit` items at most, and a continue token when more are left, which the next
      // request gives without a resourceVersion; a token older than the history is Expired.
      int64_t limit = 0;
      static_cast<void>(absl::SimpleAtoi(query["limit"], &limit));
      int64_t list_rv = rv_;
      std::string after;
      if (const std::string& token = query["continue"]; !token.empty()) {
        if (!query["resourceVersion"].empty()) {
          return Error(400, "BadRequest",
                       "specifying resource version is not allowed when using continue");
        }
        std::string decoded;
        std::pair<std::string, std::string> rv_and_name;
        if (absl::Base64Unescape(token, &decoded)) {
          rv_and_name = absl::StrSplit(decoded, absl::MaxSplits('/', 1));
        }
        if (!absl::SimpleAtoi(rv_and_name.first, &list_rv)) {
          return Error(400, "BadRequest", "continue key is not valid");
        }
        if (list_rv < compacted_rv_) {
          return Error(410, "Expired",
                       "The provided continue parameter is too old: start a new list");
        }
        after = rv_and_name.second;
      }
      Json items = Json::array();
      Json metadata = {{"resourceVersion", absl::StrCat(list_rv)}};
      for (auto it = slices_.upper_bound(after); it != slices_.end(); ++it) {
        if (!Matches(it->second, selector)) continue;
        if (limit > 0 && static_cast<int64_t>(items.size()) == limit) {
          metadata["continue"] = ContinueToken(list_rv, items.back()["metadata"]["name"]);
          break;
        }
        Json item = SliceForVersion(it->second, version);
        item.erase("kind");
        item.erase("apiVersion");
        items.push_back(std::move(item));
      }
      return JsonResponse(200, {{"kind", "ResourceSliceList"},
                                {"apiVersion", absl::StrCat(kGroup, "/", version)},
                                {"metadata", std::move(metadata)},
                                {"items", std::move(items)}});
    }
    if (parts.size() == 4 && method == "DELETE") {
      Json items = Json::array();
      for (auto it = slices_.begin(); it != slices_.end();) {
        if (!Matches(it->second, selector)) {
          ++it;
          continue;
        }
        Json gone = it->second;
        gone["metadata"]["resourceVersion"] = absl::StrCat(++rv_);
        RecordLocked("DELETED", gone);
        items.push_back(SliceForVersion(gone, version));
        it = slices_.erase(it);
      }
      return JsonResponse(200, {{"kind", "ResourceSliceList"},
                                {"apiVersion", absl::StrCat(kGroup, "/", version)},
                                {"metadata", {{"resourceVersion", absl::StrCat(rv_)}}},
                                {"items", std::move(items)}});
    }
    if (parts.size() == 4 && method == "POST") return Create(body, version);
    if (parts.size() != 5) return Error(405, "MethodNotAllowed", "method not allowed");
    const std::string& name = parts[4];
    auto it = slices_.find(name);
    const std::string not_found =
        absl::StrCat("resourceslices.resource.k8s.io \"", name, "\" not found");
    if (method == "GET") {
      if (it == slices_.end()) return Error(404, "NotFound", not_found);
      return JsonResponse(200, SliceForVersion(it->second, version));
    }
    if (method == "PUT") return Update(name, body, version);
    if (method == "DELETE") {
      if (it == slices_.end()) return Error(404, "NotFound", not_found);
      Json options = Json::parse(body, nullptr, false);
      if (!options.is_discarded() && options.contains("preconditions")) {
        const Json& pre = options["preconditions"];
        const std::string uid = Field(it->second, "metadata", "uid");
        const std::string rv = Field(it->second, "metadata", "resourceVersion");
        if (pre.contains("uid") && pre["uid"].get<std::string>() != uid) {
          return Error(409, "Conflict",
                       absl::StrCat("Precondition failed: UID in precondition: ",
                                    pre["uid"].get<std::string>(), ", UID in object meta: ", uid));
        }
        if (pre.contains("resourceVersion") && pre["resourceVersion"].get<std::string>() != rv) {
          return Error(409, "Conflict",
                       absl::StrCat("Precondition failed: ResourceVersion in precondition: ",
                                    pre["resourceVersion"].get<std::string>(),
                                    ", ResourceVersion in object meta: ", rv));
        }
      }
      Json gone = it->second;
      slices_.erase(it);
      gone["metadata"]["resourceVersion"] = absl::StrCat(++rv_);
      RecordLocked("DELETED", gone);
      return JsonResponse(200, SliceForVersion(gone, version));
    }
    return Error(405, "MethodNotAllowed", "method not allowed");
  }

  // Admit: what the server does to a slice on every write (drops fields of disabled features,
  // sets a taint's timeAdded); an error for an object it refuses.
  std::optional<Response> Admit(Json& slice) {
    if (!slice.is_object() || slice.value("kind", "ResourceSlice") != "ResourceSlice") {
      return Error(400, "BadRequest", "the object is not a ResourceSlice");
    }
    if (Field(slice, "spec", "driver").empty()) {
      return Error(422, "Invalid", "ResourceSlice is invalid: spec.driver: Required value");
    }
    if (slice["spec"].contains("devices")) {
      for (Json& device : slice["spec"]["devices"]) {
        for (const std::string& field : options_.dropped_device_fields) device.erase(field);
        if (!device.contains("taints")) continue;
        for (Json& taint : device["taints"]) {
          if (!taint.contains("timeAdded")) {
            taint["timeAdded"] =
                absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
          }
        }
      }
    }
    slice["kind"] = "ResourceSlice";
    return std::nullopt;
  }

  Response Create(const std::string& body, const std::string& version) {
    Json slice = Json::parse(body, nullptr, false);
    if (slice.is_discarded()) return Error(400, "BadRequest", "the body is not JSON");
    slice = SliceFromVersion(std::move(slice), version);
    if (std::optional<Response> refused = Admit(slice)) return *refused;
    Json& meta = slice["metadata"];
    std::string name = meta.value("name", "");
    if (name.empty()) {
      const std::string generate = meta.value("generateName", "");
      if (generate.empty()) {
        return Error(422, "Invalid",
                     "ResourceSlice is invalid: metadata.name: Required value: name or "
                     "generateName is required");
      }
      name = absl::StrCat(generate, RandomSuffix(random_, 5));
    }
    if (slices_.contains(name)) {
      return Error(409, "AlreadyExists",
                   absl::StrCat("resourceslices.resource.k8s.io \"", name, "\" already exists"));
    }
    meta["name"] = name;
    meta["uid"] = Uid(random_);
    meta["resourceVersion"] = absl::StrCat(++rv_);
    meta["creationTimestamp"] =
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
    slices_[name] = slice;
    RecordLocked("ADDED", slice);
    return JsonResponse(201, SliceForVersion(slice, version));
  }

  Response Update(const std::string& name, const std::string& body, const std::string& version) {
    auto it = slices_.find(name);
    if (it == slices_.end()) {
      return Error(404, "NotFound",
                   absl::StrCat("resourceslices.resource.k8s.io \"", name, "\" not found"));
    }
    Json slice = Json::parse(body, nullptr, false);
    if (slice.is_discarded()) return Error(400, "BadRequest", "the body is not JSON");
    slice = SliceFromVersion(std::move(slice), version);
    if (std::optional<Response> refused = Admit(slice)) return *refused;
    if (Field(slice, "metadata", "name") != name) {
      return Error(400, "BadRequest", "the name of the object does not match the name in the URL");
    }
    const std::string rv = Field(slice, "metadata", "resourceVersion");
    if (rv.empty()) {
      return Error(422, "Invalid",
                   "ResourceSlice is invalid: metadata.resourceVersion: Invalid value: 0x0: must "
                   "be specified for an update");
    }
    if (conflict_on_update_ || rv != Field(it->second, "metadata", "resourceVersion")) {
      return Error(409, "Conflict",
                   absl::StrCat("Operation cannot be fulfilled on resourceslices.resource.k8s.io "
                                "\"",
                                name,
                                "\": the object has been modified; please apply your changes to "
                                "the latest version and try again"));
    }
    Json& meta = slice["metadata"];
    meta["uid"] = it->second["metadata"]["uid"];
    if (it->second["metadata"].contains("creationTimestamp")) {
      meta["creationTimestamp"] = it->second["metadata"]["creationTimestamp"];
    }
    meta["resourceVersion"] = absl::StrCat(++rv_);
    it->second = slice;
    RecordLocked("MODIFIED", slice);
    return JsonResponse(200, SliceForVersion(slice, version));
  }

  void RecordLocked(const std::string& type, const Json& object) {
    history_.push_back({type, object, rv_});
    changed_.notify_all();
  }

  // Watch streams events of slices after the query's resourceVersion (all slices as ADDED when
  // it has none), bookmarks when asked, until the timeout, a cut or the end.
  void Watch(SslStream& stream, const std::string& version,
             std::map<std::string, std::string>& query) {
    const Selector selector = ParseSelector(query["fieldSelector"]);
    const bool bookmarks = query["allowWatchBookmarks"] == "true";
    int64_t timeout_seconds = 0;
    static_cast<void>(absl::SimpleAtoi(query["timeoutSeconds"], &timeout_seconds));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (keep_watches_open_) timeout_seconds = 0;
    }
    const auto deadline = timeout_seconds > 0 ? std::chrono::steady_clock::now() +
                                                    std::chrono::seconds(timeout_seconds)
                                              : std::chrono::steady_clock::time_point::max();

    http::response<http::empty_body> header(http::status::ok, 11);
    header.set(http::field::content_type, "application/json");
    header.chunked(true);
    http::response_serializer<http::empty_body> serializer(header);
    beast::error_code error;
    http::write_header(stream, serializer, error);
    if (error) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (end_watches_at_once_) {
        asio::write(stream, http::make_chunk_last(), error);
        return;
      }
    }
    ++open_watches_;
    bool join = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      join = join_watch_events_;
    }
    bool first = true;
    const auto send = [&](const Json& event) {
      const std::string line = join ? (first ? "" : "\n") + event.dump() : event.dump() + "\n";
      first = false;
      asio::write(stream, http::make_chunk(asio::buffer(line)), error);
      return !error;
    };

    std::unique_lock<std::mutex> lock(mu_);
    int64_t from = 0;
    std::vector<Json> pending;
    if (query["resourceVersion"].empty() || query["resourceVersion"] == "0") {
      for (const auto& [name, slice] : slices_) {
        if (Matches(slice, selector)) {
          pending.push_back({{"type", "ADDED"}, {"object", SliceForVersion(slice, version)}});
        }
      }
      from = rv_;
    } else if (!absl::SimpleAtoi(query["resourceVersion"], &from) || from < compacted_rv_) {
      lock.unlock();
      send({{"type", "ERROR"},
            {"object",
             StatusBody(410, "Expired",
                        absl::StrCat("too old resource version: ", query["resourceVersion"], " (",
                                     compacted_rv_, ")"))}});
      asio::write(stream, http::make_chunk_last(), error);
      --open_watches_;
      return;
    }
    uint64_t cuts = cuts_;
    uint64_t bookmarks_seen = bookmarks_;
    bool cut = false;
    while (true) {
      for (const Event& event : history_) {
        if (hold_watches_) break;
        if (event.rv > from && Matches(event.object, selector)) {
          pending.push_back(
              {{"type", event.type}, {"object", SliceForVersion(event.object, version)}});
        }
      }
      if (!history_.empty() && !hold_watches_) from = std::max(from, history_.back().rv);
      if (bookmarks && bookmarks_ != bookmarks_seen) {
        pending.push_back({{"type", "BOOKMARK"},
                           {"object",
                            {{"kind", "ResourceSlice"},
                             {"apiVersion", absl::StrCat(kGroup, "/", version)},
                             {"metadata", {{"resourceVersion", absl::StrCat(from)}}}}}});
      }
      bookmarks_seen = bookmarks_;
      cut = cuts_ != cuts;
      const bool done = stopping_ || std::chrono::steady_clock::now() >= deadline;
      lock.unlock();
      for (const Json& event : pending) {
        if (!send(event)) break;
      }
      pending.clear();
      if (error || done || cut) break;
      lock.lock();
      changed_.wait_until(lock, deadline, [&] {
        return stopping_ || cuts_ != cuts || (bookmarks && bookmarks_ != bookmarks_seen) ||
               (!hold_watches_ && !history_.empty() && history_.back().rv > from);
      });
    }
    if (cut && !error) {
      // Half an event, then the connection goes: what a dying server or proxy leaves.
      const std::string half = R"({"type":"MODIFIED","object":{"kind":"Resou)";
      asio::write(stream, http::make_chunk(asio::buffer(half)), error);
    } else if (!error) {
      asio::write(stream, http::make_chunk_last(), error);
    }
    --open_watches_;
  }

  const FakeApiServerOptions options_;
  const TestPki pki_;
  ssl::context ssl_;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  unsigned short port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::set<int> open_fds_;
  std::vector<std::thread> connections_;
  std::mt19937 random_{std::random_device{}()};
  int64_t rv_ = 100;
  int64_t compacted_rv_ = 0;
  std::map<std::string, Json> slices_;
  std::map<std::pair<std::string, std::string>, Json> claims_;
  std::map<std::string, Json> nodes_;
  std::deque<Event> history_;
  std::vector<FakeRequest> requests_;
  std::deque<FakeFailure> failures_;
  bool hang_ = false;
  bool hold_watches_ = false;
  bool end_watches_at_once_ = false;
  bool keep_watches_open_ = false;
  bool join_watch_events_ = false;
  bool conflict_on_update_ = false;
  uint64_t cuts_ = 0;
  uint64_t bookmarks_ = 0;
  std::atomic<int> open_watches_{0};
  std::atomic<int> http2_offers_{0};
  std::atomic<int> gzipped_answers_{0};
  // Last: it runs the acceptor, which uses everything above.
  std::thread io_thread_;
};

FakeApiServer::FakeApiServer(FakeApiServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
FakeApiServer::~FakeApiServer() = default;

std::string FakeApiServer::url() const { return impl_->url(); }
const TestPki& FakeApiServer::pki() const { return impl_->pki(); }

kubeclient::RestConfig FakeApiServer::Config() const {
  kubeclient::RestConfig config;
  config.server = url();
  config.certificate_authority_pem = pki().ca_pem;
  config.bearer_token = impl_->options().token;
  if (impl_->options().require_client_certificate) {
    config.client_certificate_pem = pki().client_cert_pem;
    config.client_key_pem = pki().client_key_pem;
  }
  return config;
}

void FakeApiServer::WriteKubeconfig(const std::filesystem::path& path) const {
  const kubeclient::RestConfig config = Config();
  std::string user = "    user: {}\n";
  if (!config.bearer_token.empty()) {
    user = absl::StrCat("    user:\n      token: ", config.bearer_token, "\n");
  } else if (!config.client_certificate_pem.empty()) {
    user =
        absl::StrCat("    user:\n      client-certificate-data: ",
                     absl::Base64Escape(config.client_certificate_pem),
                     "\n      client-key-data: ", absl::Base64Escape(config.client_key_pem), "\n");
  }
  std::ofstream(path) << absl::StrCat(
      "apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n  - name: fake\n",
      "    cluster:\n      server: ", config.server,
      "\n      certificate-authority-data: ", absl::Base64Escape(config.certificate_authority_pem),
      "\n", "contexts:\n  - name: fake\n    context: {cluster: fake, user: fake}\nusers:\n",
      "  - name: fake\n", user);
}

nlohmann::json FakeApiServer::AddSlice(nlohmann::json slice) {
  return impl_->AddSlice(std::move(slice));
}
std::vector<nlohmann::json> FakeApiServer::Slices() const { return impl_->Slices(); }
bool FakeApiServer::RemoveSlice(const std::string& name) { return impl_->RemoveSlice(name); }
void FakeApiServer::AddClaim(nlohmann::json claim) { impl_->AddClaim(std::move(claim)); }
void FakeApiServer::AddNode(const std::string& name, const std::string& uid) {
  impl_->AddNode(name, uid);
}
std::vector<FakeRequest> FakeApiServer::Requests() const { return impl_->Requests(); }
void FakeApiServer::ClearRequests() { impl_->ClearRequests(); }
int FakeApiServer::CountRequests(const std::string& method, const std::string& path_prefix) const {
  int count = 0;
  for (const FakeRequest& request : impl_->Requests()) {
    if (request.method == method && request.target.rfind(path_prefix, 0) == 0) ++count;
  }
  return count;
}
void FakeApiServer::SetHang(bool hang) { impl_->SetHang(hang); }
void FakeApiServer::FailNext(FakeFailure failure) { impl_->FailNext(std::move(failure)); }
void FakeApiServer::SetConflictOnEveryUpdate(bool conflict) {
  impl_->SetConflictOnEveryUpdate(conflict);
}
void FakeApiServer::Compact() { impl_->Compact(); }
void FakeApiServer::CutWatches() { impl_->CutWatches(); }
void FakeApiServer::Bookmark() { impl_->Bookmark(); }
void FakeApiServer::HoldWatches(bool hold) { impl_->HoldWatches(hold); }
void FakeApiServer::EndWatchesAtOnce(bool end) { impl_->EndWatchesAtOnce(end); }
void FakeApiServer::KeepWatchesPastTheirTimeout(bool keep) {
  impl_->KeepWatchesPastTheirTimeout(keep);
}
void FakeApiServer::JoinWatchEvents(bool join) { impl_->JoinWatchEvents(join); }
int FakeApiServer::open_watches() const { return impl_->open_watches(); }

int FakeApiServer::gzipped_answers() const { return impl_->gzipped_answers(); }
int FakeApiServer::http2_offers() const { return impl_->http2_offers(); }
std::string FakeApiServer::resource_version() const { return impl_->resource_version(); }

}  // namespace devmgr::testing
