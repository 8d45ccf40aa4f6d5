// Benchmarks here are measured beside their floor, the cheapest way to do the same physical
// work, in the same run; the figure that matters is the ratio. RunWithFloors runs the
// registered benchmarks, prints Google Benchmark's usual table, then one line per pair:
//   ratio BM_X/10000 / BM_Floor/10000 = 1.12
// Pairs match a measured benchmark to its floor by name prefix; the arguments after the first
// '/' must be equal.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace devmgr::bench {

struct FloorPair {
  std::string measured;  // benchmark name without arguments, e.g. "BM_CheckpointWrite"
  std::string floor;     // its floor, e.g. "BM_FloorWriteFsyncRename"
};

// RunWithFloors is a benchmark main(): returns the process exit code.
int RunWithFloors(int argc, char** argv, const std::vector<FloorPair>& pairs);

}  // namespace devmgr::bench
