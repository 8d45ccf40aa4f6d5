#include "cmd/devmgr/bench_cmd.h"

#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include "bench/driver/bench.h"

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
  if (absl::Status status = bench::Run(options, std::cout); !status.ok()) {
    return Fail(kExitNo, status.ToString());
  }
  return kExitOk;
}

}  // namespace

void AddBenchCommand(CLI::App& app, CommandResult& result) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* bench = app.add_subcommand(
      "bench", "measure a real devmgr serve with real plugins, each path beside its floor");
  bench->add_flag("--quick", flags->options.quick,
                  "tiny sizes, to check that every measurement runs");
  struct Size {
    const char* flag;
    int bench::Options::*field;
    int quick;
    const char* help;
    bool zero_allowed = false;
  };
  const std::vector<Size> sizes = {
      {"--samples", &bench::Options::samples, 5, "samples per latency measurement"},
      {"--devices", &bench::Options::devices, 100, "devices of the ListAndWatch plugin"},
      {"--pods", &bench::Options::pods, 4,
       "pods (x 4 containers x 2 devices) for PodResources List"},
      {"--checkpoint-entries", &bench::Options::checkpoint_entries, 10,
       "entries of the restart checkpoint"},
      {"--plugins", &bench::Options::plugins, 2, "plugins for the memory measurement"},
      {"--plugin-devices", &bench::Options::plugin_devices, 4, "devices per plugin for memory"},
      {"--memory-pods", &bench::Options::memory_pods, 4, "one-device pods for memory"},
      {"--admission-devices", &bench::Options::admission_devices, 8,
       "devices of the plugin that single admissions use"},
      {"--admitted-pods", &bench::Options::admitted_pods, 0,
       "one-device pods admitted before single admissions are measured", true},
  };
  std::vector<std::pair<CLI::Option*, Size>> options;
  for (const Size& size : sizes) {
    CLI::Option* option =
        bench->add_option(size.flag, flags->options.*size.field, size.help)
            ->capture_default_str()
            ->check(size.zero_allowed ? CLI::NonNegativeNumber : CLI::PositiveNumber);
    options.emplace_back(option, size);
  }
  bench
      ->add_option("--only", flags->options.only,
                   "run only these steps: latency (admission, ListAndWatch, List), restart, "
                   "memory; repeat or separate with commas")
      ->delimiter(',')
      ->check(CLI::IsMember({bench::kStepLatency, bench::kStepRestart, bench::kStepMemory}));
  AddOutputFlag(*bench, flags->format);
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
