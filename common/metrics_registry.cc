#include "common/metrics_registry.h"

#include <prometheus/check_names.h>
#include <prometheus/client_metric.h>
#include <prometheus/gauge.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/build_version.h"
#include "common/text_exposition.h"

namespace devmgr {
namespace {

// Registration mistakes are programming errors in the host: fail at setup, loudly, rather than
// serve a /metrics that Prometheus rejects.
void CheckOrDie(bool ok, absl::string_view what) {
  if (ok) return;
  std::fprintf(stderr, "devmgr metrics: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

prometheus::MetricFamily OneValue(std::string name, std::string help, prometheus::MetricType type,
                                  double value) {
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return prometheus::MetricFamily{std::move(name), std::move(help), type, {std::move(metric)}};
}

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The fields of /proc/self/stat after the command name (which may hold spaces and parentheses):
// fields[0] is the state, field N of proc(5) is fields[N - 3].
std::vector<std::string> ProcSelfStat() {
  const std::string stat = ReadFile("/proc/self/stat");
  const size_t end_of_name = stat.rfind(')');
  if (end_of_name == std::string::npos) return {};
  return absl::StrSplit(absl::string_view(stat).substr(end_of_name + 1), ' ', absl::SkipEmpty());
}

std::optional<double> Field(const std::vector<std::string>& fields, size_t proc_field) {
  double value = 0;
  if (proc_field < 3 || proc_field - 3 >= fields.size() ||
      !absl::SimpleAtod(fields[proc_field - 3], &value)) {
    return std::nullopt;
  }
  return value;
}

// The boot time, from /proc/stat's btime line, in seconds since the epoch.
std::optional<double> BootTime() {
  for (absl::string_view line : absl::StrSplit(ReadFile("/proc/stat"), '\n')) {
    double seconds = 0;
    if (absl::ConsumePrefix(&line, "btime ") && absl::SimpleAtod(line, &seconds)) return seconds;
  }
  return std::nullopt;
}

std::optional<double> SoftLimit(int resource) {
  rlimit limit{};
  if (::getrlimit(resource, &limit) != 0) return std::nullopt;
  // RLIM_INFINITY is the largest rlim_t, as client_golang reports "unlimited".
  return static_cast<double>(limit.rlim_cur);
}

std::string Compiler() {
#if defined(__clang__)
  return absl::StrCat("clang ", __clang_major__, ".", __clang_minor__, ".", __clang_patchlevel__);
#elif defined(__GNUC__)
  return absl::StrCat("gcc ", __GNUC__, ".", __GNUC_MINOR__, ".", __GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

absl::string_view Architecture() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "unknown";
#endif
}

}  // namespace

MetricsRegistry::MetricsRegistry() = default;

void MetricsRegistry::Add(std::shared_ptr<const prometheus::Collectable> collectable) {
  absl::MutexLock lock(&mu_);
  collectables_.push_back(std::move(collectable));
}

std::string MetricsRegistry::Render() const {
  std::vector<std::shared_ptr<const prometheus::Collectable>> collectables;
  {
    absl::MutexLock lock(&mu_);
    collectables = collectables_;
  }
  // Collectables may read other modules' state: never under our lock.
  std::vector<prometheus::MetricFamily> families = registry_.Collect();
  for (const auto& collectable : collectables) {
    std::vector<prometheus::MetricFamily> more = collectable->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  std::stable_sort(families.begin(), families.end(),
                   [](const prometheus::MetricFamily& a, const prometheus::MetricFamily& b) {
                     return a.name < b.name;
                   });
  for (prometheus::MetricFamily& family : families) {
    std::stable_sort(family.metric.begin(), family.metric.end(),
                     [](const prometheus::ClientMetric& a, const prometheus::ClientMetric& b) {
                       return a.label < b.label;
                     });
  }
  return TextExposition(families);
}

CallbackFamily::CallbackFamily(std::string name, std::string help, prometheus::MetricType type,
                               std::vector<std::string> label_names, CollectFn collect)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)),
      collect_(std::move(collect)) {
  CheckOrDie(prometheus::CheckMetricName(name_),
             absl::StrCat("invalid metric name \"", name_, "\""));
  CheckOrDie(type_ == prometheus::MetricType::Counter || type_ == prometheus::MetricType::Gauge,
             absl::StrCat("metric ", name_, " must be a counter or a gauge"));
  std::set<absl::string_view> seen;
  for (const std::string& label : label_names_) {
    CheckOrDie(prometheus::CheckLabelName(label),
               absl::StrCat("invalid label name \"", label, "\" in metric ", name_));
    CheckOrDie(seen.insert(label).second,
               absl::StrCat("label \"", label, "\" repeated in metric ", name_));
  }
}

std::vector<prometheus::MetricFamily> CallbackFamily::Collect() const {
  prometheus::MetricFamily family{name_, help_, type_, {}};
  for (CollectedSample& sample : collect_()) {
    if (sample.label_values.size() != label_names_.size()) continue;
    prometheus::ClientMetric metric;
    for (size_t i = 0; i < label_names_.size(); ++i) {
      metric.label.push_back({label_names_[i], std::move(sample.label_values[i])});
    }
    // Label pairs in name order, as prometheus-cpp's own families print them.
    std::sort(metric.label.begin(), metric.label.end());
    if (type_ == prometheus::MetricType::Counter) {
      metric.counter.value = sample.value;
    } else {
      metric.gauge.value = sample.value;
    }
    family.metric.push_back(std::move(metric));
  }
  if (family.metric.empty()) return {};
  return {std::move(family)};
}

ProcessCollector::ProcessCollector() {
  const std::optional<double> boot = BootTime();
  const std::optional<double> start_ticks = Field(ProcSelfStat(), 22);
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  if (boot.has_value() && start_ticks.has_value() && ticks > 0) {
    start_time_seconds_ = *boot + *start_ticks / ticks;
  }
}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> families;
  const std::vector<std::string> stat = ProcSelfStat();
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const std::optional<double> user = Field(stat, 14);
  const std::optional<double> system = Field(stat, 15);
  if (user.has_value() && system.has_value() && ticks > 0) {
    families.push_back(OneValue("process_cpu_seconds_total",
                                "Total user and system CPU time spent in seconds.",
                                MetricType::Counter, (*user + *system) / ticks));
  }
  std::error_code error;
  double open_fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end;
       it.increment(error)) {
    ++open_fds;
  }
  if (!error) {
    families.push_back(OneValue("process_open_fds", "Number of open file descriptors.",
                                MetricType::Gauge, open_fds));
  }
  if (const std::optional<double> max_fds = SoftLimit(RLIMIT_NOFILE); max_fds.has_value()) {
    families.push_back(OneValue("process_max_fds", "Maximum number of open file descriptors.",
                                MetricType::Gauge, *max_fds));
  }
  if (const std::optional<double> virtual_bytes = Field(stat, 23); virtual_bytes.has_value()) {
    families.push_back(OneValue("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                                MetricType::Gauge, *virtual_bytes));
  }
  if (const std::optional<double> max_virtual = SoftLimit(RLIMIT_AS); max_virtual.has_value()) {
    families.push_back(OneValue("process_virtual_memory_max_bytes",
                                "Maximum amount of virtual memory available in bytes.",
                                MetricType::Gauge, *max_virtual));
  }
  if (const std::optional<double> pages = Field(stat, 24); pages.has_value()) {
    families.push_back(OneValue("process_resident_memory_bytes", "Resident memory size in bytes.",
                                MetricType::Gauge,
                                *pages * static_cast<double>(::sysconf(_SC_PAGESIZE))));
  }
  if (start_time_seconds_.has_value()) {
    families.push_back(OneValue("process_start_time_seconds",
                                "Start time of the process since unix epoch in seconds.",
                                MetricType::Gauge, *start_time_seconds_));
  }
  return families;
}

void AddBuildInfo(prometheus::Registry& registry) {
  prometheus::BuildGauge()
      .Name("devmgr_build_info")
      .Help(
          "A metric with a constant '1' value labeled by the version, the compiler and the "
          "platform from which devmgr was built.")
      .Register(registry)
      .Add({{"version", DEVMGR_BUILD_VERSION},
            {"compiler", Compiler()},
            {"platform", absl::StrCat("linux/", Architecture())}})
      .Set(1);
}

}  // namespace devmgr
