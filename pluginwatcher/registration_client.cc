#include "pluginwatcher/registration_client.h"

#include <fcntl.h>
#include <grpcpp/support/channel_arguments.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errno_status.h"
#include "common/file_id.h"
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

bool RegistrationClient::LeftItsName() const {
  absl::StatusOr<Fd> at_name = OpenBeneath(registry_dir_, socket_path_, O_PATH);
  if (!at_name.ok()) return GoneOrReplaced(at_name.status());
  struct stat opened {};
  struct stat named {};
  return ::fstat(socket_.Get(), &opened) == 0 && ::fstat(at_name->Get(), &named) == 0 &&
         !FileIdOf(opened).Same(FileIdOf(named));
}

absl::Status RegistrationClient::Dial(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  if (!ValidateSocketPath(socket_path_).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("socket path ", socket_path_.string(), " cannot be dialled"));
  }
  while (true) {
    if (absl::Status listening = AwaitListener(deadline); !listening.ok()) return listening;
    absl::StatusOr<bool> ready = Connect(deadline, timeout);
    if (!ready.ok() || *ready) return ready.status();
    // The plugin replaced its socket (unlink, bind anew) after the check that it listens: the
    // one opened refuses, and would until the deadline. Upstream, which dials the path, reaches
    // the new one at once; so does this, opening what is at the name now.
  }
}

absl::Status RegistrationClient::AwaitListener(absl::Time deadline) {
  // A socket no process listens on, left by a plugin that is gone, is refused at once, and gRPC
  // would go on reconnecting to it for the whole timeout, holding one of the watcher's few
  // workers (upstream gives each dial a goroutine of its own). It fails within kRefusedGrace; a
  // plugin that bound it and is about to listen has that long to start, and the back-off after.
  // A path no socket address holds fails at once; anything else a connection meets (a
  // permission, a full backlog) is left to gRPC's dial.
  const absl::Time start = absl::Now();
  const absl::Duration grace = std::clamp(deadline - start, absl::ZeroDuration(), kRefusedGrace);
  while (true) {
    int error = ENOENT;
    if (absl::Status opened = OpenSocket(); opened.ok()) {
      error = ConnectError(socket_.ProcPath());
    } else if (!absl::IsNotFound(opened)) {
      return opened;
    }
    if (error != ECONNREFUSED && error != ENOENT) return absl::OkStatus();
    if (absl::Now() >= start + grace) {
      return absl::UnavailableError(absl::StrCat(
          "no process listens on socket ", socket_path_.string(), " (",
          ErrnoStatus(error, "connect").message(), " for ", absl::FormatDuration(grace), ")"));
    }
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&cancelled_), kRefusedRetry)) {
      return absl::CancelledError("registration handshake cancelled");
    }
  }
}

absl::StatusOr<bool> RegistrationClient::Connect(absl::Time deadline, absl::Duration timeout) {
  grpc::ChannelArguments args = PluginChannelArguments();
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  // A socket appears when the plugin binds it, a moment before it listens: retry within the dial
  // timeout after 100 ms rather than after gRPC's default first back-off of 1 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Through the descriptor: gRPC connects again and again while it dials, each time resolving
  // the target afresh, and the socket's path may lead elsewhere by then.
  channel_ = PluginChannel(socket_.ProcPath(), args);
  stub_ = pluginregistration::Registration::NewStub(channel_);

  grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) return absl::CancelledError("registration handshake cancelled");
    }
    // A connection failed, and another socket (or none) is at the name: the plugin replaced it.
    // The channel goes first, since it connects through socket_, which Dial opens again.
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE && LeftItsName()) {
      stub_.reset();
      channel_.reset();
      return false;
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
  return true;
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
