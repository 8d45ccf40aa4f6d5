#include "tests/pluginwatcher/fake_registration_plugin.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/unix_socket.h"

namespace devmgr::testing {

class FakeRegistrationPlugin::Service final
    : public pluginregistration::Registration::CallbackService {
 public:
  explicit Service(FakeRegistrationPlugin& plugin) : plugin_(plugin) {}

  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const pluginregistration::InfoRequest* /*request*/,
                                    pluginregistration::PluginInfo* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    bool fail = false;
    {
      absl::MutexLock lock(&plugin_.mu_);
      ++plugin_.get_info_calls_;
      if (plugin_.hang_get_info_) {
        plugin_.hung_.push_back(reactor);
        return reactor;
      }
      if (plugin_.get_info_failures_ > 0) {
        --plugin_.get_info_failures_;
        fail = true;
      }
    }
    if (fail) {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "plugin not ready yet"));
    } else {
      *response = plugin_.info_;
      reactor->Finish(grpc::Status::OK);
    }
    return reactor;
  }

  grpc::ServerUnaryReactor* NotifyRegistrationStatus(
      grpc::CallbackServerContext* context, const pluginregistration::RegistrationStatus* request,
      pluginregistration::RegistrationStatusResponse* /*response*/) override {
    {
      absl::MutexLock lock(&plugin_.mu_);
      plugin_.statuses_.push_back(*request);
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  FakeRegistrationPlugin& plugin_;
};

pluginregistration::PluginInfo MakeInfo(const std::string& type, const std::string& name,
                                        const std::string& endpoint,
                                        std::vector<std::string> versions) {
  pluginregistration::PluginInfo info;
  info.set_type(type);
  info.set_name(name);
  info.set_endpoint(endpoint);
  for (auto& version : versions) info.add_supported_versions(std::move(version));
  return info;
}

FakeRegistrationPlugin::FakeRegistrationPlugin(std::filesystem::path socket_path,
                                               pluginregistration::PluginInfo info)
    : socket_path_(std::move(socket_path)), info_(std::move(info)) {}

FakeRegistrationPlugin::~FakeRegistrationPlugin() { Stop(); }

absl::Status FakeRegistrationPlugin::Serve() {
  service_ = std::make_unique<Service>(*this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(UnixTarget(socket_path_), grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::InternalError(absl::StrCat("cannot serve on ", socket_path_.string()));
  }
  return absl::OkStatus();
}

void FakeRegistrationPlugin::Stop() {
  if (server_ == nullptr) return;
  {
    absl::MutexLock lock(&mu_);
    for (grpc::ServerUnaryReactor* reactor : hung_) {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "plugin stopped"));
    }
    hung_.clear();
  }
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  server_.reset();
  (void)RemoveStaleSocket(socket_path_);
}

void FakeRegistrationPlugin::FailGetInfo(int n) {
  absl::MutexLock lock(&mu_);
  get_info_failures_ = n;
}

void FakeRegistrationPlugin::HangGetInfo() {
  absl::MutexLock lock(&mu_);
  hang_get_info_ = true;
}

int FakeRegistrationPlugin::get_info_calls() const {
  absl::MutexLock lock(&mu_);
  return get_info_calls_;
}

std::vector<pluginregistration::RegistrationStatus> FakeRegistrationPlugin::statuses() const {
  absl::MutexLock lock(&mu_);
  return statuses_;
}

bool FakeRegistrationPlugin::registered() const {
  absl::MutexLock lock(&mu_);
  return !statuses_.empty() && statuses_.back().plugin_registered();
}

std::string FakeRegistrationPlugin::last_error() const {
  absl::MutexLock lock(&mu_);
  return statuses_.empty() ? "" : statuses_.back().error();
}

HungSocket::HungSocket(std::filesystem::path socket_path) : socket_path_(std::move(socket_path)) {}

HungSocket::~HungSocket() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  for (int fd : connections_) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  (void)RemoveStaleSocket(socket_path_);
}

absl::Status HungSocket::Listen() {
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return absl::InternalError(std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path_.c_str(), sizeof(addr.sun_path) - 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API.
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 16) != 0) {
    return absl::InternalError(std::strerror(errno));
  }
  thread_ = std::thread([this] { AcceptLoop(); });
  return absl::OkStatus();
}

void HungSocket::AcceptLoop() {
  while (!stop_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 20) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    connections_.push_back(fd);
    ++accepted_;
  }
}

}  // namespace devmgr::testing
