#include "bench/driver/report.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/table.h"
#include "nlohmann/json.hpp"

namespace devmgr::bench {

double Percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return std::nan("");
  // Nearest rank: the smallest value with at least `fraction` of the samples at or below it.
  size_t rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(values.size())));
  rank = std::clamp<size_t>(rank, 1, values.size()) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(rank), values.end());
  return values[rank];
}

Row Timed(std::string name, const std::vector<double>& micros, const std::vector<double>& floor,
          std::string floor_name, double scale, std::string unit) {
  Row row{std::move(name),
          std::move(unit),
          Percentile(micros, 0.5) / scale,
          Percentile(micros, 0.99) / scale,
          std::nullopt,
          std::move(floor_name)};
  if (!floor.empty()) row.floor_median = Percentile(floor, 0.5) / scale;
  return row;
}

namespace {

std::string Number(std::optional<double> value) {
  if (!value.has_value() || std::isnan(*value)) return "-";
  return absl::StrFormat("%.4g", *value);
}

std::optional<double> Ratio(const Row& row) {
  if (!row.floor_median.has_value() || *row.floor_median == 0) return std::nullopt;
  return row.median / *row.floor_median;
}

nlohmann::json JsonNumber(std::optional<double> value) {
  if (!value.has_value() || std::isnan(*value)) return nullptr;
  return *value;
}

}  // namespace

void PrintReport(const Options& flags, const std::vector<Row>& rows, std::ostream& out) {
  if (flags.format == ReportFormat::kJson) {
    nlohmann::json json;
    json["sizes"] = {{"samples", flags.samples},
                     {"devices", flags.devices},
                     {"pods", flags.pods},
                     {"checkpoint_entries", flags.checkpoint_entries},
                     {"plugins", flags.plugins},
                     {"plugin_devices", flags.plugin_devices},
                     {"memory_pods", flags.memory_pods},
                     {"admission_devices", flags.admission_devices},
                     {"admitted_pods", flags.admitted_pods},
                     {"dra_pods", flags.dra_pods},
                     {"dra_claims", flags.dra_claims},
                     {"dra_admitted_pods", flags.dra_admitted_pods},
                     {"publish_devices", flags.publish_devices}};
    json["results"] = nlohmann::json::array();
    for (const Row& row : rows) {
      json["results"].push_back({{"name", row.name},
                                 {"unit", row.unit},
                                 {"median", JsonNumber(row.median)},
                                 {"p99", JsonNumber(row.p99)},
                                 {"floor", row.floor},
                                 {"floor_median", JsonNumber(row.floor_median)},
                                 {"ratio", JsonNumber(Ratio(row))},
                                 {"higher_is_better", row.higher_is_better}});
    }
    out << json.dump(2) << '\n';
    return;
  }
  Table table({"MEASUREMENT", "UNIT", "MEDIAN", "P99", "FLOOR", "RATIO", "FLOOR IS"});
  for (const Row& row : rows) {
    table.AddRow({row.name, row.unit, Number(row.median), Number(row.p99), Number(row.floor_median),
                  Number(Ratio(row)), row.floor.empty() ? "-" : row.floor});
  }
  table.Print(out);
}

}  // namespace devmgr::bench
