#include "cmd/devmgr/bench_cmd.h"

#include <unistd.h>

#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "bench/driver/bench.h"
#include "cmd/devmgr/command_tree.h"

namespace devmgr::cli {
namespace {

// The command line of `devmgr bench`: the driver's options, and the output flag, which the
// driver sees as a ReportFormat.
struct BenchFlags {
  bench::Options options;
  OutputFormat format = OutputFormat::kTable;
};

int RunBench(const BenchFlags& flags) {
  bench::Options options = flags.options;
  options.format = flags.format == OutputFormat::kJson ? bench::ReportFormat::kJson
                                                       : bench::ReportFormat::kTable;
  // A person watching a terminal is told which measurement runs (a full run takes minutes); a
  // script capturing stderr gets only failures there.
  if (::isatty(STDERR_FILENO) == 1) options.progress = &std::cerr;
  if (absl::Status status = bench::Run(options, std::cout); !status.ok()) {
    return Fail(kExitNo, status.ToString());
  }
  return kExitOk;
}

}  // namespace

void AddBenchCommand(CLI::App& app, CommandResult& result) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* bench = app.add_subcommand(
      "bench", "Measure a real devmgr serve with real plugins, each path beside its floor");
  bench->add_flag("--quick", flags->options.quick,
                  "Tiny sizes, to check that every measurement runs");
  struct Size {
    const char* flag;
    int bench::Options::*field;
    int quick;
    const char* help;
    bool zero_allowed = false;
  };
  const std::vector<Size> sizes = {
      {"--samples", &bench::Options::samples, 5, "Samples per latency measurement"},
      {"--devices", &bench::Options::devices, 100, "Devices of the ListAndWatch plugin"},
      {"--pods", &bench::Options::pods, 4,
       "Pods (x 4 containers x 2 devices) for PodResources List"},
      {"--checkpoint-entries", &bench::Options::checkpoint_entries, 10,
       "Entries of the restart checkpoint"},
      {"--plugins", &bench::Options::plugins, 2, "Plugins for the memory measurement"},
      {"--plugin-devices", &bench::Options::plugin_devices, 4, "Devices per plugin for memory"},
      {"--memory-pods", &bench::Options::memory_pods, 4, "One-device pods for memory"},
      {"--admission-devices", &bench::Options::admission_devices, 8,
       "Devices of the plugin that single admissions use"},
      {"--admitted-pods", &bench::Options::admitted_pods, 0,
       "One-device pods admitted before single admissions are measured", true},
      {"--dra-pods", &bench::Options::dra_pods, 4,
       "Pods (x 2 ResourceClaims) of the concurrent DRA admissions"},
      {"--dra-claims", &bench::Options::dra_claims, 1,
       "ResourceClaims of the pod that single DRA admissions admit"},
      {"--dra-admitted-pods", &bench::Options::dra_admitted_pods, 0,
       "Pods (with as many claims) admitted before single DRA admissions are measured", true},
      {"--publish-devices", &bench::Options::publish_devices, 256,
       "Devices of the pool published as ResourceSlices"},
  };
  std::vector<std::pair<CLI::Option*, Size>> options;
  for (const Size& size : sizes) {
    CLI::Option* option = bench->add_option(size.flag, flags->options.*size.field, size.help)
                              ->capture_default_str()
                              ->transform(DecimalInteger<int>())
                              ->check(size.zero_allowed ? NonNegative() : Positive());
    options.emplace_back(option, size);
  }
  bench
      ->add_option("--only", flags->options.only,
                   "Run only these steps: latency (admission, ListAndWatch, List), dra (pods "
                   "with ResourceClaims, publishing ResourceSlices), allocator (the DRA "
                   "allocator, in this process), restart, memory; repeat or separate with commas")
      ->type_name("STEP")
      ->delimiter(',')
      ->check(CLI::IsMember({bench::kStepLatency, bench::kStepDra, bench::kStepAllocator,
                             bench::kStepRestart, bench::kStepMemory}));
  AddOutputFlag(*bench, flags->format, OutputFormats::kTableAndJson);
  SetExamples(*bench, {{"Check that every measurement runs, in seconds", "devmgr bench --quick"},
                       {"The restart and memory measurements at full size, as JSON",
                        "devmgr bench --only restart,memory -o json"}});
  bench->callback([flags, options, &result] {
    BenchFlags run = *flags;
    // --quick replaces the defaults only: a size given on the command line still counts.
    for (const auto& [option, size] : options) {
      if (run.options.quick && option->count() == 0) run.options.*size.field = size.quick;
    }
    result.exit_code = RunBench(run);
  });
}

}  // namespace devmgr::cli
