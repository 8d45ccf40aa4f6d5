// MetricsRegistry: the metrics a process serves at /metrics, on prometheus-cpp (Debian's
// `prometheus-cpp-dev`). Families the process updates itself are built on registry() with
// prometheus-cpp's builders; values that live elsewhere (a count of endpoints read from the
// Manager, an atomic counter of another module) are CallbackFamily collectables, read at each
// scrape; ProcessCollector adds client_golang's process_* metrics. Render is all of it in the
// text exposition format 0.0.4, written as client_golang writes it (TextExposition).
//
//   MetricsRegistry metrics;
//   prometheus::Family<prometheus::Counter>& registrations =
//       prometheus::BuildCounter()
//           .Name("kubelet_device_plugin_registration_total")
//           .Help("Cumulative number of ...")
//           .Register(metrics.registry());
//   registrations.Add({{"resource_name", "example.com/gpu"}}).Increment();
//   metrics.Add(std::make_shared<ProcessCollector>());
//   std::string text = metrics.Render();
//
// Render also orders the output as client_golang's registry does: families sorted by name and
// each family's samples by their labels (prometheus-cpp groups families by type and keeps
// samples in a hash map). A family without any sample is left out.
//
// A bad metric or label name is a programming error: prometheus-cpp's builders throw
// std::invalid_argument (the process ends, at setup), CallbackFamily aborts with a message.
// Everything here is thread-safe.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>
#include <prometheus/registry.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace devmgr {

class MetricsRegistry {
 public:
  MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // The families the process updates. A second family of the same name throws
  // (InsertBehavior::Throw), as a repeated name is a programming error.
  prometheus::Registry& registry() { return registry_; }

  // Add: `collectable` is read at every Render, on the rendering thread, from then on. It must
  // not call back into this registry.
  void Add(std::shared_ptr<const prometheus::Collectable> collectable);

  // Render: every family, as described above.
  std::string Render() const;

 private:
  prometheus::Registry registry_{prometheus::Registry::InsertBehavior::Throw};
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<const prometheus::Collectable>> collectables_ ABSL_GUARDED_BY(mu_);
};

// CollectedSample: one sample a CallbackFamily reports; label values in the order of the
// family's label names.
struct CollectedSample {
  std::vector<std::string> label_values;
  double value = 0;
};

// CallbackFamily: a counter or gauge family whose samples a function returns at each scrape,
// for values another module keeps. A sample with the wrong number of label values is dropped;
// no sample, no family in the output.
class CallbackFamily final : public prometheus::Collectable {
 public:
  // CollectFn runs at every Collect, on the scraping thread; two scrapes may run it at once.
  using CollectFn = std::function<std::vector<CollectedSample>()>;

  // Aborts on an invalid metric or label name, a repeated label name, or a type that is not
  // Counter or Gauge.
  CallbackFamily(std::string name, std::string help, prometheus::MetricType type,
                 std::vector<std::string> label_names, CollectFn collect);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::string name_;
  const std::string help_;
  const prometheus::MetricType type_;
  const std::vector<std::string> label_names_;
  const CollectFn collect_;
};

// ProcessCollector: what client_golang's process collector exports on Linux, with its names
// and help texts, read from /proc/self at each scrape (the start time once):
// process_cpu_seconds_total, process_open_fds, process_max_fds, process_virtual_memory_bytes,
// process_virtual_memory_max_bytes, process_resident_memory_bytes and
// process_start_time_seconds. A value that cannot be read is left out.
class ProcessCollector final : public prometheus::Collectable {
 public:
  // Reads the start time, which never changes, once.
  ProcessCollector();

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::optional<double> start_time_seconds_;
};

// AddBuildInfo registers devmgr_build_info: constant 1, labelled with devmgr's version, the
// compiler that built it and the platform (Go's GOOS/GOARCH spelling: linux/amd64), as a
// kubelet's kubernetes_build_info.
void AddBuildInfo(prometheus::Registry& registry);

}  // namespace devmgr
