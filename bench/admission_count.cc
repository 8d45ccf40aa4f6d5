// admission_count: admits one-device pods through the embeddable devicemanager::Manager, for
// scripts/callgrind-admission.sh to count the instructions of one admission under callgrind
// (a figure that does not drift with machine noise, unlike a latency).
//
// The node: a Manager (no topology, no admission wait) and one FakeDevicePlugin of 64 devices
// that answers Allocate at once with an empty response, as in bench/admission_bench.cc. The
// plugin runs in a child process forked before this process touches gRPC, so none of the
// plugin's work can land in the count, not even when a gRPC poller thread of this process
// would otherwise have run the plugin server's side of the call.
//
// Each admission makes a new pod the only active one and calls Manager::Allocate for its one
// container, so it first frees the previous pod's device (UpdateAllocatedDevices), then picks
// a device, calls the plugin and writes the one-pod checkpoint, as every steady-state
// admission does. --warmup admissions run first, uncounted (the first one pays for lazy
// set-up); then each of --admissions calls is wrapped in
//   --scope=thread (default): CALLGRIND_TOGGLE_COLLECT, the admitting thread only (run
//     callgrind with --collect-atstart=no);
//   --scope=process: CALLGRIND_START_INSTRUMENTATION / CALLGRIND_STOP_INSTRUMENTATION, every
//     thread of this process while Allocate runs (run callgrind with --instr-atstart=no).
// Outside valgrind the macros do nothing: the program then only checks that admissions work
// (the bench suite's smoke test runs it so).
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "devicemanager/manager.h"
#include "tests/testlib/fake_device_plugin.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::bench {
namespace {

constexpr char kResource[] = "count.example.com/dev";
constexpr int kDevices = 64;

// The child: once kubelet.sock is there, serves the plugin and registers, and serves until the
// parent closes `parent_alive` (by exiting or by closing it). Never returns. It starts its server
// only after the socket appears because the manager's Start removes every socket already in
// the folder (as the kubelet's does) before it creates kubelet.sock: a plugin socket made
// earlier could be gone by the time the manager dials it.
[[noreturn]] void RunPlugin(const testing::TempDir& dir, int parent_alive) {
  bool socket_there = false;
  for (int i = 0; i < 6000 && !socket_there; ++i) {
    socket_there = std::filesystem::exists(dir.Sub("kubelet.sock"));
    if (!socket_there) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  testing::FakeDevicePlugin plugin(dir.Sub("p.sock"), kResource, testing::MakeDevices(kDevices));
  int code = 1;
  // Register is tried again while the manager's server, bound already, is not yet listening.
  bool registered = false;
  if (socket_there && plugin.Start().ok()) {
    for (int i = 0; i < 3000 && !registered; ++i) {
      registered = plugin.Register(dir.Sub("kubelet.sock")).ok();
      if (!registered) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (registered) {
    char byte = 0;
    while (::read(parent_alive, &byte, 1) > 0) {
    }
    code = 0;
  }
  plugin.Stop();
  // _exit: the TempDir belongs to the parent, and no destructor of the parent's may run here.
  ::_exit(code);
}

int Run(int admissions, int warmup, bool process_scope) {
  testing::TempDir dir;
  int alive[2];
  if (::pipe(alive) != 0) return 1;
  const pid_t child = ::fork();
  if (child < 0) return 1;
  if (child == 0) {
    ::close(alive[1]);
    RunPlugin(dir, alive[0]);
  }
  ::close(alive[0]);

  int code = 0;
  {
    absl::Mutex mu;
    std::string active;
    devicemanager::ManagerOptions options;
    options.plugin_dir = dir.path();
    devicemanager::ManagerPtr manager = devicemanager::CreateManager(options);
    if (!manager
             ->Start(
                 [&] {
                   absl::MutexLock lock(&mu);
                   return std::vector<std::string>{active};
                 },
                 [] { return true; })
             .ok()) {
      std::fprintf(stderr, "admission_count: the manager did not start\n");
      code = 1;
    }
    // Up to a minute: under valgrind the plugin starts slowly.
    for (int i = 0; code == 0 && manager->GetCapacity().allocatable[kResource] != kDevices; ++i) {
      if (i == 6000) {
        std::fprintf(stderr, "admission_count: the plugin did not register\n");
        code = 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (int i = 0; code == 0 && i < warmup + admissions; ++i) {
      const std::string uid = absl::StrCat("pod-", i);
      {
        absl::MutexLock lock(&mu);
        active = uid;
      }
      const devicemanager::Pod pod{
          uid,
          "count",
          uid,
          {},
          {devicemanager::Container{
              "c", devicemanager::ContainerType::kRegular, {{kResource, 1}}}}};
      const bool counted = i >= warmup;
      if (counted && process_scope) CALLGRIND_START_INSTRUMENTATION;
      if (counted && !process_scope) CALLGRIND_TOGGLE_COLLECT;
      const absl::Status status = manager->Allocate(pod, pod.containers[0]);
      if (counted && !process_scope) CALLGRIND_TOGGLE_COLLECT;
      if (counted && process_scope) CALLGRIND_STOP_INSTRUMENTATION;
      if (!status.ok()) {
        std::fprintf(stderr, "admission_count: admission %d failed: %s\n", i,
                     status.ToString().c_str());
        code = 1;
      }
    }
    manager->Stop();
  }
  ::close(alive[1]);  // the child stops serving and exits
  int child_status = 0;
  ::waitpid(child, &child_status, 0);
  if (code == 0) std::printf("admissions counted: %d\n", admissions);
  return code;
}

}  // namespace
}  // namespace devmgr::bench

int main(int argc, char** argv) {
  int admissions = 20;
  int warmup = 3;
  bool process_scope = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    bool ok = true;
    if (absl::StartsWith(arg, "--admissions=")) {
      ok = absl::SimpleAtoi(arg.substr(13), &admissions) && admissions > 0;
    } else if (absl::StartsWith(arg, "--warmup=")) {
      ok = absl::SimpleAtoi(arg.substr(9), &warmup) && warmup >= 0;
    } else if (arg == "--scope=process" || arg == "--scope=thread") {
      process_scope = arg == "--scope=process";
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "usage: admission_count [--admissions=N] [--warmup=N] "
                   "[--scope=thread|process]\n");
      return 2;
    }
  }
  return devmgr::bench::Run(admissions, warmup, process_scope);
}
