// Memory: the daemon's resident memory, idle and under load.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/driver/admin_calls.h"
#include "bench/driver/harness.h"
#include "bench/driver/measurements.h"

namespace devmgr::bench {
namespace {

namespace fs = std::filesystem;

double MiB(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

absl::Status MeasureMemory(const fs::path& root, const Options& flags, std::vector<Row>& rows) {
  auto daemon = BenchDaemon::Start(root, kStartTimeout);
  if (!daemon.ok()) return daemon.status();
  auto idle = (*daemon)->ResidentBytes();
  if (!idle.ok()) return idle.status();
  rows.push_back(Row{"resident memory, idle", "MiB", MiB(*idle), std::nullopt, std::nullopt, ""});

  std::vector<std::unique_ptr<deviceplugin::Plugin>> plugins;
  for (int p = 0; p < flags.plugins; ++p) {
    auto plugin = StartPlugin(root, absl::StrCat("m", p), flags.plugin_devices);
    if (!plugin.ok()) return plugin.status();
    plugins.push_back(*std::move(plugin));
  }
  if (absl::Status status =
          WaitAllocatable(**daemon, "", int64_t{flags.plugins} * flags.plugin_devices);
      !status.ok()) {
    return status;
  }
  auto admitted = AdmitMany(**daemon, flags.memory_pods, 8, [&](int i) {
    return PodRequest(
        MakePod(absl::StrCat("mem-", i), Resource(absl::StrCat("m", i % flags.plugins)), 1, 1));
  });
  if (!admitted.ok()) return admitted.status();
  auto trims = HeapTrims(**daemon);
  if (!trims.ok()) return trims.status();
  auto busy = (*daemon)->ResidentBytes();
  if (!busy.ok()) return busy.status();
  if (absl::Status trimmed = WaitHeapTrimmed(**daemon, *trims); !trimmed.ok()) return trimmed;
  auto loaded = (*daemon)->ResidentBytes();
  auto peak = (*daemon)->ResidentBytes(/*peak=*/true);
  if (!loaded.ok()) return loaded.status();
  if (!peak.ok()) return peak.status();
  const std::string load = absl::StrCat(flags.plugins, " plugins x ", flags.plugin_devices,
                                        " devices + ", flags.memory_pods, " pods");
  rows.push_back(Row{absl::StrCat("resident memory, ", load, ", right after the last admission"),
                     "MiB", MiB(*busy), std::nullopt, std::nullopt, ""});
  rows.push_back(Row{absl::StrCat("resident memory, ", load), "MiB", MiB(*loaded), std::nullopt,
                     std::nullopt, ""});
  rows.push_back(Row{absl::StrCat("peak resident memory, ", load), "MiB", MiB(*peak), std::nullopt,
                     std::nullopt, ""});
  return absl::OkStatus();
}

}  // namespace devmgr::bench
