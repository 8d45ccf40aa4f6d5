// Soak (issue 9; `make soak`, never `make test`): for SOAK_SECONDS (default 180) the daemon
// serves 20 flapping plugins that are also killed and restarted at random, 8 admitters
// admitting and removing pods, PodResources readers and watchers. Its RSS, open fds and threads
// are sampled every second; at the end the last third of the run may exceed the first by a
// small bound only, the checkpoint verifies, and `pods list` agrees with `podresources list`.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "tests/integration/daemon_harness.h"
#include "tests/testlib/wait_for.h"

namespace devmgr {
namespace {

using Json = nlohmann::json;
using testing::BackgroundProcess;
using testing::DaemonHarness;
using testing::PodManifest;
using testing::ProcessResult;
using testing::WaitFor;
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)

constexpr int kPlugins = 20;
constexpr int kDevicesPerPlugin = 4;
constexpr int kAdmitters = 8;
constexpr int kReaders = 2;
constexpr int kWatchers = 2;
// How far the last third of the run may exceed the first.
constexpr int64_t kRssBoundKib = 16 * 1024;
constexpr int64_t kFdBound = 32;
constexpr int64_t kThreadBound = 8;

int SoakSeconds() {
  const char* text = std::getenv("SOAK_SECONDS");
  int seconds = 180;
  if (text != nullptr && !absl::SimpleAtoi(text, &seconds)) seconds = 180;
  return seconds;
}

std::string Resource(int i) { return "example.com/r" + std::to_string(i); }

struct Sample {
  int64_t rss_kib = 0;
  int64_t fds = 0;
  int64_t threads = 0;
};

// Measure reads a process's resident memory and threads (/proc/PID/status) and open fds.
Sample Measure(pid_t pid) {
  Sample sample;
  const std::filesystem::path proc = "/proc/" + std::to_string(pid);
  std::ifstream status(proc / "status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") status >> sample.rss_kib;
    if (key == "Threads:") status >> sample.threads;
  }
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator(proc / "fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++sample.fds;
  }
  return sample;
}

// Peak of each figure over samples [begin, end).
Sample Peak(const std::vector<Sample>& samples, size_t begin, size_t end) {
  Sample peak;
  for (size_t i = begin; i < end; ++i) {
    peak.rss_kib = std::max(peak.rss_kib, samples[i].rss_kib);
    peak.fds = std::max(peak.fds, samples[i].fds);
    peak.threads = std::max(peak.threads, samples[i].threads);
  }
  return peak;
}

// PodResourcesDevices: per pod name, "resource/id" for every device `podresources list`
// reports (the soak names each pod after its UID).
std::map<std::string, std::vector<std::string>> PodResourcesDevices(const DaemonHarness& h) {
  std::map<std::string, std::vector<std::string>> devices;
  ProcessResult listed = h.Run({"podresources", "list", "--root-dir", h.Root(), "-o", "json"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  const Json json = Json::parse(listed.out, nullptr, false);
  if (json.is_discarded()) return devices;
  for (const auto& pod : json.value("podResources", Json::array())) {
    std::vector<std::string>& held = devices[pod.value("name", "")];
    for (const auto& container : pod.value("containers", Json::array())) {
      for (const auto& resource : container.value("devices", Json::array())) {
        for (const auto& id : resource.value("deviceIds", Json::array())) {
          held.push_back(resource.value("resourceName", "") + "/" + id.get<std::string>());
        }
      }
    }
  }
  return devices;
}

TEST(SoakTest, DaemonStaysBoundedAndConsistentUnderLoad) {
  DaemonHarness h;
  auto serve = h.StartServe({"--admission-wait", "2s", "--plugin-call-timeout", "5s",
                             "--podresources-qps", "100000", "--podresources-burst", "100000"});
  ASSERT_NE(serve, nullptr);
  const pid_t pid = h.DaemonPid();
  ASSERT_GT(pid, 0);

  std::vector<std::unique_ptr<BackgroundProcess>> plugins;
  auto start_plugin = [&](int i) {
    return h.StartPlugin(Resource(i), kDevicesPerPlugin, {"--flip-every", "300ms"});
  };
  for (int i = 0; i < kPlugins; ++i) plugins.push_back(start_plugin(i));
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < kPlugins; ++i) {
          if (h.Allocatable(Resource(i)) < 0) return false;
        }
        return true;
      },
      60s));

  std::atomic<bool> stop{false};
  std::atomic<int> admitted{0}, refused{0}, removed{0}, reads{0}, restarts{0};
  std::vector<std::thread> load;
  for (int a = 0; a < kAdmitters; ++a) {
    load.emplace_back([&, a] {
      std::mt19937 random(static_cast<unsigned>(a));
      std::vector<std::string> mine;
      for (int n = 0; !stop; ++n) {
        if (mine.size() >= 2) {
          if (h.Remove(mine.front()).exit_code == 0) ++removed;
          mine.erase(mine.begin());
          continue;
        }
        const std::string uid = "soak-" + std::to_string(a) + "-" + std::to_string(n);
        const int resource = std::uniform_int_distribution<int>(0, kPlugins - 1)(random);
        if (h.Admit(PodManifest(uid, Resource(resource), 1)).exit_code == 0) {
          ++admitted;
          mine.push_back(uid);
        } else {
          ++refused;
        }
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    load.emplace_back([&] {
      while (!stop) {
        if (h.Run({"podresources", "list", "--root-dir", h.Root()}).exit_code == 0) ++reads;
        if (h.Run({"podresources", "allocatable", "--root-dir", h.Root()}).exit_code == 0) {
          ++reads;
        }
      }
    });
  }
  std::vector<std::unique_ptr<BackgroundProcess>> watchers;
  for (int w = 0; w < kWatchers; ++w) {
    watchers.push_back(std::make_unique<BackgroundProcess>(std::vector<std::string>{
        testing::DevmgrBinary(), "podresources", "watch", "--root-dir", h.Root()}));
  }

  // Sample once a second; once a second also kill (SIGKILL or SIGTERM) a random plugin and
  // start it again.
  std::mt19937 random(std::random_device{}());
  std::vector<Sample> samples;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(SoakSeconds());
  while (std::chrono::steady_clock::now() < end) {
    const auto next = std::chrono::steady_clock::now() + 1s;
    samples.push_back(Measure(pid));
    const int victim = std::uniform_int_distribution<int>(0, kPlugins - 1)(random);
    plugins[victim]->Signal(random() % 2 == 0 ? SIGKILL : SIGTERM);
    ASSERT_TRUE(plugins[victim]->Wait(10s).has_value());
    plugins[victim] = start_plugin(victim);
    ++restarts;
    std::this_thread::sleep_until(next);  // the sampling period, not a wait for a condition
    ASSERT_FALSE(serve->Wait(0ms).has_value()) << "the daemon died: " << serve->err();
  }
  stop = true;
  for (auto& thread : load) thread.join();
  for (auto& watcher : watchers) {
    EXPECT_FALSE(watcher->Wait(0ms).has_value()) << "a watch stream ended: " << watcher->err();
    watcher->Signal(SIGTERM);
  }

  ASSERT_GE(samples.size(), 6u) << "too short to compare thirds";
  const size_t third = samples.size() / 3;
  const Sample first = Peak(samples, 0, third);
  const Sample last = Peak(samples, samples.size() - third, samples.size());
  std::cout << "soak: " << samples.size() << " s, plugin restarts " << restarts.load()
            << ", admitted " << admitted.load() << ", refused " << refused.load() << ", removed "
            << removed.load() << ", PodResources reads " << reads.load() << "\n"
            << "soak: first third peak RSS " << first.rss_kib << " KiB, fds " << first.fds
            << ", threads " << first.threads << "; last third peak RSS " << last.rss_kib
            << " KiB, fds " << last.fds << ", threads " << last.threads << "\n";
  EXPECT_LE(last.rss_kib, first.rss_kib + kRssBoundKib);
  EXPECT_LE(last.fds, first.fds + kFdBound);
  EXPECT_LE(last.threads, first.threads + kThreadBound);
  EXPECT_GT(admitted.load(), 0);

  EXPECT_EQ(h.VerifyCheckpoint(), "");
  std::map<std::string, std::vector<std::string>> daemon = h.PodDevices();
  std::map<std::string, std::vector<std::string>> podresources = PodResourcesDevices(h);
  for (auto* view : {&daemon, &podresources}) {
    for (auto& [pod, devices] : *view) std::sort(devices.begin(), devices.end());
  }
  EXPECT_EQ(daemon, podresources);
  std::map<std::string, std::string> owner;
  for (const auto& [uid, devices] : daemon) {
    for (const auto& device : devices) {
      auto [it, fresh] = owner.emplace(device, uid);
      EXPECT_TRUE(fresh) << device << " held by " << it->second << " and " << uid;
    }
  }
  for (auto& plugin : plugins) plugin->Signal(SIGTERM);
  DaemonHarness::Stop(*serve);
}

}  // namespace
}  // namespace devmgr
