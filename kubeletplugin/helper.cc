#include "kubeletplugin/helper.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <system_error>
#include <tuple>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/connection_acceptor.h"
#include "common/errno_status.h"
#include "common/server_threads.h"
#include "common/status.h"
#include "common/unix_socket.h"
#include "deviceplugin/registry_service.h"
#include "dra/api_versions.h"
#include "dra/driver_client.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "kubeletplugin/socket_names.h"

namespace devmgr::kubeletplugin {
namespace {

namespace v1 = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;

// The plugin type a DRA driver registers with in plugins_registry/.
constexpr char kDraPluginType[] = "DRAPlugin";

struct V1Api {
  using Service = v1::DRAPlugin::CallbackService;
  using PrepareRequest = v1::NodePrepareResourcesRequest;
  using PrepareResponse = v1::NodePrepareResourcesResponse;
  using UnprepareRequest = v1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = v1::NodeUnprepareResourcesResponse;
};

struct V1beta1Api {
  using Service = v1beta1::DRAPlugin::CallbackService;
  using PrepareRequest = v1beta1::NodePrepareResourcesRequest;
  using PrepareResponse = v1beta1::NodePrepareResourcesResponse;
  using UnprepareRequest = v1beta1::NodeUnprepareResourcesRequest;
  using UnprepareResponse = v1beta1::NodeUnprepareResourcesResponse;
};

absl::Status Wrap(absl::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

// RemoveStaleEntry takes away what a socket's path holds that is not a socket (a file, a
// symlink, an empty folder: what upstream's endpoint removes before it listens), so that the
// socket can be placed there. A socket is left for Place to replace; a folder with something in
// it is an error, in upstream's words ("listen on P: remove Unix socket: remove P: directory not
// empty").
absl::Status RemoveStaleEntry(const std::filesystem::path& path) {
  struct stat st {};
  int error = 0;
  if (::lstat(path.c_str(), &st) != 0) {
    error = errno;
  } else if (!S_ISSOCK(st.st_mode) &&
             (S_ISDIR(st.st_mode) ? ::rmdir(path.c_str()) : ::unlink(path.c_str())) != 0) {
    error = errno;
  }
  if (error == 0 || error == ENOENT) return absl::OkStatus();
  // Go's text of an errno is the C library's, lower-cased at its start.
  std::string text = std::strerror(error);
  if (!text.empty()) text[0] = absl::ascii_tolower(static_cast<unsigned char>(text[0]));
  return absl::Status(ErrnoStatus(error, "").code(),
                      absl::StrCat("listen on \"", path.string(), "\": remove Unix socket: remove ",
                                   path.string(), ": ", text));
}

// ErrorText: a driver's error as the kubelet reads it. An empty text on the wire means success,
// so an error without a message is named by its code (a Go error always has a text).
std::string ErrorText(const absl::Status& status) {
  if (!status.message().empty()) return std::string(status.message());
  return absl::StrCat("the driver failed with ", absl::StatusCodeToString(status.code()),
                      " and no message");
}

// PlaceFolders: fills in the folders and the registration socket's name the options leave to
// their defaults, each folder made absolute: the endpoint in GetInfo must be, since the kubelet
// dials it from its own folder.
absl::Status PlaceFolders(HelperOptions& options) {
  if (!options.rolling_update_uid.empty() && !options.registrar_socket_file.empty()) {
    return absl::InvalidArgumentError(
        "rolling updates and explicit registration socket filename are mutually exclusive");
  }
  for (const auto& [file, what] : {std::pair{&options.registrar_socket_file, "registration"},
                                   std::pair{&options.plugin_socket, "service"}}) {
    if (*file == "." || *file == ".." || file->find('/') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("the ", what, " socket's name must be a file name, not ", *file));
    }
  }
  if (options.registry_dir.empty()) options.registry_dir = options.kubelet_dir / "plugins_registry";
  if (options.plugin_data_dir.empty()) {
    options.plugin_data_dir = options.kubelet_dir / "plugins" / options.driver_name;
  }
  if (options.flock_dir.empty()) options.flock_dir = options.plugin_data_dir;
  for (std::filesystem::path* folder : {&options.kubelet_dir, &options.registry_dir,
                                        &options.plugin_data_dir, &options.flock_dir}) {
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(*folder, ec);
    if (ec) return ErrnoStatus(ec, "cannot resolve", *folder);
    *folder = absolute.lexically_normal();
  }
  if (options.registrar_socket_file.empty()) {
    options.registrar_socket_file =
        options.rolling_update_uid.empty()
            ? RegistrarSocketFile(options.driver_name)
            : RollingUpdateRegistrarSocketFile(options.registry_dir, options.driver_name,
                                               options.rolling_update_uid);
  }
  if (options.plugin_socket.empty()) {
    options.plugin_socket = options.rolling_update_uid.empty()
                                ? std::string(kServiceSocketFile)
                                : RollingUpdateServiceSocketFile(options.rolling_update_uid);
  }
  return absl::OkStatus();
}

// Listened: the socket `listen` made for `path`, or why it could not, as upstream words it.
absl::StatusOr<int> Listened(const HelperOptions::Listen& listen,
                             const std::filesystem::path& path) {
  absl::StatusOr<int> fd = listen(path);
  if (!fd.ok()) {
    return absl::Status(fd.status().code(),
                        absl::StrCat("listen on \"", path.string(), "\": ", fd.status().message()));
  }
  return fd;
}

}  // namespace

// One version of the DRAPlugin service. The answers may block (claim lookups, the driver), so
// each call is handed on: a prepare's claims are read on the reader thread, and the driver is
// called on the worker thread, which finishes the call.
template <typename Api>
class Helper::DraService final : public Api::Service {
 public:
  explicit DraService(Helper& helper) : helper_(helper) {}

  grpc::ServerUnaryReactor* NodePrepareResources(grpc::CallbackServerContext* context,
                                                 const typename Api::PrepareRequest* request,
                                                 typename Api::PrepareResponse* response) override {
    grpc::ServerUnaryReactor* reactor = Take(context);
    // `request` and `response` live until Finish. The claims first, each call's on a thread of
    // its own, as upstream reads them before it serialises the calls: an API server slow to
    // answer one holds up neither another prepare's read nor the driver's calls (an unprepare
    // needs no read).
    helper_.reader_.Post([this, context, reactor, request, response] {
      std::optional<std::vector<dra::ResourceClaim>> claims;
      if (!context->IsCancelled()) {
        absl::StatusOr<std::vector<dra::ResourceClaim>> read =
            helper_.ReadClaims(dra::ConvertVersion<v1::NodePrepareResourcesRequest>(*request));
        if (!read.ok()) return Finish(reactor, read.status());
        claims = *std::move(read);
      }
      // Without claims the call had ended, which the worker answers without running this.
      AnswerOnWorker(
          context, reactor,
          [this, claims = std::move(claims), response](const std::function<bool()>& ended) {
            if (!claims.has_value()) return absl::CancelledError("the call ended");
            absl::StatusOr<v1::NodePrepareResourcesResponse> answer =
                helper_.Prepare(*claims, ended);
            if (!answer.ok()) return answer.status();
            *response = dra::ConvertVersion<typename Api::PrepareResponse>(*answer);
            return absl::OkStatus();
          });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* NodeUnprepareResources(
      grpc::CallbackServerContext* context, const typename Api::UnprepareRequest* request,
      typename Api::UnprepareResponse* response) override {
    grpc::ServerUnaryReactor* reactor = Take(context);
    AnswerOnWorker(context, reactor, [this, request, response](const std::function<bool()>& ended) {
      absl::StatusOr<v1::NodeUnprepareResourcesResponse> answer = helper_.Unprepare(
          dra::ConvertVersion<v1::NodeUnprepareResourcesRequest>(*request), ended);
      if (!answer.ok()) return answer.status();
      *response = dra::ConvertVersion<typename Api::UnprepareResponse>(*answer);
      return absl::OkStatus();
    });
    return reactor;
  }

 private:
  // Take counts the call until Finish.
  grpc::ServerUnaryReactor* Take(grpc::CallbackServerContext* context) {
    ++helper_.calls_;
    return context->DefaultReactor();
  }

  // Finish answers the call with `answered`: a Go driver's error comes back as gRPC's UNKNOWN
  // with its text; so does ours.
  void Finish(grpc::ServerUnaryReactor* reactor, const absl::Status& answered) {
    FinishWith(reactor, answered.ok() ? grpc::Status::OK
                                      : GrpcStatus(grpc::StatusCode::UNKNOWN, ErrorText(answered)));
  }

  // FinishWith answers the call and stops counting it.
  void FinishWith(grpc::ServerUnaryReactor* reactor, const grpc::Status& status) {
    --helper_.calls_;
    reactor->Finish(status);
  }

  // AnswerOnWorker runs `answer` on the worker (or a thread of parallel_), which is told how to
  // ask whether the call has ended meanwhile.
  void AnswerOnWorker(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
                      std::function<absl::Status(const std::function<bool()>& ended)> answer) {
    auto run = [this, reactor, context, answer = std::move(answer)] {
      // Waiting its turn, the call ended (the kubelet's deadline, the helper's stop): the driver
      // is not asked, as upstream's handler gives up on its cancelled context.
      const std::function<bool()> ended = [this, context] {
        return context->IsCancelled() || helper_.CallsCancelled();
      };
      absl::Status answered =
          ended() ? absl::CancelledError("the call ended before the driver was asked")
                  : answer(ended);
      if (absl::IsCancelled(answered) && ended()) {
        FinishWith(reactor, GrpcStatus(grpc::StatusCode::CANCELLED, answered.message()));
        return;
      }
      Finish(reactor, answered);
    };
    if (helper_.options_.serialize) {
      helper_.worker_.Post(std::move(run));
    } else {
      helper_.parallel_.Post(std::move(run));
    }
  }

  Helper& helper_;
};

Helper::Helper(DriverPlugin& plugin, HelperOptions options)
    : plugin_(plugin),
      options_(std::move(options)),
      service_socket_(options_.plugin_data_dir / options_.plugin_socket),
      registrar_socket_(options_.registry_dir / options_.registrar_socket_file),
      // Two pods of a rolling update take turns through a file both see; one pod alone is
      // serial on its worker already.
      call_lock_(options_.rolling_update_uid.empty() ? std::filesystem::path()
                                                     : options_.flock_dir / kSerializeLockFile) {}

absl::StatusOr<std::unique_ptr<Helper>> Helper::Start(DriverPlugin& plugin, HelperOptions options) {
  // Both become folder and file names.
  if (absl::Status named = CheckNames(options.driver_name, options.rolling_update_uid);
      !named.ok()) {
    return named;
  }
  if (!options.serve_v1 && !options.serve_v1beta1) {
    return absl::InvalidArgumentError("serve at least one of DRAPlugin v1 and v1beta1");
  }
  if (!options.claim_lookup) return absl::InvalidArgumentError("a claim lookup is required");
  if (options.slice_store != nullptr && options.node_name.empty()) {
    return absl::InvalidArgumentError("publishing ResourceSlices needs the node's name");
  }
  if (absl::Status placed = PlaceFolders(options); !placed.ok()) return placed;
  std::optional<MetadataWriter> metadata;
  if (options.device_metadata) {
    absl::StatusOr<MetadataWriter> writer = MetadataWriter::Create(
        options.driver_name, options.plugin_data_dir, options.cdi_dir, options.metadata_versions);
    if (!writer.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("initialize device metadata: ", writer.status().message()));
    }
    metadata = *std::move(writer);
  }
  std::unique_ptr<Helper> helper(new Helper(plugin, std::move(options)));
  helper->metadata_ = std::move(metadata);
  if (absl::Status served = helper->Serve(); !served.ok()) {
    helper->Stop();
    return served;
  }
  return helper;
}

Helper::~Helper() { Stop(); }

absl::Status Helper::Serve() {
  // Each server listens under a name of its own and its socket then replaces whatever socket a
  // driver that went before left at the path (upstream removes it first), so that stopping never
  // removes a socket another instance has put there since. A socket the driver's listener makes
  // is the driver's: no folder or file is made for it.
  for (const auto& [socket, served, listen] :
       {std::tuple{&service_socket_, options_.serve_service, &options_.service_listener},
        std::tuple{&registrar_socket_, options_.serve_registration,
                   &options_.registrar_listener}}) {
    // The kubelet dials the service's path whoever serves it.
    if (socket == &service_socket_ || (served && *listen)) {
      if (absl::Status path_ok = ValidateSocketPath(socket->path()); !path_ok.ok()) {
        return path_ok;
      }
    }
    if (!served || *listen) continue;
    if (absl::Status path_ok = socket->Check(); !path_ok.ok()) return path_ok;
    std::error_code ec;
    std::filesystem::create_directories(socket->path().parent_path(), ec);
    if (ec) return ErrnoStatus(ec, "cannot create", socket->path().parent_path());
    if (absl::Status cleared = RemoveStaleEntry(socket->path()); !cleared.ok()) {
      return Wrap(socket == &service_socket_ ? "start DRA service: " : "start registrar: ",
                  cleared);
    }
  }
  if (!options_.rolling_update_uid.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options_.flock_dir, ec);
    if (ec) return ErrnoStatus(ec, "cannot create", options_.flock_dir);
  }

  pluginregistration::PluginInfo info;
  info.set_type(kDraPluginType);
  info.set_name(options_.driver_name);
  info.set_endpoint(service_socket_.path().string());
  grpc::ServerBuilder service_builder;
  KeepHandlerThreads(service_builder);
  if (options_.serve_v1) {
    services_.push_back(std::make_unique<DraService<V1Api>>(*this));
    service_builder.RegisterService(services_.back().get());
    info.add_supported_versions(dra::kDraPluginServiceV1);
  }
  if (options_.serve_v1beta1) {
    services_.push_back(std::make_unique<DraService<V1beta1Api>>(*this));
    service_builder.RegisterService(services_.back().get());
    info.add_supported_versions(dra::kDraPluginServiceV1beta1);
  }
  for (const auto& [service, name] : options_.extra_services) {
    service_builder.RegisterService(service);
    info.add_supported_versions(name);
  }
  if (options_.serve_service) {
    absl::Status served = ServeOn(service_builder, service_socket_, options_.service_listener,
                                  "DRA", service_server_, service_acceptor_);
    if (!served.ok()) return Wrap("start DRA service: ", served);
  }
  if (!options_.serve_registration) return absl::OkStatus();

  // Only now that the service answers does the kubelet learn about it.
  services_.push_back(std::make_unique<deviceplugin::RegistryService>(
      std::move(info), [this](bool registered, const std::string& error) {
        OnRegistration(registered, error);
        // As upstream's registration server: the kubelet logs a failure it reported.
        return registered ? grpc::Status::OK
                          : GrpcStatus(grpc::StatusCode::UNKNOWN,
                                       absl::StrCat("failed registration process: ", error));
      }));
  grpc::ServerBuilder registrar_builder;
  registrar_builder.RegisterService(services_.back().get());
  absl::Status served = ServeOn(registrar_builder, registrar_socket_, options_.registrar_listener,
                                "registrar", registrar_server_, registrar_acceptor_);
  return served.ok() ? served : Wrap("start registrar: ", served);
}

absl::Status Helper::ServeOn(grpc::ServerBuilder& builder, PlacedSocket& socket,
                             const HelperOptions::Listen& listen, absl::string_view what,
                             std::unique_ptr<grpc::Server>& server,
                             std::unique_ptr<ConnectionAcceptor>& acceptor) {
  if (!listen) {
    builder.AddListeningPort(UnixTarget(socket.bind_path()), grpc::InsecureServerCredentials());
    server = builder.BuildAndStart();
    if (server == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", socket.bind_path().string()));
    }
    return socket.Place();
  }
  absl::StatusOr<int> fd = Listened(listen, socket.path());
  if (!fd.ok()) return fd.status();
  ConnectionAcceptor::Options accepting;
  accepting.name = absl::StrCat(what, " gRPC server");
  accepting.on_failure =
      [this, failure = absl::StrCat(what, " gRPC server failed")](const absl::Status& error) {
        if (options_.handle_serving_error) {
          options_.handle_serving_error(failure, error);
        } else {
          DEVMGR_LOG(options_.logger, err, failure, "err", error);
        }
      };
  accepting.logger = options_.logger;
  absl::StatusOr<std::unique_ptr<ConnectionAcceptor>> made =
      ConnectionAcceptor::Create(*fd, std::move(accepting));
  if (!made.ok()) return made.status();
  server = builder.BuildAndStart();
  if (server == nullptr) return absl::UnavailableError("cannot start a gRPC server");
  acceptor = *std::move(made);
  acceptor->Start(*server);
  return absl::OkStatus();
}

absl::Status Helper::PublishResources(resourceslice::DriverResources resources) {
  if (options_.slice_store == nullptr) {
    return absl::FailedPreconditionError("no ResourceSlice store to publish into");
  }
  // One publication at a time; the first starts the controller, whose start lists the store
  // (a request to the API server) without mu_, which the kubelet's registration callback takes.
  absl::MutexLock publishing(&publish_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return absl::FailedPreconditionError("the helper is stopped");
    if (publisher_ != nullptr) {
      publisher_->Update(std::move(resources));
      return absl::OkStatus();
    }
  }
  resourceslice::ControllerOptions publish;
  publish.driver_name = options_.driver_name;
  publish.store = options_.slice_store;
  publish.owner = resourceslice::Owner{"v1", "Node", options_.node_name, options_.node_uid};
  publish.resources = std::move(resources);
  publish.error_handler = options_.handle_error;
  publish.reconcile_pool_with_name = options_.reconcile_pool_with_name;
  publish.logger = options_.logger;
  absl::StatusOr<std::unique_ptr<resourceslice::Controller>> controller =
      resourceslice::Controller::Start(std::move(publish));
  if (!controller.ok()) return controller.status();
  {
    absl::MutexLock lock(&mu_);
    if (!stopped_) {
      publisher_ = *std::move(controller);
      return absl::OkStatus();
    }
  }
  (*controller)->Stop();  // the helper stopped meanwhile
  return absl::FailedPreconditionError("the helper is stopped");
}

void Helper::OnRegistration(bool registered, const std::string& error) {
  if (options_.on_registration) options_.on_registration(registered, error);
  // A kubelet that (re)starts wipes the node's slices: publish them again.
  absl::MutexLock lock(&mu_);
  if (registered && publisher_ != nullptr) publisher_->Resync();
}

void Helper::Stop() {
  stop_once_.Run([this] { StopNow(); });
}

void Helper::StopNow() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  // A publication under way ends first: seeing stopped_, it stops the controller it started.
  { absl::MutexLock publishing(&publish_mu_); }
  std::unique_ptr<resourceslice::Controller> publisher;
  {
    absl::MutexLock lock(&mu_);
    publisher = std::move(publisher_);
  }
  if (publisher != nullptr) publisher->Stop();
  const absl::Time cancel_at = absl::Now() + options_.shutdown_grace;
  {
    absl::MutexLock lock(&mu_);
    calls_cancelled_at_ = cancel_at;
  }
  const auto deadline = absl::ToChronoTime(cancel_at);
  // The registrar first: a kubelet looking now finds no driver rather than a dying one. Each
  // socket is removed only if it is still the one this helper put there.
  for (auto* server : {&registrar_server_, &service_server_}) {
    if (*server == nullptr) continue;
    // A listener of the driver's takes no connection more, and is closed (as upstream's).
    std::unique_ptr<ConnectionAcceptor>& acceptor =
        server == &registrar_server_ ? registrar_acceptor_ : service_acceptor_;
    if (acceptor != nullptr) acceptor->Stop();
    // Calls still on the reader or the worker end there, which Shutdown waits for (or cancels
    // after the grace): so both run until both servers are down.
    (*server)->Shutdown(deadline);
    server->reset();
    acceptor.reset();
    PlacedSocket& socket = server == &registrar_server_ ? registrar_socket_ : service_socket_;
    if (absl::Status removed = socket.Remove(); !removed.ok()) {
      DEVMGR_LOG(options_.logger, err, "Cannot remove socket", "path", socket.path().string(),
                 "err", removed);
    }
  }
  reader_.Join();
  parallel_.Join();
  worker_.Stop();
}

bool Helper::CallsCancelled() {
  absl::MutexLock lock(&mu_);
  return absl::Now() >= calls_cancelled_at_;
}

absl::StatusOr<std::vector<dra::ResourceClaim>> Helper::ReadClaims(
    const v1::NodePrepareResourcesRequest& request) {
  // A claim that cannot be used fails the whole call, with upstream's texts.
  std::vector<dra::ResourceClaim> claims;
  for (const v1::Claim& wanted : request.claims()) {
    const std::string ref = absl::StrCat(wanted.namespace_(), "/", wanted.name());
    absl::StatusOr<dra::ResourceClaim> claim =
        options_.claim_lookup(wanted.namespace_(), wanted.name());
    if (!claim.ok()) {
      return Wrap(absl::StrCat("get resource claims: retrieve claim ", ref, ": "), claim.status());
    }
    if (!claim->allocation.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("get resource claims: claim ", ref, " not allocated"));
    }
    if (claim->uid != wanted.uid()) {
      // Same name, other object: the claim the kubelet means was deleted and made again.
      return absl::FailedPreconditionError(
          absl::StrCat("get resource claims: claim ", ref, " got replaced"));
    }
    claims.push_back(*std::move(claim));
  }
  return claims;
}

absl::StatusOr<std::optional<CallLock::Guard>> Helper::TakeTurn(
    const std::function<bool()>& ended) {
  if (!options_.serialize) return std::optional<CallLock::Guard>();
  absl::StatusOr<CallLock::Guard> turn = call_lock_.Lock(ended);
  if (absl::IsCancelled(turn.status())) return turn.status();
  if (!turn.ok()) return Wrap("serialize gRPC: ", turn.status());
  return std::optional<CallLock::Guard>(*std::move(turn));
}

absl::StatusOr<v1::NodePrepareResourcesResponse> Helper::Prepare(
    const std::vector<dra::ResourceClaim>& claims, const std::function<bool()>& ended) {
  absl::StatusOr<std::optional<CallLock::Guard>> turn = TakeTurn(ended);
  if (!turn.ok()) return turn.status();
  absl::StatusOr<std::map<std::string, PrepareResult>> results =
      plugin_.PrepareResourceClaims(claims);
  if (!results.ok()) return Wrap("prepare resource claims: ", results.status());
  v1::NodePrepareResourcesResponse response;
  for (const auto& [uid, result] : *results) {
    v1::NodePrepareResourceResponse& answer = (*response.mutable_claims())[uid];
    if (!result.error.ok()) answer.set_error(ErrorText(result.error));
    // The CDI device that mounts each request's metadata file, by request name.
    std::map<std::string, std::string> metadata_ids;
    const std::string& claim_uid = uid;  // a structured binding cannot be captured (C++20)
    auto claim =
        absl::c_find_if(claims, [&](const dra::ResourceClaim& c) { return c.uid == claim_uid; });
    if (metadata_.has_value() && result.error.ok() && claim != claims.end()) {
      absl::StatusOr<std::map<std::string, std::string>> ids =
          metadata_->ProcessPreparedClaim(*claim, result.devices);
      if (ids.ok()) {
        metadata_ids = *std::move(ids);
      } else {
        DEVMGR_LOG(options_.logger, err, "Failed to write device metadata", "claim",
                   absl::StrCat(claim->namespace_name, "/", claim->name), "err", ids.status());
      }
    }
    for (const Device& device : result.devices) {
      v1::Device& out = *answer.add_devices();
      for (const std::string& request_name : device.requests) {
        out.add_request_names(BaseRequestName(request_name));
      }
      out.set_pool_name(device.pool_name);
      out.set_device_name(device.device_name);
      for (const std::string& id : device.cdi_device_ids) out.add_cdi_device_ids(id);
      // Each request's metadata goes with its first device (taken from the map once used).
      for (const std::string& request_name : out.request_names()) {
        if (auto id = metadata_ids.find(request_name); id != metadata_ids.end()) {
          out.add_cdi_device_ids(id->second);
          metadata_ids.erase(id);
        }
      }
      if (device.share_id.has_value()) out.set_share_id(*device.share_id);
    }
  }
  return response;
}

absl::StatusOr<v1::NodeUnprepareResourcesResponse> Helper::Unprepare(
    const v1::NodeUnprepareResourcesRequest& request, const std::function<bool()>& ended) {
  absl::StatusOr<std::optional<CallLock::Guard>> turn = TakeTurn(ended);
  if (!turn.ok()) return turn.status();
  std::vector<NamespacedObject> claims;
  for (const v1::Claim& claim : request.claims()) {
    claims.push_back({claim.namespace_(), claim.name(), claim.uid()});
  }
  absl::StatusOr<std::map<std::string, absl::Status>> results =
      plugin_.UnprepareResourceClaims(claims);
  if (!results.ok()) return Wrap("unprepare resource claims: ", results.status());
  v1::NodeUnprepareResourcesResponse response;
  for (const auto& [uid, error] : *results) {
    absl::Status status = error;
    const std::string& claim_uid = uid;  // a structured binding cannot be captured (C++20)
    auto claim =
        absl::c_find_if(claims, [&](const NamespacedObject& c) { return c.uid == claim_uid; });
    if (metadata_.has_value() && status.ok() && claim != claims.end()) {
      if (absl::Status removed = metadata_->CleanupClaim(claim->namespace_name, claim->name, uid);
          !removed.ok()) {
        status = absl::Status(removed.code(),
                              absl::StrCat("clean up device metadata: ", removed.message()));
      }
    }
    v1::NodeUnprepareResourceResponse& answer = (*response.mutable_claims())[uid];
    if (!status.ok()) answer.set_error(ErrorText(status));
  }
  return response;
}

absl::Status Helper::UpdateRequestMetadata(const std::string& namespace_name,
                                           const std::string& name, const std::string& uid,
                                           const std::string& request,
                                           const std::vector<Device>& devices) const {
  if (!metadata_.has_value()) {
    return absl::FailedPreconditionError("device metadata is not enabled");
  }
  return metadata_->UpdateRequestMetadata(namespace_name, name, uid, request, devices);
}

}  // namespace devmgr::kubeletplugin
