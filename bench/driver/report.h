// The report of `devmgr bench`: one Row per measurement, the statistics that fill it from
// samples (Percentile, Timed), and its printing as an aligned table or as JSON. The row names,
// the table's columns and the JSON keys are an interface: docs/PERFORMANCE.md and
// tests/cmd/bench_cmd_test.cc read them.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "bench/driver/bench.h"

namespace devmgr::bench {

// One line of the report. `floor_median` is absent where no cheaper way to do the same work
// exists (memory). Ratio is median / floor_median; `higher_is_better` for rates.
struct Row {
  std::string name;
  std::string unit;
  double median = 0;
  std::optional<double> p99;
  std::optional<double> floor_median;
  std::string floor;
  bool higher_is_better = false;
};

// Percentile is the nearest-rank `fraction` percentile of `values` (0.5 for the median); NaN
// for no values.
double Percentile(std::vector<double> values, double fraction);

// Timed makes the row of a latency measurement from samples in microseconds: median and p99 of
// `micros`, and the median of `floor` (none if empty), each divided by `scale` to be in `unit`.
Row Timed(std::string name, const std::vector<double>& micros, const std::vector<double>& floor,
          std::string floor_name, double scale = 1, std::string unit = "us");

// PrintReport writes `rows` on `out` in `flags.format`: a table, or JSON with the sizes of
// `flags` beside the results.
void PrintReport(const Options& flags, const std::vector<Row>& rows, std::ostream& out);

}  // namespace devmgr::bench
