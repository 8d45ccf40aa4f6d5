#include "pluginwatcher/registration_client.h"

#include <fcntl.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errno_status.h"
#include "common/plugin_channel.h"
#include "common/status.h"
#include "common/unix_socket.h"

namespace devmgr::pluginwatcher {
namespace {

// How often a dial in progress looks for Cancel.
constexpr absl::Duration kDialCancelCheck = absl::Milliseconds(50);
// How often a socket nobody listens on is tried again within kRefusedGrace.
constexpr absl::Duration kRefusedRetry = absl::Milliseconds(100);

const char* StateName(grpc_connectivity_state state) {
  switch (state) {
    case GRPC_CHANNEL_IDLE:
      return "IDLE";
    case GRPC_CHANNEL_CONNECTING:
      return "CONNECTING";
    case GRPC_CHANNEL_READY:
      return "READY";
    case GRPC_CHANNEL_TRANSIENT_FAILURE:
      return "TRANSIENT_FAILURE";
    case GRPC_CHANNEL_SHUTDOWN:
      return "SHUTDOWN";
  }
  return "UNKNOWN";
}

}  // namespace

RegistrationClient::RegistrationClient(std::filesystem::path registry_dir,
                                       std::filesystem::path socket_path)
    : registry_dir_(std::move(registry_dir)), socket_path_(std::move(socket_path)) {}

absl::Status RegistrationClient::OpenSocket() {
  absl::StatusOr<Fd> socket = OpenBeneath(registry_dir_, socket_path_, O_PATH);
  if (!socket.ok()) return socket.status();
  struct stat st {};
  if (::fstat(socket->Get(), &st) != 0) return ErrnoStatus(errno, "cannot stat", socket_path_);
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        socket_path_.string(), S_ISLNK(st.st_mode) ? " is a symlink" : " is not a socket"));
  }
  socket_ = *std::move(socket);
  return absl::OkStatus();
}

absl::Status RegistrationClient::Dial(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  // A socket no process listens on, left by a plugin that is gone, is refused at once, and gRPC
  // would go on reconnecting to it for the whole timeout, holding one of the watcher's few
  // workers (upstream gives each dial a goroutine of its own). It fails within kRefusedGrace; a
  // plugin that bound it and is about to listen has that long to start, and the back-off after.
  // A path no socket address holds fails at once; anything else a connection meets (a
  // permission, a full backlog) is left to gRPC's dial.
  const absl::Duration grace = std::min(timeout, kRefusedGrace);
  const absl::Time refused_until = absl::Now() + grace;
  if (!ValidateSocketPath(socket_path_).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path ", socket_path_.string(), " cannot be dialled"));
  }
  while (true) {
    int error = ENOENT;
    if (absl::Status opened = OpenSocket(); opened.ok()) {
      error = ConnectError(socket_.ProcPath());
    } else if (!absl::IsNotFound(opened)) {
      return opened;
    }
    if (error != ECONNREFUSED && error != ENOENT) break;
    if (absl::Now() >= refused_until) {
      return absl::UnavailableError(absl::StrCat(
          "no process listens on socket ", socket_path_.string(), " (",
          ErrnoStatus(error, "connect").message(), " for ", absl::FormatDuration(grace), ")"));
    }
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&cancelled_), kRefusedRetry)) {
      return absl::CancelledError("registration handshake cancelled");
    }
  }

  grpc::ChannelArguments args = PluginChannelArguments();
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  // A socket appears when the plugin binds it, a moment before it listens: retry within the dial
  // timeout after 100 ms rather than after gRPC's default first back-off of 1 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Through the descriptor: gRPC connects again and again while it dials, each time resolving
  // the target afresh, and the socket's path may lead elsewhere by then. A plugin that replaces
  // its socket from now on is reached by the next attempt (the watcher sees the new socket).
  channel_ = grpc::CreateCustomChannel(UnixTarget(socket_.ProcPath()),
                                       grpc::InsecureChannelCredentials(), args);
  stub_ = pluginregistration::Registration::NewStub(channel_);

  grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) return absl::CancelledError("registration handshake cancelled");
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("failed to dial socket ", socket_path_.string(), " within ",
                       absl::FormatDuration(timeout), ", connection state ", StateName(state)));
    }
    const absl::Time wake = std::min(deadline, now + kDialCancelCheck);
    if (channel_->WaitForStateChange(state, absl::ToChronoTime(wake))) {
      state = channel_->GetState(/*try_to_connect=*/true);
    }
  }
  return absl::OkStatus();
}

template <typename Call>
absl::Status RegistrationClient::RunCall(absl::Duration timeout, Call&& call) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return absl::CancelledError("registration handshake cancelled");
    active_ = &context;
  }
  const grpc::Status status = call(context);
  {
    absl::MutexLock lock(&mu_);
    active_ = nullptr;
  }
  return FromGrpcStatus(status);
}

absl::StatusOr<pluginregistration::PluginInfo> RegistrationClient::GetInfo(absl::Duration timeout) {
  pluginregistration::PluginInfo info;
  absl::Status status = RunCall(timeout, [&](grpc::ClientContext& context) {
    return stub_->GetInfo(&context, pluginregistration::InfoRequest(), &info);
  });
  if (!status.ok()) return status;
  return info;
}

absl::Status RegistrationClient::NotifyRegistrationStatus(bool registered, const std::string& error,
                                                          absl::Duration timeout) {
  pluginregistration::RegistrationStatus request;
  request.set_plugin_registered(registered);
  request.set_error(error);
  pluginregistration::RegistrationStatusResponse response;
  return RunCall(timeout, [&](grpc::ClientContext& context) {
    return stub_->NotifyRegistrationStatus(&context, request, &response);
  });
}

void RegistrationClient::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (active_ != nullptr) active_->TryCancel();
}

}  // namespace devmgr::pluginwatcher
