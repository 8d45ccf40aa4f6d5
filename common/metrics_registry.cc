#include "common/metrics_registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace devmgr {
namespace {

// Registration mistakes are programming errors in the host: fail at setup, loudly, rather than
// serve a /metrics that Prometheus rejects.
void CheckOrDie(bool ok, absl::string_view what) {
  if (ok) return;
  std::fprintf(stderr, "devmgr metrics: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

bool IsValidMetricName(absl::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok =
        absl::ascii_isalpha(c) || c == '_' || c == ':' || (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

// Names starting with "__" are reserved for Prometheus itself.
bool IsValidLabelName(absl::string_view name) {
  if (name.empty() || absl::StartsWith(name, "__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!(absl::ascii_isalpha(c) || c == '_' || (i > 0 && absl::ascii_isdigit(c)))) return false;
  }
  return true;
}

// Label values escape backslash, double quote and newline; HELP text only the first and last.
void AppendEscaped(std::string& out, absl::string_view text, bool escape_quote) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && escape_quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

absl::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return "0";  // also -0, as Go's writer
  // Go's 'g' with the shortest precision uses %e when the decimal exponent is below -4 or at
  // least 6 (it decides with precision 6, not the digit count), %f otherwise; both with the
  // shortest digits that read back as the same double, which is what std::to_chars gives.
  char buffer[64];
  auto scientific =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string sci(buffer, scientific.ptr);
  // The exponent is "e+DD" or "e-DD"; from_chars takes no '+'.
  const size_t sign = sci.find('e') + 1;
  int exponent = 0;
  std::from_chars(sci.data() + sign + 1, sci.data() + sci.size(), exponent);
  if (sci[sign] == '-') exponent = -exponent;
  if (exponent < -4 || exponent >= 6) return sci;
  auto fixed = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::fixed);
  return std::string(buffer, fixed.ptr);
}

void Counter::Inc(double delta) {
  CheckOrDie(delta >= 0, "a counter cannot go down");
  value_.fetch_add(delta, std::memory_order_relaxed);
}

Histogram::Histogram(const std::vector<double>& bounds)
    : bounds_(bounds), counts_(bounds.size() + 1, 0) {}

void Histogram::Observe(double value) {
  // The first bound >= value: buckets are "less than or equal".
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  absl::MutexLock lock(&mu_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::Collect() const {
  Snapshot snapshot;
  absl::MutexLock lock(&mu_);
  snapshot.cumulative_counts.reserve(counts_.size());
  uint64_t running = 0;
  for (const uint64_t count : counts_) {
    running += count;
    snapshot.cumulative_counts.push_back(running);
  }
  snapshot.sum = sum_;
  snapshot.count = count_;
  return snapshot;
}

namespace metrics_internal {

Family::Family(std::string name, std::string help, MetricType type,
               std::vector<std::string> label_names)
    : name_(std::move(name)), help_(std::move(help)), type_(type) {
  CheckOrDie(IsValidMetricName(name_), absl::StrCat("invalid metric name \"", name_, "\""));
  declared_index_.resize(label_names.size());
  std::iota(declared_index_.begin(), declared_index_.end(), 0);
  std::sort(declared_index_.begin(), declared_index_.end(),
            [&](size_t a, size_t b) { return label_names[a] < label_names[b]; });
  for (const size_t index : declared_index_) {
    const std::string& label = label_names[index];
    CheckOrDie(IsValidLabelName(label),
               absl::StrCat("invalid label name \"", label, "\" in metric ", name_));
    CheckOrDie(type_ != MetricType::kHistogram || label != "le",
               absl::StrCat("label \"le\" is reserved in histogram ", name_));
    CheckOrDie(sorted_names_.empty() || sorted_names_.back() != label,
               absl::StrCat("label \"", label, "\" repeated in metric ", name_));
    sorted_names_.push_back(label);
  }
}

std::vector<std::string> Family::SortedLabelValues(
    std::initializer_list<absl::string_view> values) const {
  CheckOrDie(values.size() == sorted_names_.size(),
             absl::StrCat("metric ", name_, " has ", sorted_names_.size(), " labels, got ",
                          values.size(), " values"));
  std::vector<std::string> sorted;
  sorted.reserve(values.size());
  for (const size_t index : declared_index_) sorted.emplace_back(values.begin()[index]);
  return sorted;
}

std::vector<std::string> Family::SortedLabelValues(const std::vector<std::string>& values) const {
  std::vector<std::string> sorted;
  sorted.reserve(values.size());
  for (const size_t index : declared_index_) sorted.push_back(values[index]);
  return sorted;
}

void Family::AppendText(std::string& out) const {
  std::vector<SampleLine> lines;
  AppendSamples(lines);
  if (lines.empty()) return;
  absl::StrAppend(&out, "# HELP ", name_, " ");
  AppendEscaped(out, help_, /*escape_quote=*/false);
  absl::StrAppend(&out, "\n# TYPE ", name_, " ", TypeName(type_), "\n");
  for (const SampleLine& line : lines) {
    absl::StrAppend(&out, name_, line.suffix);
    if (!sorted_names_.empty() || !line.extra_label.empty()) {
      out += '{';
      for (size_t i = 0; i < sorted_names_.size(); ++i) {
        if (i > 0) out += ',';
        absl::StrAppend(&out, sorted_names_[i], "=\"");
        AppendEscaped(out, line.label_values[i], /*escape_quote=*/true);
        out += '"';
      }
      if (!line.extra_label.empty()) {
        if (!sorted_names_.empty()) out += ',';
        absl::StrAppend(&out, line.extra_label, "=\"", line.extra_value, "\"");
      }
      out += '}';
    }
    absl::StrAppend(&out, " ", FormatMetricValue(line.value), "\n");
  }
}

}  // namespace metrics_internal

namespace {

MetricType TypeOf(const Counter*) { return MetricType::kCounter; }
MetricType TypeOf(const Gauge*) { return MetricType::kGauge; }
MetricType TypeOf(const Histogram*) { return MetricType::kHistogram; }

// A collector's family: samples come from a callback at each Render.
class CollectorFamily final : public metrics_internal::Family {
 public:
  CollectorFamily(std::string name, std::string help, MetricType type,
                  std::vector<std::string> label_names, MetricsRegistry::CollectFn collect)
      : Family(std::move(name), std::move(help), type, std::move(label_names)),
        collect_(std::move(collect)) {}

 private:
  void AppendSamples(std::vector<SampleLine>& lines) const override {
    std::vector<CollectedSample> samples = collect_();
    std::vector<std::pair<std::vector<std::string>, double>> sorted;
    sorted.reserve(samples.size());
    for (const CollectedSample& sample : samples) {
      if (sample.label_values.size() != label_count()) continue;
      sorted.emplace_back(SortedLabelValues(sample.label_values), sample.value);
    }
    std::sort(sorted.begin(), sorted.end());
    for (auto& [values, value] : sorted) {
      lines.push_back(SampleLine{"", std::move(values), "", "", value});
    }
  }

  const MetricsRegistry::CollectFn collect_;
};

}  // namespace

template <typename Metric>
LabeledFamily<Metric>::LabeledFamily(std::string name, std::string help,
                                     std::vector<std::string> label_names,
                                     std::vector<double> bucket_bounds)
    : Family(std::move(name), std::move(help), TypeOf(static_cast<const Metric*>(nullptr)),
             std::move(label_names)),
      bucket_bounds_(std::move(bucket_bounds)) {
  if constexpr (std::is_same_v<Metric, Histogram>) {
    CheckOrDie(!bucket_bounds_.empty(),
               absl::StrCat("histogram ", this->name(), " has no buckets"));
    for (size_t i = 0; i < bucket_bounds_.size(); ++i) {
      CheckOrDie(
          std::isfinite(bucket_bounds_[i]) && (i == 0 || bucket_bounds_[i - 1] < bucket_bounds_[i]),
          absl::StrCat("histogram ", this->name(),
                       " needs finite, strictly increasing bucket bounds"));
    }
  }
  // As client_golang's plain Counter/Gauge/Histogram: an unlabelled metric shows from the start.
  if (label_count() == 0) {
    absl::MutexLock lock(&mu_);
    ChildLocked({});
  }
}

template <typename Metric>
Metric& LabeledFamily<Metric>::WithLabels(std::initializer_list<absl::string_view> label_values) {
  std::vector<std::string> sorted = SortedLabelValues(label_values);
  absl::MutexLock lock(&mu_);
  return ChildLocked(std::move(sorted));
}

template <typename Metric>
Metric& LabeledFamily<Metric>::ChildLocked(std::vector<std::string> sorted_values) {
  std::unique_ptr<Metric>& child = children_[std::move(sorted_values)];
  if (child == nullptr) {
    if constexpr (std::is_same_v<Metric, Histogram>) {
      child = std::make_unique<Histogram>(bucket_bounds_);
    } else {
      child = std::make_unique<Metric>();
    }
  }
  return *child;
}

template <typename Metric>
void LabeledFamily<Metric>::AppendSamples(std::vector<SampleLine>& lines) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [values, child] : children_) {
    if constexpr (std::is_same_v<Metric, Histogram>) {
      const Histogram::Snapshot snapshot = child->Collect();
      for (size_t i = 0; i < snapshot.cumulative_counts.size(); ++i) {
        const bool inf = i == bucket_bounds_.size();
        lines.push_back(SampleLine{"_bucket", values, "le",
                                   inf ? "+Inf" : FormatMetricValue(bucket_bounds_[i]),
                                   static_cast<double>(snapshot.cumulative_counts[i])});
      }
      lines.push_back(SampleLine{"_sum", values, "", "", snapshot.sum});
      lines.push_back(SampleLine{"_count", values, "", "", static_cast<double>(snapshot.count)});
    } else {
      lines.push_back(SampleLine{"", values, "", "", child->Value()});
    }
  }
}

template class LabeledFamily<Counter>;
template class LabeledFamily<Gauge>;
template class LabeledFamily<Histogram>;

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

template <typename T>
T& MetricsRegistry::Add(std::unique_ptr<T> family) {
  T& result = *family;
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = families_.try_emplace(family->name(), std::move(family));
  CheckOrDie(inserted, absl::StrCat("metric ", it->first, " registered twice"));
  return result;
}

CounterFamily& MetricsRegistry::AddCounter(std::string name, std::string help,
                                           std::vector<std::string> label_names) {
  return Add(
      std::make_unique<CounterFamily>(std::move(name), std::move(help), std::move(label_names)));
}

GaugeFamily& MetricsRegistry::AddGauge(std::string name, std::string help,
                                       std::vector<std::string> label_names) {
  return Add(
      std::make_unique<GaugeFamily>(std::move(name), std::move(help), std::move(label_names)));
}

HistogramFamily& MetricsRegistry::AddHistogram(std::string name, std::string help,
                                               std::vector<double> bucket_bounds,
                                               std::vector<std::string> label_names) {
  return Add(std::make_unique<HistogramFamily>(std::move(name), std::move(help),
                                               std::move(label_names), std::move(bucket_bounds)));
}

void MetricsRegistry::AddCollector(std::string name, std::string help, MetricType type,
                                   std::vector<std::string> label_names, CollectFn collect) {
  CheckOrDie(type != MetricType::kHistogram,
             absl::StrCat("collector ", name, " must be a counter or a gauge"));
  Add(std::make_unique<CollectorFamily>(std::move(name), std::move(help), type,
                                        std::move(label_names), std::move(collect)));
}

std::string MetricsRegistry::Render() const {
  std::vector<const metrics_internal::Family*> families;
  {
    absl::MutexLock lock(&mu_);
    families.reserve(families_.size());
    for (const auto& [name, family] : families_) families.push_back(family.get());
  }
  // Collectors may read other modules' state: never under our lock.
  std::string out;
  for (const metrics_internal::Family* family : families) family->AppendText(out);
  return out;
}

}  // namespace devmgr
