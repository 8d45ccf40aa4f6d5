#include "bench/driver/bench_daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "podresources/client.h"
#include "podresources/v1/api.grpc.pb.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): posix_spawn's argument

namespace devmgr::bench {
namespace {

// ThisProgram: the devmgr binary this benchmark runs in.
absl::StatusOr<std::filesystem::path> ThisProgram() {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return absl::InternalError(absl::StrCat("no /proc/self/exe: ", error.message()));
  return self;
}

}  // namespace

absl::Status RunThisProgram(const std::vector<std::string>& args) {
  absl::StatusOr<std::filesystem::path> self = ThisProgram();
  if (!self.ok()) return self.status();
  std::vector<std::string> all = {self->string()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : all) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return absl::InternalError(absl::StrCat("cannot start devmgr: errno ", rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waitpid: errno ", errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(
        absl::StrCat("devmgr ", absl::StrJoin(args, " "), " failed: wait status ", status));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BenchDaemon>> BenchDaemon::Start(const std::filesystem::path& root,
                                                                absl::Duration timeout) {
  absl::StatusOr<std::filesystem::path> self = ThisProgram();
  if (!self.ok()) return self.status();
  const std::filesystem::path metrics_socket = root / "metrics.sock";
  std::vector<std::string> args = {
      self->string(),       "serve",
      "--root-dir",         root.string(),
      "--log-level",        "error",
      "--podresources-qps", "0",
      "--metrics-address",  absl::StrCat("unix:", metrics_socket.string())};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  // posix_spawn, not fork: this process has gRPC threads, and a forked copy of them is unsafe.
  if (int rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ); rc != 0) {
    return absl::InternalError(absl::StrCat("cannot start devmgr serve: errno ", rc));
  }
  std::unique_ptr<BenchDaemon> daemon(new BenchDaemon(pid, metrics_socket));

  // The socket file appears when the service listens; dialing earlier would only add gRPC's
  // reconnect backoff to the measured start.
  const absl::Time deadline = absl::Now() + timeout;
  const std::filesystem::path podresources_socket = root / "pod-resources" / "kubelet.sock";
  std::error_code error;
  while (!std::filesystem::exists(podresources_socket, error)) {
    if (absl::Now() > deadline) return absl::UnavailableError("devmgr serve did not start");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  auto podresources = podresources::Dial({podresources_socket, deadline - absl::Now()});
  if (!podresources.ok()) return podresources.status();
  daemon->podresources_ = *podresources;
  auto stub = ::v1::PodResourcesLister::NewStub(daemon->podresources_);
  for (;;) {
    grpc::ClientContext context;
    ::v1::ListPodResourcesResponse response;
    if (stub->List(&context, {}, &response).ok()) break;
    if (absl::Now() > deadline) return absl::UnavailableError("PodResources does not answer");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  auto admin = podresources::Dial({root / "devmgr.sock", deadline - absl::Now()});
  if (!admin.ok()) return admin.status();
  daemon->admin_ = *admin;
  return daemon;
}

BenchDaemon::~BenchDaemon() {
  admin_.reset();
  podresources_.reset();
  ::kill(pid_, SIGTERM);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

absl::StatusOr<int64_t> BenchDaemon::ResidentBytes(bool peak) const {
  // A stream, not ReadWholeFile: /proc files report size 0.
  std::ifstream in(absl::StrCat("/proc/", pid_, "/status"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const absl::string_view key = peak ? "VmHWM:" : "VmRSS:";
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, key)) continue;
    line = absl::StripAsciiWhitespace(line);
    int64_t kib = 0;
    if (!absl::ConsumeSuffix(&line, " kB") || !absl::SimpleAtoi(line, &kib)) break;
    return kib * 1024;
  }
  return absl::InternalError(absl::StrCat("no ", key, " in /proc/", pid_, "/status"));
}

}  // namespace devmgr::bench
