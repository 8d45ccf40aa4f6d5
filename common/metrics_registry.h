// MetricsRegistry: a small Prometheus registry for the daemon's /metrics, written before we
// found that Debian 12 packages prometheus-cpp (`prometheus-cpp-dev` 1.0.1); moving the families
// onto it, and deleting this file, is planned (issue 24).
//
// It holds counter, gauge and histogram families, each with fixed label names and one child
// per set of label values (WithLabels), plus collectors: callbacks run at scrape time for values
// that live elsewhere (a count of endpoints read from the Manager, an atomic counter of another
// module). Render produces the text exposition format 0.0.4 exactly as Go's client_golang does:
// families sorted by name, `# HELP` and `# TYPE` lines, label pairs sorted by label name,
// children sorted by label values, values in Go's shortest %g form, histograms as cumulative
// `_bucket{le="..."}` lines ending in `+Inf`, then `_sum` and `_count`. A family without any
// sample is left out, as client_golang leaves out a vector that was never used.
//
//   MetricsRegistry registry;
//   CounterFamily& registrations = registry.AddCounter(
//       "kubelet_device_plugin_registration_total", "Cumulative number of ...", {"resource_name"});
//   registrations.WithLabels({"example.com/gpu"}).Inc();
//   std::string text = registry.Render();
//
// Families are declared once, at setup: a bad or repeated metric name, a bad label name, or a
// wrong number of label values is a programming error and aborts with a message. Every method
// is thread-safe; families and children live as long as the registry, so references to them
// may be kept. Updates never block for long (a child's own mutex or an atomic).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace devmgr {

enum class MetricType { kCounter, kGauge, kHistogram };

// Counter: a value that only goes up.
class Counter {
 public:
  // Inc adds `delta`, which must not be negative.
  void Inc(double delta = 1);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Gauge: a value that goes up and down.
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Histogram: observations counted in buckets with fixed upper bounds (inclusive, as
// Prometheus' `le`), plus their sum and count.
class Histogram {
 public:
  struct Snapshot {
    // Cumulative count per bound, then the +Inf bucket (== count).
    std::vector<uint64_t> cumulative_counts;
    double sum = 0;
    uint64_t count = 0;
  };

  // `bounds` (strictly increasing, finite) must outlive the histogram; the family owns them.
  explicit Histogram(const std::vector<double>& bounds);
  void Observe(double value);
  // A consistent view: the sum and count belong to the same observations as the buckets.
  Snapshot Collect() const;

 private:
  const std::vector<double>& bounds_;
  mutable absl::Mutex mu_;
  // Observations per bucket (not cumulative); the last entry is above every bound.
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t count_ ABSL_GUARDED_BY(mu_) = 0;
};

namespace metrics_internal {

// Family: one metric name with its HELP, TYPE and samples, as Render walks them.
class Family {
 public:
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> label_names);
  virtual ~Family() = default;
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const std::string& name() const { return name_; }
  // AppendText appends the family's lines, or nothing when it has no sample.
  void AppendText(std::string& out) const;

 protected:
  // One sample line: `<name><suffix>{labels[,extra_label="extra_value"]} value`.
  struct SampleLine {
    std::string suffix;
    // Label values in sorted-label-name order (see SortedLabelValues).
    std::vector<std::string> label_values;
    absl::string_view extra_label;
    std::string extra_value;
    double value = 0;
  };
  // AppendSamples adds the sample lines of every child, children in label-value order.
  virtual void AppendSamples(std::vector<SampleLine>& lines) const = 0;
  // SortedLabelValues reorders values given in declaration order into the order of the
  // sorted label names, the order in which they are printed and compared.
  std::vector<std::string> SortedLabelValues(std::initializer_list<absl::string_view> values) const;
  std::vector<std::string> SortedLabelValues(const std::vector<std::string>& values) const;
  size_t label_count() const { return sorted_names_.size(); }

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
  // Label names sorted, and for each its position in the declared order.
  std::vector<std::string> sorted_names_;
  std::vector<size_t> declared_index_;
};

}  // namespace metrics_internal

// LabeledFamily: a counter, gauge or histogram family. WithLabels returns the child for one set
// of label values (given in the order of the family's label names), creating it on first use.
// A family without label names has a single child, WithLabels({}), present from the start.
template <typename Metric>
class LabeledFamily final : public metrics_internal::Family {
 public:
  // `bucket_bounds` is for histograms only.
  LabeledFamily(std::string name, std::string help, std::vector<std::string> label_names,
                std::vector<double> bucket_bounds = {});

  Metric& WithLabels(std::initializer_list<absl::string_view> label_values);

 private:
  void AppendSamples(std::vector<SampleLine>& lines) const override;
  Metric& ChildLocked(std::vector<std::string> sorted_values) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::vector<double> bucket_bounds_;
  mutable absl::Mutex mu_;
  // Keyed by label values in sorted-label-name order: iteration is the exposition order.
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> children_ ABSL_GUARDED_BY(mu_);
};

using CounterFamily = LabeledFamily<Counter>;
using GaugeFamily = LabeledFamily<Gauge>;
using HistogramFamily = LabeledFamily<Histogram>;

extern template class LabeledFamily<Counter>;
extern template class LabeledFamily<Gauge>;
extern template class LabeledFamily<Histogram>;

// CollectedSample: one sample a collector reports; label values in the order of the
// collector's label names.
struct CollectedSample {
  std::vector<std::string> label_values;
  double value = 0;
};

class MetricsRegistry {
 public:
  // CollectFn runs at every Render, on the thread that renders, without any registry lock
  // held; two scrapes may run it at once. It must not call back into the registry.
  using CollectFn = std::function<std::vector<CollectedSample>()>;

  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  CounterFamily& AddCounter(std::string name, std::string help,
                            std::vector<std::string> label_names = {});
  GaugeFamily& AddGauge(std::string name, std::string help,
                        std::vector<std::string> label_names = {});
  // `bucket_bounds`: the upper bounds, strictly increasing and finite; +Inf is implied.
  HistogramFamily& AddHistogram(std::string name, std::string help,
                                std::vector<double> bucket_bounds,
                                std::vector<std::string> label_names = {});
  // AddCollector declares a counter or gauge family whose samples `collect` returns at each
  // Render. A sample with the wrong number of label values is dropped.
  void AddCollector(std::string name, std::string help, MetricType type,
                    std::vector<std::string> label_names, CollectFn collect);

  // Render is the whole registry in the text exposition format 0.0.4.
  std::string Render() const;

 private:
  template <typename T>
  T& Add(std::unique_ptr<T> family);

  mutable absl::Mutex mu_;
  // Families are never removed, so Render may use them after releasing mu_.
  std::map<std::string, std::unique_ptr<metrics_internal::Family>, std::less<>> families_
      ABSL_GUARDED_BY(mu_);
};

// FormatMetricValue writes `value` as Go's strconv.FormatFloat(value, 'g', -1, 64), with
// Prometheus' "+Inf", "-Inf" and "NaN": the form of every value and `le` bound in the output.
std::string FormatMetricValue(double value);

}  // namespace devmgr
