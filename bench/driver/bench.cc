#include "bench/driver/bench.h"

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "bench/driver/bench_daemon.h"
#include "bench/driver/harness.h"
#include "bench/driver/measurements.h"
#include "bench/driver/report.h"

namespace devmgr::bench {
namespace {

namespace fs = std::filesystem;

// A private root under /tmp (short: unix socket paths), removed at the end.
class TempRoot {
 public:
  TempRoot() {
    std::string pattern = "/tmp/devmgr-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempRoot() {
    std::error_code error;
    if (!path_.empty()) fs::remove_all(path_, error);
  }
  TempRoot(const TempRoot&) = delete;
  TempRoot& operator=(const TempRoot&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Prefixed: a failed `status` with its message prefixed by the step's name.
absl::Status Prefixed(absl::string_view what, absl::Status status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(what, ": ", status.message()));
}

}  // namespace

absl::Status Run(const Options& options, std::ostream& out) {
  std::vector<Row> rows;
  auto step = [&](absl::string_view what, const std::function<absl::Status(const fs::path&)>& run) {
    TempRoot root;
    if (root.path().empty()) return absl::InternalError("cannot make a folder under /tmp");
    return Prefixed(what, run(root.path()));
  };
  auto wanted = [&](absl::string_view name) {
    return options.only.empty() || absl::c_linear_search(options.only, name);
  };
  // The measurements of the latency step share one daemon.
  using Measure =
      absl::Status (*)(const fs::path&, BenchDaemon&, const Options&, std::vector<Row>&);
  const std::vector<std::pair<std::string, Measure>> latency = {
      {absl::StrCat("admission latency, ", options.samples, " samples"), MeasureAdmission},
      {"admissions per second", MeasureConcurrentAdmission},
      {absl::StrCat("ListAndWatch of ", options.devices, " devices"), MeasureListAndWatch},
      {absl::StrCat("PodResources List of ", options.pods, " pods"), MeasureList},
  };
  const std::vector<std::pair<std::string, Measure>> dra = {
      {absl::StrCat("DRA admission latency, ", options.samples, " samples"), MeasureDraPrepare},
      {absl::StrCat("DRA admissions per second, ", options.dra_pods, " pods"),
       MeasureConcurrentDra},
      {absl::StrCat("DRA publishing of ", options.publish_devices, " devices"), MeasurePublish},
  };
  const int total = (wanted(kStepLatency) ? static_cast<int>(latency.size()) : 0) +
                    (wanted(kStepDra) ? static_cast<int>(dra.size()) : 0) +
                    (wanted(kStepAllocator) ? 1 : 0) + (wanted(kStepRestart) ? 1 : 0) +
                    (wanted(kStepMemory) ? 1 : 0);
  int started = 0;
  auto announce = [&](absl::string_view what) {
    ++started;
    if (options.progress != nullptr) {
      *options.progress << "devmgr bench: [" << started << "/" << total << "] " << what
                        << std::endl;  // flushed: the measurement that follows may take minutes
    }
  };
  // Measurements that share one daemon, started in the step's root.
  auto with_daemon = [&](absl::string_view what,
                         const std::vector<std::pair<std::string, Measure>>& measures) {
    return step(what, [&](const fs::path& root) {
      announce(measures.front().first);
      auto daemon = BenchDaemon::Start(root, kStartTimeout);
      if (!daemon.ok()) return daemon.status();
      for (size_t i = 0; i < measures.size(); ++i) {
        if (i > 0) announce(measures[i].first);
        if (absl::Status result = measures[i].second(root, **daemon, options, rows); !result.ok()) {
          return result;
        }
      }
      return absl::OkStatus();
    });
  };
  absl::Status status;
  if (wanted(kStepLatency)) status = with_daemon("admission, ListAndWatch, List", latency);
  if (status.ok() && wanted(kStepDra)) status = with_daemon("DRA", dra);
  if (status.ok() && wanted(kStepAllocator)) {
    announce("DRA allocator");
    status = Prefixed("allocator", MeasureAllocator(options, rows));
  }
  if (status.ok() && wanted(kStepRestart)) {
    announce(absl::StrCat("restart with a ", options.checkpoint_entries, "-entry checkpoint"));
    status =
        step("restart", [&](const fs::path& root) { return MeasureRestart(root, options, rows); });
  }
  if (status.ok() && wanted(kStepMemory)) {
    announce(absl::StrCat("memory of ", options.plugins, " plugins x ", options.plugin_devices,
                          " devices and ", options.memory_pods, " pods"));
    status =
        step("memory", [&](const fs::path& root) { return MeasureMemory(root, options, rows); });
  }
  if (!status.ok()) return status;
  PrintReport(options, rows, out);
  return absl::OkStatus();
}

}  // namespace devmgr::bench
