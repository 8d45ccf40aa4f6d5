// The driver of `devmgr bench`: end-to-end measurements of a real `devmgr serve` (a child
// process) with real SDK plugins on unix sockets in a temporary root, each beside its floor
// measured in the same run: the cheapest way to do the same physical work. The command line
// (cmd/devmgr/bench_cmd.h) fills Options from its flags and calls Run; the report is the median,
// p99, the floor's median and their ratio of each measurement, as a table or as JSON.
//
// The daemon is this program run again (/proc/self/exe serve ...; bench_daemon.h), so the driver
// works only when linked into the `devmgr` program.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace devmgr::bench {

// The steps, each against a daemon of its own, that Options::only selects.
inline constexpr char kStepLatency[] = "latency";
inline constexpr char kStepDra[] = "dra";
inline constexpr char kStepAllocator[] = "allocator";
inline constexpr char kStepRestart[] = "restart";
inline constexpr char kStepMemory[] = "memory";

enum class ReportFormat { kTable, kJson };

// Options: the sizes of the measurements. The defaults are the sizes of docs/PERFORMANCE.md.
struct Options {
  // --quick. Its tiny sizes are the command line's to fill in; here it only shortens the
  // calls-per-second runs (0.1 s instead of 2 s).
  bool quick = false;
  int samples = 200;
  int devices = 100000;
  int pods = 1000;
  int checkpoint_entries = 10000;
  int plugins = 256;
  int plugin_devices = 400;
  int memory_pods = 10000;
  // For how admission cost grows: the admission plugin's devices, and pods admitted before.
  int admission_devices = 8;
  int admitted_pods = 0;
  // Pods (of 2 ResourceClaims each) of the concurrent DRA admissions.
  int dra_pods = 100;
  // For how DRA admission cost grows: the claims of the measured pod, and pods (with as many
  // claims) admitted before.
  int dra_claims = 1;
  int dra_admitted_pods = 0;
  // Devices of the pool published as ResourceSlices.
  int publish_devices = 10000;
  // The steps to run ("latency", "dra", "allocator", "restart", "memory"); empty for all.
  std::vector<std::string> only;
  ReportFormat format = ReportFormat::kTable;
  // Where Run says which measurement it is on, one line as each starts ("devmgr bench: [3/6]
  // ListAndWatch of 100000 devices"); nullptr for silence. Not owned.
  std::ostream* progress = nullptr;
};

// Run runs the steps `options` selects, each in a private root under /tmp that is removed after
// it, and prints the report on `out` once every step has run. It blocks for as long as the
// measurements take (minutes at the default sizes). On the first step that fails it stops and
// returns that error, prefixed with the step's name; nothing is printed then.
absl::Status Run(const Options& options, std::ostream& out);

}  // namespace devmgr::bench
