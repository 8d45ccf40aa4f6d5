// Helper: what a DRA driver built on devmgr runs to serve the kubelet, upstream's
// k8s.io/dynamic-resource-allocation/kubeletplugin helper. The driver implements DriverPlugin;
// the helper serves DRAPlugin v1 and v1beta1 (and the driver's other services, such as
// DRAResourceHealth) on the service socket in the driver's folder, then registers through
// plugins_registry/ (rolling-update names when it is one of two pods), fetches each claim before
// the driver sees it (refusing, as upstream, the whole call when a claim cannot be read, is not
// allocated or was replaced), serialises the calls unless told not to (across both pods of a
// rolling update through serialize.lock), strips subrequest names from the answers, and
// publishes the driver's devices as ResourceSlices through the ResourceSlice controller, again
// each time the kubelet confirms the registration.
//
// Threading: the driver's calls run one at a time on the helper's worker thread (or at once on
// threads of the helper's, without serialisation), never on a gRPC thread, and may block for a
// bounded time. The claim lookups of each prepare run on a
// reader thread of their own (up to kClaimReaders at once), meanwhile: as upstream reads them
// in each call's goroutine, a lookup the API server is slow to answer holds up no other
// prepare's, and a lookup may run while the driver works on another call. Every public method
// is thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/event_loop.h"
#include "common/logging.h"
#include "common/operation_threads.h"
#include "common/placed_socket.h"
#include "common/stop_once.h"
#include "dra/claim.h"
#include "dra/v1/api.pb.h"
#include "kubeletplugin/call_lock.h"
#include "kubeletplugin/device.h"
#include "kubeletplugin/device_metadata.h"
#include "resourceslice/controller.h"

namespace devmgr {
class ConnectionAcceptor;
}  // namespace devmgr

namespace devmgr::kubeletplugin {

// ClaimLookup: ResourceClaim `name` in `namespace_name` as the cluster (or the node's daemon)
// has it; NotFound when there is none. Runs on the reader threads, up to kClaimReaders lookups
// at once, while the driver may be working on another call (so it must be thread-safe, with
// itself and with the driver's own state); may block for a bounded time.
using ClaimLookup = std::function<absl::StatusOr<dra::ResourceClaim>(
    const std::string& namespace_name, const std::string& name)>;

// A claim the kubelet names in NodeUnprepareResources (it may be gone from the cluster).
struct NamespacedObject {
  std::string namespace_name;
  std::string name;
  std::string uid;
};

// What became of one claim: its devices, or why it could not be prepared.
struct PrepareResult {
  std::vector<Device> devices;
  absl::Status error;
};

class DriverPlugin {
 public:
  virtual ~DriverPlugin() = default;
  // PrepareResourceClaims: each claim (fetched and checked by the helper) by UID, with its
  // devices or its own error. An error of the whole call fails the RPC ("prepare resource
  // claims: ...").
  virtual absl::StatusOr<std::map<std::string, PrepareResult>> PrepareResourceClaims(
      const std::vector<dra::ResourceClaim>& claims) = 0;
  // UnprepareResourceClaims: by UID, each claim's error (OK: done, or it was never prepared:
  // the kubelet repeats unprepare after a restart). The claims may be gone from the cluster.
  virtual absl::StatusOr<std::map<std::string, absl::Status>> UnprepareResourceClaims(
      const std::vector<NamespacedObject>& claims) = 0;
};

struct HelperOptions {
  // Required: a DNS subdomain of at most 63 characters, as the API wants a driver's name (it
  // names a folder and files; IsValidDriverName).
  std::string driver_name;
  // The kubelet's root folder: unless the folders below are given, sockets go to its
  // plugins/<driver>/ and plugins_registry/.
  std::filesystem::path kubelet_dir = "/var/lib/kubelet";
  // Where the kubelet looks for registration sockets (upstream's RegistrarDirectoryPath), for a
  // kubelet whose plugins_registry/ is elsewhere; empty: kubelet_dir/plugins_registry. The same
  // path inside the driver's container as on the host.
  std::filesystem::path registry_dir;
  // The driver's own folder, where its service socket goes and where both pods of a rolling
  // update meet (upstream's PluginDataDirectoryPath); empty: kubelet_dir/plugins/<driver>. No
  // other plugin may share it, and the kubelet dials the socket by this path.
  std::filesystem::path plugin_data_dir;
  // The registration socket's file name in registry_dir (upstream's RegistrarSocketFilename),
  // for a driver that takes over from one that registered under another name; empty: chosen as
  // upstream chooses it. Not with rolling_update_uid, whose name must be the chosen one.
  std::string registrar_socket_file;
  // Where a rolling update's serialize.lock is kept (upstream's FlockDirectoryPath), a folder
  // reserved for the driver; empty: plugin_data_dir.
  std::filesystem::path flock_dir;
  // The service socket's file name in plugin_data_dir (upstream's PluginSocket, for tests);
  // empty: "dra.sock", in a rolling update "dra-<uid>.sock".
  std::string plugin_socket;
  // Non-empty: this is the driver's pod with that UID in a rolling update (letters, digits and
  // '-'; IsValidPodUid).
  std::string rolling_update_uid;
  // Whether the helper serves the registration socket and the service socket (upstream's
  // RegistrationService and DRAService, for tests): one alone runs as the kubelet would meet a
  // driver that registers before its service listens, or whose service stops and comes back in
  // a process of its own. With neither, the helper only publishes ResourceSlices.
  bool serve_registration = true;
  bool serve_service = true;
  // Listen: a socket listening for stream connections, made for the socket at `path` (upstream's
  // PluginListener and RegistrarListener: for tests, or a socket systemd handed over). The
  // helper owns it from then on, serves the connections it accepts and closes it at Stop; it
  // makes no file or folder for that socket and removes none. An error fails Start.
  using Listen = std::function<absl::StatusOr<int>(const std::filesystem::path& path)>;
  // Null: the helper makes the socket at the path itself.
  Listen service_listener;
  Listen registrar_listener;
  // Told when a socket given by a listener fails for good (closed, shut down), with
  // upstream's words for what stopped ("DRA gRPC server failed", "registrar gRPC server
  // failed"): that socket serves nothing more, so the driver should stop, as upstream's
  // HandleError is told to (not from this callback, which runs on the thread Stop waits for).
  // Null: logged.
  std::function<void(const std::string& what, const absl::Status& error)> handle_serving_error;
  bool serve_v1 = true;
  bool serve_v1beta1 = true;
  // True: the driver's calls run one at a time (and, in a rolling update, one at a time across
  // both pods through serialize.lock), as upstream's default. False (upstream's
  // Serialize(false)): each runs at once on a thread of the helper's, up to kParallelCalls, and
  // may overlap others; for a driver that handles concurrent calls itself.
  bool serialize = true;
  // Other services of the driver on its socket, each with the name it is listed under at
  // registration (e.g. "v1.DRAResourceHealth"). Not owned; must outlive the helper.
  std::vector<std::pair<grpc::Service*, std::string>> extra_services;
  // Required: where claims are read before the driver prepares them.
  ClaimLookup claim_lookup;
  // Where PublishResources writes ResourceSlices, owned by the Node `node_name`; null: nothing
  // is published. Not owned; must outlive the helper.
  resourceslice::SliceStore* slice_store = nullptr;
  std::string node_name;
  // The Node's UID, for the slices' owner reference (upstream's NodeUID); empty: read from the
  // store once, at the first publication.
  std::string node_uid;
  // Non-empty: PublishResources publishes only the pool of that name, whose slices stay owned by
  // the Node but carry no nodeName, so that other nodes see them through the pool's nodeSelector
  // or allNodes; only that pool's slices are reconciled (upstream's ReconcilePoolWithName).
  std::string reconcile_pool_with_name;
  // Told of every NotifyRegistrationStatus, on a gRPC thread; must not block.
  std::function<void(bool registered, const std::string& error)> on_registration;
  // Told of each error of publishing (a pool that does not validate, a slice the store
  // refused, fields it dropped), on the publisher's thread, or, with reconcile_pool_with_name
  // and resources of other pools, on the thread of the PublishResources that gave them, with
  // the helper's locks held (as upstream's); must not block, publish or stop the helper. All
  // are recoverable: the controller tries again (upstream's HandleError with ErrRecoverable).
  // Null: each is logged.
  std::function<void(const resourceslice::ControllerError&)> handle_error;
  // Device metadata (KEP-5304, alpha; upstream's EnableDeviceMetadata): for each request of a
  // claim the driver prepared, a metadata file under plugin_data_dir and a CDI spec in cdi_dir
  // that mounts it into the containers, its CDI device ID added to the request's first device
  // (device_metadata.h). A claim whose files cannot be written is logged and answered without
  // them; the files go when the driver unprepares the claim (a failure to remove them is the
  // claim's error).
  bool device_metadata = false;
  // The API versions the files hold, in that order (upstream's MetadataVersions; there is no
  // default yet): kMetadataV1alpha1. With none this helper knows, Start fails.
  std::vector<std::string> metadata_versions;
  // Where the container runtime finds CDI specs (upstream's CDIDirectory).
  std::filesystem::path cdi_dir = kDefaultCdiDir;
  // How long Stop lets calls in progress end before cancelling them.
  absl::Duration shutdown_grace = absl::Seconds(2);
  LoggerPtr logger;
};

class Helper {
 public:
  // How many prepares may have their claims read at once: each is one pod's, so this is more
  // than the pods a node admits at the same moment; more wait for a reader.
  static constexpr size_t kClaimReaders = 16;
  // How many of the driver's calls may run at once when the options ask for no serialisation;
  // more wait for a thread.
  static constexpr size_t kParallelCalls = 16;

  // Start serves the service socket, then the registration socket (so that the kubelet never
  // dials a service that is not there yet). InvalidArgument for bad options or a socket path
  // over the unix limit; the errno's code when a folder or socket cannot be made.
  static absl::StatusOr<std::unique_ptr<Helper>> Start(DriverPlugin& plugin, HelperOptions options);
  // Stops (see Stop).
  ~Helper();
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;

  // PublishResources sets what the driver publishes as ResourceSlices (asynchronous; the
  // controller retries). FailedPrecondition without a slice store.
  absl::Status PublishResources(resourceslice::DriverResources resources)
      ABSL_LOCKS_EXCLUDED(publish_mu_, mu_);

  // Stop removes the registration socket first, then stops the service (calls in progress get
  // shutdown_grace, then are cancelled: the calls still waiting their turn end without reaching
  // the driver) and removes its socket. Idempotent; returns once every call and a
  // PublishResources under way have ended, so the driver's call in progress, if any, must return;
  // a Stop called while another runs returns when that one does, one called from a driver's
  // call or a callback while it runs returns at once (common/stop_once.h).
  void Stop() ABSL_LOCKS_EXCLUDED(publish_mu_, mu_);

  // UpdateRequestMetadata rewrites the metadata file of a prepared claim's request with
  // `devices` (their metadata now known: a network device's addresses once the pod's network
  // is set up), one generation later (MetadataWriter::UpdateRequestMetadata).
  // FailedPrecondition without device_metadata.
  absl::Status UpdateRequestMetadata(const std::string& namespace_name, const std::string& name,
                                     const std::string& uid, const std::string& request,
                                     const std::vector<Device>& devices) const;

  // Calls: the prepare and unprepare calls taken and not yet answered: those whose claims are
  // being read or wait to be, the one the driver is working on and those waiting their turn (a
  // backlog to watch).
  int Calls() const { return calls_.load(); }

  const std::filesystem::path& service_socket() const { return service_socket_.path(); }
  const std::filesystem::path& registrar_socket() const { return registrar_socket_.path(); }

 private:
  template <typename Api>
  class DraService;
  // CallsCancelled: Stop's grace has ended (calls_cancelled_at_).
  bool CallsCancelled() ABSL_LOCKS_EXCLUDED(mu_);
  void StopNow() ABSL_LOCKS_EXCLUDED(publish_mu_, mu_);

  Helper(DriverPlugin& plugin, HelperOptions options);
  absl::Status Serve();
  // ServeOn starts `server` ("DRA" or "registrar": `what`) from `builder` on `socket`, made by
  // `listen` when there is one (accepted by `acceptor`, whose failure is told as "<what> gRPC
  // server failed"), else placed by the helper.
  absl::Status ServeOn(grpc::ServerBuilder& builder, PlacedSocket& socket,
                       const HelperOptions::Listen& listen, absl::string_view what,
                       std::unique_ptr<grpc::Server>& server,
                       std::unique_ptr<ConnectionAcceptor>& acceptor);
  void OnRegistration(bool registered, const std::string& error) ABSL_LOCKS_EXCLUDED(mu_);
  // The answers of both service versions, in v1's messages: a prepare's claims read on a
  // reader, then the driver's calls on the worker (or, without serialisation, on a thread of
  // parallel_).
  absl::StatusOr<std::vector<dra::ResourceClaim>> ReadClaims(
      const ::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesRequest& request);
  // `ended` says whether the call has ended (Helper::DraService::Ended).
  absl::StatusOr<::k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesResponse> Prepare(
      const std::vector<dra::ResourceClaim>& claims, const std::function<bool()>& ended);
  absl::StatusOr<::k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesResponse> Unprepare(
      const ::k8s::io::kubelet::pkg::apis::dra::v1::NodeUnprepareResourcesRequest& request,
      const std::function<bool()>& ended);
  // TakeTurn: the call lock when the calls are serialised, nothing otherwise; Cancelled when
  // the call ends while it waits for the other pod's turn to end.
  absl::StatusOr<std::optional<CallLock::Guard>> TakeTurn(const std::function<bool()>& ended);

  DriverPlugin& plugin_;
  const HelperOptions options_;
  // Each put at its path once its server answers, and removed at the end only if still ours.
  PlacedSocket service_socket_;
  PlacedSocket registrar_socket_;
  CallLock call_lock_;
  std::optional<MetadataWriter> metadata_;

  // Held by PublishResources throughout (Stop waits for it), taken before mu_.
  absl::Mutex publish_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Runs StopNow once (common/stop_once.h).
  StopOnce stop_once_;
  // When Stop's grace ends and the servers cancel the calls left: a call still waiting its turn
  // then is one of them, whether or not its context says so yet (gRPC marks it asynchronously,
  // and its client may have seen the cancellation first).
  absl::Time calls_cancelled_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  std::unique_ptr<resourceslice::Controller> publisher_ ABSL_GUARDED_BY(mu_);

  // Declared before the servers, which are destroyed first.
  std::vector<std::unique_ptr<grpc::Service>> services_;
  std::unique_ptr<grpc::Server> service_server_;
  std::unique_ptr<grpc::Server> registrar_server_;
  // The accept loops of the sockets listeners made; each stops before its server.
  std::unique_ptr<ConnectionAcceptor> service_acceptor_;
  std::unique_ptr<ConnectionAcceptor> registrar_acceptor_;
  // Last, so that they join first: the services answer every call on these, so Stop shuts the
  // servers down before it stops them. A reader reads a prepare's claims, then hands it to the
  // worker, which calls the driver: so the readers go first.
  EventLoop worker_;
  OperationThreads parallel_{kParallelCalls};
  OperationThreads reader_{kClaimReaders};
  std::atomic<int> calls_{0};
};

}  // namespace devmgr::kubeletplugin
