#include "bench/floor_reporter.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>

namespace devmgr::bench {
namespace {

// Records the real time per iteration of every run while the console reporter prints it.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      const double seconds = run.real_accumulated_time / static_cast<double>(run.iterations);
      times_[run.benchmark_name()] = seconds;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  const std::map<std::string, double>& times() const { return times_; }

 private:
  std::map<std::string, double> times_;
};

// "BM_X/10000/real_time" -> {"BM_X", "/10000/real_time"}
std::pair<std::string, std::string> SplitName(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return {name, ""};
  return {name.substr(0, slash), name.substr(slash)};
}

}  // namespace

int RunWithFloors(int argc, char** argv, const std::vector<FloorPair>& pairs) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  for (const auto& [name, seconds] : reporter.times()) {
    const auto [base, args] = SplitName(name);
    for (const FloorPair& pair : pairs) {
      if (pair.measured != base) continue;
      const auto floor = reporter.times().find(pair.floor + args);
      if (floor == reporter.times().end() || floor->second <= 0) continue;
      std::printf("ratio %s / %s = %.2f  (%.1f us vs %.1f us)\n", name.c_str(),
                  floor->first.c_str(), seconds / floor->second, seconds * 1e6,
                  floor->second * 1e6);
    }
  }
  return 0;
}

}  // namespace devmgr::bench
