// FakeApiServer: a fake Kubernetes API server for tests, on HTTPS (Boost.Beast over Asio and
// OpenSSL, a different HTTP stack from the client's libcurl) with a certificate authority made
// for the run. It is a fake, not an API server: it implements only the calls devmgr makes
// (ResourceSlices: get, list, watch, create, update, delete, deletecollection; ResourceClaims:
// get; Nodes: get), with the API server's rules for them: one resourceVersion counter for every
// write, generateName, uid and resourceVersion preconditions, 409 on a stale update, field
// selectors (spec.driver, spec.nodeName, metadata.name), lists in pages (limit, continue),
// watches with bookmarks and a history that can be compacted (410, for continue tokens too),
// answers of 128 KiB and more gzip'd for a client that takes it, taints given a timeAdded,
// bearer tokens and client certificates,
// resource.k8s.io served in the versions the test chooses (v1beta1 in its own shape), and
// errors in the API's Status objects. Faults are injected on demand: hanging requests,
// failures with Retry-After, garbage bodies, connections closed without an answer, conflicts on
// every update, watches cut mid-event.
//
// Every request runs on a thread of its own connection. Thread-safety: every method may be
// called from any thread.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kubeclient/rest_config.h"
#include "nlohmann/json.hpp"
#include "tests/testlib/test_pki.h"

namespace devmgr::testing {

struct FakeApiServerOptions {
  // The resource.k8s.io versions served; the others answer 404.
  std::vector<std::string> resource_versions = {"v1", "v1beta2", "v1beta1"};
  // The bearer token every request must carry; empty: none is needed.
  std::string token;
  // Every client must present a certificate signed by the run's CA.
  bool require_client_certificate = false;
  // Device fields the server drops on write, as one with a feature gate off does ("taints").
  std::vector<std::string> dropped_device_fields;
};

// A request the server took, as it came.
struct FakeRequest {
  std::string method;
  // Path and query.
  std::string target;
  std::string body;
  // The Host header.
  std::string host;
  // Every header, as it came (name and value), in order.
  std::vector<std::pair<std::string, std::string>> headers;
};

// An answer to force on the next matching requests.
struct FakeFailure {
  // Only requests with this method; empty: any.
  std::string method;
  // Only requests whose path and query start with this; empty: any.
  std::string target_prefix;
  int code = 500;
  std::string reason = "InternalError";
  // Sent as Retry-After when >= 0.
  int retry_after_seconds = -1;
  // Sent as X-Kubernetes-PF-FlowSchema-UID when not empty (the flow schema of priority and
  // fairness that matched the request).
  std::string flow_schema_uid;
  // The body is not JSON at all.
  bool garbage = false;
  int times = 1;
  // Non-empty: the answer's body as is (any code, 200 included), instead of a Status.
  std::string body;
  // No answer: the connection closes at once, without TLS's close_notify (a server or proxy
  // that dies, an idle timeout that cuts the connection as the request arrives).
  bool close_without_answer = false;
};

class FakeApiServer {
 public:
  explicit FakeApiServer(FakeApiServerOptions options = {});
  // Ends every connection (watches included) and joins its threads.
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // https://127.0.0.1:PORT
  std::string url() const;
  const TestPki& pki() const;
  // A configuration that trusts the run's CA and carries the token (and, when
  // require_client_certificate is set, the client certificate).
  kubeclient::RestConfig Config() const;
  // WriteKubeconfig writes a kubeconfig for Config() (the CA inline, the token or the client
  // certificate inline) to `path`, as kubectl would read it.
  void WriteKubeconfig(const std::filesystem::path& path) const;

  // Objects, in v1's shape, put in and read out as another writer would. AddSlice fills in
  // uid and resourceVersion (and metadata.name from generateName) and returns the object stored.
  nlohmann::json AddSlice(nlohmann::json slice);
  std::vector<nlohmann::json> Slices() const;
  bool RemoveSlice(const std::string& name);
  void AddClaim(nlohmann::json claim);
  void AddNode(const std::string& name, const std::string& uid);

  std::vector<FakeRequest> Requests() const;
  void ClearRequests();
  // How many requests had this method and a path that starts with `path_prefix`.
  int CountRequests(const std::string& method, const std::string& path_prefix) const;

  // Every request waits (for ever, or until SetHang(false)) before it is answered.
  void SetHang(bool hang);
  void FailNext(FakeFailure failure);
  // Every update answers 409 Conflict.
  void SetConflictOnEveryUpdate(bool conflict);
  // Forgets the history: a watch from a resourceVersion before now gets 410 Expired.
  void Compact();
  // Ends every open watch in the middle of an event (half a line, then the connection closes).
  void CutWatches();
  // Sends a BOOKMARK to every open watch that allows them.
  void Bookmark();
  // While held, open watches send nothing (a slow watch cache); released, they catch up.
  void HoldWatches(bool hold);
  // While set, every watch is answered 200 and ended at once, with no event (a proxy that does
  // not pass watches through).
  void EndWatchesAtOnce(bool end);
  // While set, a watch that starts ignores its timeoutSeconds and stays open (a connection that
  // stalled, or a proxy that holds it).
  void KeepWatchesPastTheirTimeout(bool keep);
  // While set, a watch writes a newline before each event but the first instead of after each:
  // its last event, before the stream ends, has none (a server that joins events with newlines).
  void JoinWatchEvents(bool join);
  int open_watches() const;
  // How many TLS handshakes offered HTTP/2 (ALPN h2); the server takes HTTP/1.1 only.
  int http2_offers() const;
  // How many answers went gzip-compressed: as the API server, those of 128 KiB and more to a
  // client that takes gzip (Accept-Encoding).
  int gzipped_answers() const;
  // The newest resourceVersion.
  std::string resource_version() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace devmgr::testing
