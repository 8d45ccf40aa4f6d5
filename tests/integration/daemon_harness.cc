#include "tests/integration/daemon_harness.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "common/unix_socket.h"
#include "podresources/v1/api.grpc.pb.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::testing {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

std::vector<std::string> Args(std::vector<std::string> args) {
  args.insert(args.begin(), DevmgrBinary());
  return args;
}

}  // namespace

std::filesystem::path DaemonHarness::CheckpointPath() const {
  return Path("device-plugins/kubelet_internal_checkpoint");
}

std::set<std::filesystem::path> DaemonHarness::StateTemporaryFiles() const {
  std::set<std::filesystem::path> found;
  for (const std::filesystem::path& folder : {Path(""), Path("device-plugins")}) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with('.') && name.find(".tmp-") != std::string::npos) {
        found.insert(entry.path());
      }
    }
  }
  return found;
}

std::unique_ptr<BackgroundProcess> DaemonHarness::StartServe(
    const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"serve", "--root-dir", Root(), "--node-status-interval",
                                   "100ms"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto serve = std::make_unique<BackgroundProcess>(Args(args));
  // The admin socket is put in place last, with its final mode, so once it accepts connections
  // every service does. Asked here, not with a client command: each would be a process start,
  // and a restart waited on that way took about ten of them.
  const bool serving = WaitFor(
      [&] { return serve->Wait(0ms).has_value() || SomeoneListens(Path("devmgr.sock")); }, 20s);
  if (!serving || serve->Wait(0ms).has_value()) {
    ADD_FAILURE() << "devmgr serve is not serving: " << serve->err();
    return nullptr;
  }
  return serve;
}

std::unique_ptr<BackgroundProcess> DaemonHarness::StartPlugin(
    const std::string& resource, int devices, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {
      "plugin",       "fake",   "--root-dir",       Root(),
      "--resource",   resource, "--devices",        std::to_string(devices),
      "--numa-nodes", "2",      "--check-interval", "50ms"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto plugin = std::make_unique<BackgroundProcess>(Args(args));
  EXPECT_TRUE(plugin->started());
  return plugin;
}

std::unique_ptr<BackgroundProcess> DaemonHarness::StartDraDriver(
    const std::string& driver, int devices, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"plugin",   "fake-dra", "--root-dir", Root(),
                                   "--driver", driver,     "--devices",  std::to_string(devices)};
  args.insert(args.end(), extra.begin(), extra.end());
  auto plugin = std::make_unique<BackgroundProcess>(Args(args));
  EXPECT_TRUE(plugin->started());
  return plugin;
}

std::filesystem::path DaemonHarness::PluginSocket(const std::string& resource) const {
  std::string name = resource;
  name[name.find('/')] = '-';
  return Path("device-plugins/" + name + ".sock");
}

ProcessResult DaemonHarness::Run(std::vector<std::string> args, const std::string& input) const {
  return RunProcess(Args(std::move(args)), input);
}

ProcessResult DaemonHarness::Admit(const std::string& manifest) const {
  return Run({"pods", "admit", "--root-dir", Root(), "-"}, manifest);
}

ProcessResult DaemonHarness::Remove(const std::string& uid) const {
  return Run({"pods", "remove", "--root-dir", Root(), uid});
}

int DaemonHarness::Allocatable(const std::string& resource) const {
  auto stub = ::v1::PodResourcesLister::NewStub(grpc::CreateChannel(
      UnixTarget(Path("pod-resources/kubelet.sock")), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 5s);
  ::v1::AllocatableResourcesResponse response;
  if (!stub->GetAllocatableResources(&context, ::v1::AllocatableResourcesRequest(), &response)
           .ok()) {
    return -1;
  }
  int count = 0;
  for (const ::v1::ContainerDevices& devices : response.devices()) {
    if (devices.resource_name() == resource) count += devices.device_ids_size();
  }
  return count;
}

Json DaemonHarness::ListPods() const {
  ProcessResult result = Run({"pods", "list", "--root-dir", Root(), "-o", "json"});
  if (result.exit_code != 0) return nullptr;
  Json json = Json::parse(result.out, nullptr, false);
  return json.is_discarded() ? Json(nullptr) : json;
}

std::map<std::string, std::vector<std::string>> DaemonHarness::PodDevices() const {
  std::map<std::string, std::vector<std::string>> devices;
  const Json pods = ListPods();
  EXPECT_FALSE(pods.is_null()) << "pods list failed";
  if (pods.is_null()) return devices;
  for (const auto& pod : pods.value("pods", Json::array())) {
    std::vector<std::string>& held = devices[pod["pod"].value("uid", "")];
    for (const auto& container : pod.value("containers", Json::array())) {
      for (const auto& resource : container.value("resources", Json::array())) {
        for (const auto& device : resource.value("devices", Json::array())) {
          held.push_back(resource.value("resourceName", "") + "/" + device.value("id", ""));
        }
      }
    }
  }
  return devices;
}

std::string DaemonHarness::VerifyCheckpoint() const {
  ProcessResult verified = Run({"checkpoint", "verify", CheckpointPath().string()});
  return verified.exit_code == 0 ? "" : verified.out + verified.err;
}

pid_t DaemonHarness::DaemonPid() const {
  std::ifstream in(Path("devmgr.lock"));
  pid_t pid = -1;
  if (!(in >> pid)) return -1;
  return pid;
}

bool DaemonHarness::MapsLibrary(pid_t pid, const std::string& name) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(name) != std::string::npos) return true;
  }
  return false;
}

void DaemonHarness::Stop(BackgroundProcess& process) {
  process.Signal(SIGTERM);
  std::optional<int> code = process.Wait(20s);
  ASSERT_TRUE(code.has_value()) << "did not stop";
  EXPECT_EQ(*code, 0) << process.err();
}

std::string PodManifest(const std::string& uid, const std::string& resource, int count) {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + uid + "\n  namespace: default\n" +
         "  uid: " + uid + "\nspec:\n  containers:\n  - name: c\n    resources:\n" +
         "      limits:\n        " + resource + ": " + std::to_string(count) + "\n";
}

int PodsCommand(const DaemonHarness& h, std::vector<std::string> args, const std::string& input) {
  args.insert(args.begin() + 1, {"--root-dir", h.Root(), "--timeout", "3s"});
  args.insert(args.begin(), "pods");
  return h.Run(args, input).exit_code;
}

bool KillDuringCommands(BackgroundProcess& daemon, std::mt19937& random, int part_ms,
                        const std::function<bool()>& command) {
  std::atomic<bool> stop{false};
  std::atomic<int> attempts{0};
  std::thread stream([&] {
    while (!stop) {
      ++attempts;
      if (!command()) return;
    }
  });
  const int after = std::uniform_int_distribution<int>(1, 4)(random);
  EXPECT_TRUE(WaitFor([&] { return attempts >= after; }, 30s));
  std::this_thread::sleep_for(  // not a wait: where in the command the kill lands
      std::chrono::milliseconds(std::uniform_int_distribution<int>(0, part_ms)(random)));
  stop = true;
  daemon.Signal(SIGKILL);
  const bool exited = daemon.Wait(10s).has_value();
  stream.join();
  return exited;
}

int FaultKillCount() {
  const char* text = std::getenv("DEVMGR_FAULT_KILLS");
  int count = 10;
  if (text != nullptr && !absl::SimpleAtoi(text, &count)) count = 10;
  return count;
}

}  // namespace devmgr::testing
