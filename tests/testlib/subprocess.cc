#include "tests/testlib/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tests/testlib/wait_for.h"

extern char** environ;

namespace devmgr::testing {
namespace {

std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const std::string& input) {
  std::ofstream(dir_.Sub("in"), std::ios::binary) << input;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, dir_.Sub("in").c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, dir_.Sub("out").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, dir_.Sub("err").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  args.reserve(copy.size() + 1);
  for (auto& arg : copy) args.push_back(arg.data());
  args.push_back(nullptr);
  if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ > 0 && !exit_code_.has_value()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void BackgroundProcess::Signal(int signal) {
  if (pid_ > 0 && !exit_code_.has_value()) ::kill(pid_, signal);
}

void BackgroundProcess::Reaped(int status) {
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::optional<int> BackgroundProcess::Wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  WaitFor(
      [&] {
        int status = 0;
        if (!exit_code_.has_value() && ::waitpid(pid_, &status, WNOHANG) == pid_) Reaped(status);
        return exit_code_.has_value();
      },
      timeout);
  return exit_code_;
}

int BackgroundProcess::WaitForExit() {
  int status = 0;
  while (!exit_code_.has_value()) {
    if (::waitpid(pid_, &status, 0) == pid_) {
      Reaped(status);
    } else if (errno != EINTR) {
      throw std::runtime_error("waitpid failed");
    }
  }
  return *exit_code_;
}

std::string BackgroundProcess::out() const { return Slurp(dir_.Sub("out")); }
std::string BackgroundProcess::err() const { return Slurp(dir_.Sub("err")); }

ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input) {
  BackgroundProcess process(argv, input);
  if (!process.started()) throw std::runtime_error("cannot start " + argv[0]);
  ProcessResult result;
  result.exit_code = process.WaitForExit();
  result.out = process.out();
  result.err = process.err();
  return result;
}

std::string DevmgrBinary() {
  const char* bin = std::getenv("DEVMGR_BIN");
  if (bin == nullptr) throw std::runtime_error("DEVMGR_BIN is not set");
  return bin;
}

ProcessResult RunDevmgr(std::vector<std::string> args, const std::string& input) {
  args.insert(args.begin(), DevmgrBinary());
  return RunProcess(args, input);
}

}  // namespace devmgr::testing
