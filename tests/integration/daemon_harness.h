// DaemonHarness: a temporary root with `devmgr serve`, `devmgr plugin fake` and the client
// commands run in it as separate processes, as a user runs them. For the fault, mode and soak
// tests, which all drive the real daemon from outside.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/testlib/subprocess.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::testing {

class DaemonHarness {
 public:
  std::string Root() const { return root_.path().string(); }
  std::filesystem::path Path(const std::string& relative) const { return root_.path() / relative; }
  std::filesystem::path CheckpointPath() const;

  // StartServe starts the daemon and waits (20s at most) for its admin socket; null if it
  // exited or never served, with the reason added to the test's failures.
  std::unique_ptr<BackgroundProcess> StartServe(const std::vector<std::string>& extra = {});
  // StartPlugin starts `devmgr plugin fake` for `resource` without waiting for it.
  std::unique_ptr<BackgroundProcess> StartPlugin(const std::string& resource, int devices,
                                                 const std::vector<std::string>& extra = {});
  // StartDraDriver starts `devmgr plugin fake-dra` for `driver` without waiting for it; it
  // registers through plugins_registry/ and reads claims from the daemon's admin API.
  std::unique_ptr<BackgroundProcess> StartDraDriver(const std::string& driver, int devices,
                                                    const std::vector<std::string>& extra = {});
  // PluginSocket: where the fake plugin of `resource` serves (device-plugins/NS-TYPE.sock).
  std::filesystem::path PluginSocket(const std::string& resource) const;

  // Run runs `devmgr ARGS...` to completion.
  ProcessResult Run(std::vector<std::string> args, const std::string& input = "") const;
  ProcessResult Admit(const std::string& manifest) const;
  ProcessResult Remove(const std::string& uid) const;
  // Allocatable: the devices of `resource` PodResources v1 reports (asked from this process, as
  // a monitoring client does), -1 if it cannot be asked.
  int Allocatable(const std::string& resource) const;
  // ListPods: `pods list -o json`, or null if the daemon did not answer.
  nlohmann::json ListPods() const;
  // PodDevices: per admitted pod UID, the devices each of its containers holds, as
  // "resource/id" strings, from `pods list`.
  std::map<std::string, std::vector<std::string>> PodDevices() const;
  // VerifyCheckpoint: `checkpoint verify` on the daemon's checkpoint; "" when it passes.
  std::string VerifyCheckpoint() const;
  // StateTemporaryFiles: the temporary files of state writes (".NAME.tmp-XXXXXX") in the root
  // and device-plugins/, such as a kill inside a write leaves.
  std::set<std::filesystem::path> StateTemporaryFiles() const;
  // DaemonPid: the pid the running daemon wrote into devmgr.lock, -1 if none.
  pid_t DaemonPid() const;
  // MapsLibrary: whether process `pid` has a file whose name contains `name` mapped (its
  // /proc/PID/maps), such as a shared library it loaded.
  static bool MapsLibrary(pid_t pid, const std::string& name);

  // Stop sends SIGTERM and waits for a clean exit.
  static void Stop(BackgroundProcess& process);

 private:
  TempDir root_;
};

// PodManifest: a pod with one container "c" requesting `count` devices of `resource`.
std::string PodManifest(const std::string& uid, const std::string& resource, int count);

// PodsCommand runs `devmgr pods ARGS` with a short client timeout and answers its exit code:
// after a kill, a command finds the daemon's stale socket, and gRPC would retry it for the
// default 10s.
int PodsCommand(const DaemonHarness& h, std::vector<std::string> args,
                const std::string& input = "");

// KillDuringCommands runs `command` (one client command a call; false when it failed) over and
// over on another thread, and kills `daemon` with SIGKILL at a random point: after 1 to 4
// commands begun, plus 0 to `part_ms` milliseconds into one. The command under way is the last:
// none starts against the dead daemon. Returns once the daemon has exited and the commands have
// stopped; false if the daemon did not exit.
bool KillDuringCommands(BackgroundProcess& daemon, std::mt19937& random, int part_ms,
                        const std::function<bool()>& command);

// FaultKillCount: how many times a kill loop kills the daemon (DEVMGR_FAULT_KILLS; 10 by
// default, about 35s on two busy cores; `make soak` asks for 200).
int FaultKillCount();

}  // namespace devmgr::testing
