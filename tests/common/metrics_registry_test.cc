// MetricsRegistry on prometheus-cpp: the text exposition format 0.0.4 as Render writes it, which
// is as Go's client_golang writes it (families sorted by name and samples by labels; HELP
// escaped; histograms as the cumulative buckets, then _sum and _count; values as Go formats a
// float64), callback families, the process collector, build info, and the registration mistakes
// that abort.
#include "common/metrics_registry.h"

#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/summary.h>
#include <sys/resource.h>

#include <atomic>
#include <limits>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace devmgr {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::MetricType;

// The value of the sample line that starts with `series` followed by a space; nullopt if none.
std::optional<double> Sample(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, series + " ")) continue;
    double value = 0;
    if (absl::SimpleAtod(line, &value)) return value;
  }
  return std::nullopt;
}

TEST(MetricsRegistryTest, RendersFamiliesSortedWithHelpAndType) {
  MetricsRegistry metrics;
  // Registered counter first: prometheus-cpp would list it first; Render sorts by name.
  auto& registrations = BuildCounter()
                            .Name("kubelet_device_plugin_registration_total")
                            .Help("Cumulative number of device plugin registrations.")
                            .Register(metrics.registry());
  auto& up = BuildGauge().Name("a_up").Help("Whether it is up.").Register(metrics.registry());
  registrations.Add({{"resource_name", "example.com/gpu"}}).Increment();
  registrations.Add({{"resource_name", "example.com/gpu"}}).Increment(2);
  registrations.Add({{"resource_name", "b.com/x"}}).Increment();
  up.Add({}).Set(1);

  EXPECT_EQ(metrics.Render(),
            "# HELP a_up Whether it is up.\n"
            "# TYPE a_up gauge\n"
            "a_up 1\n"
            "# HELP kubelet_device_plugin_registration_total Cumulative number of device plugin "
            "registrations.\n"
            "# TYPE kubelet_device_plugin_registration_total counter\n"
            "kubelet_device_plugin_registration_total{resource_name=\"b.com/x\"} 1\n"
            "kubelet_device_plugin_registration_total{resource_name=\"example.com/gpu\"} 3\n");
}

TEST(MetricsRegistryTest, RendersHistogramCumulativeBucketsWithInfThenSumAndCount) {
  MetricsRegistry metrics;
  prometheus::Histogram& gpu =
      BuildHistogram()
          .Name("op_duration_seconds")
          .Help("Duration.")
          .Register(metrics.registry())
          .Add({{"resource_name", "gpu"}}, prometheus::Histogram::BucketBoundaries{0.005, 0.5, 1});
  gpu.Observe(0.25);
  gpu.Observe(0.5);  // on a bound: counted in that bucket (le is inclusive)
  gpu.Observe(0.75);
  gpu.Observe(30);

  // prometheus-cpp's order (client_golang writes the buckets first); Prometheus reads either.
  EXPECT_EQ(metrics.Render(),
            "# HELP op_duration_seconds Duration.\n"
            "# TYPE op_duration_seconds histogram\n"
            "op_duration_seconds_bucket{resource_name=\"gpu\",le=\"0.005\"} 0\n"
            "op_duration_seconds_bucket{resource_name=\"gpu\",le=\"0.5\"} 2\n"
            "op_duration_seconds_bucket{resource_name=\"gpu\",le=\"1\"} 3\n"
            "op_duration_seconds_bucket{resource_name=\"gpu\",le=\"+Inf\"} 4\n"
            "op_duration_seconds_sum{resource_name=\"gpu\"} 31.5\n"
            "op_duration_seconds_count{resource_name=\"gpu\"} 4\n");
}

TEST(MetricsRegistryTest, RendersSummaryQuantilesThenSumAndCount) {
  MetricsRegistry metrics;
  prometheus::Summary& summary =
      prometheus::BuildSummary()
          .Name("s")
          .Help("H.")
          .Register(metrics.registry())
          .Add({{"k", "x"}}, prometheus::Summary::Quantiles{{0.5, 0.05}, {0.99, 0.001}});
  summary.Observe(2);
  EXPECT_EQ(metrics.Render(),
            "# HELP s H.\n"
            "# TYPE s summary\n"
            "s{k=\"x\",quantile=\"0.5\"} 2\n"
            "s{k=\"x\",quantile=\"0.99\"} 2\n"
            "s_sum{k=\"x\"} 2\n"
            "s_count{k=\"x\"} 1\n");
}

TEST(MetricsRegistryTest, UnlabelledHistogramAddedAtSetupShowsFromTheStart) {
  MetricsRegistry metrics;
  BuildHistogram()
      .Name("write_seconds")
      .Help("Writes.")
      .Register(metrics.registry())
      .Add({}, prometheus::Histogram::BucketBoundaries{0.1});
  EXPECT_EQ(metrics.Render(),
            "# HELP write_seconds Writes.\n"
            "# TYPE write_seconds histogram\n"
            "write_seconds_bucket{le=\"0.1\"} 0\n"
            "write_seconds_bucket{le=\"+Inf\"} 0\n"
            "write_seconds_sum 0\n"
            "write_seconds_count 0\n");
}

TEST(MetricsRegistryTest, LeavesOutFamiliesWithoutSamples) {
  MetricsRegistry metrics;
  BuildCounter().Name("never_used_total").Help("Never used.").Register(metrics.registry());
  BuildCounter().Name("plain_total").Help("Plain.").Register(metrics.registry()).Add({});
  metrics.Add(std::make_shared<CallbackFamily>("empty_total", "Nothing.", MetricType::Counter,
                                               std::vector<std::string>(),
                                               [] { return std::vector<CollectedSample>(); }));
  EXPECT_EQ(metrics.Render(),
            "# HELP plain_total Plain.\n"
            "# TYPE plain_total counter\n"
            "plain_total 0\n");
}

TEST(MetricsRegistryTest, EscapesLabelValuesAndHelp) {
  MetricsRegistry metrics;
  BuildGauge()
      .Name("g")
      .Help("Help with \\ and \"quotes\"\nand a second line.")
      .Register(metrics.registry())
      .Add({{"v", "a\\b\"c\nd"}})
      .Set(2);
  EXPECT_EQ(metrics.Render(),
            "# HELP g Help with \\\\ and \"quotes\"\\nand a second line.\n"
            "# TYPE g gauge\n"
            "g{v=\"a\\\\b\\\"c\\nd\"} 2\n");
}

TEST(MetricsRegistryTest, SortsLabelPairsByNameAndSamplesByTheirValues) {
  MetricsRegistry metrics;
  auto& family = BuildGauge().Name("g").Help("H.").Register(metrics.registry());
  family.Add({{"state", "running"}, {"resource_name", "b"}}).Set(1);
  family.Add({{"state", "stopped"}, {"resource_name", "a"}}).Set(2);
  family.Add({{"state", "running"}, {"resource_name", "a"}}).Set(3);
  EXPECT_EQ(metrics.Render(),
            "# HELP g H.\n"
            "# TYPE g gauge\n"
            "g{resource_name=\"a\",state=\"running\"} 3\n"
            "g{resource_name=\"a\",state=\"stopped\"} 2\n"
            "g{resource_name=\"b\",state=\"running\"} 1\n");
}

// Values and bucket bounds as Go's strconv.FormatFloat(v, 'g', -1, 64) writes them (the strings
// below are Go's), -0 as 0, as client_golang's text format (prometheus-cpp wrote 16 significant
// digits: 0.3, 1000000, Nan).
TEST(MetricsRegistryTest, WritesValuesAsClientGolang) {
  MetricsRegistry metrics;
  auto& family = BuildGauge().Name("g").Help("H.").Register(metrics.registry());
  family.Add({{"v", "a"}}).Set(0.1 + 0.2);
  family.Add({{"v", "b"}}).Set(1e6);
  family.Add({{"v", "c"}}).Set(123456.7);
  family.Add({{"v", "d"}}).Set(0.00001);
  family.Add({{"v", "e"}}).Set(std::numeric_limits<double>::infinity());
  family.Add({{"v", "f"}}).Set(-std::numeric_limits<double>::infinity());
  family.Add({{"v", "g"}}).Set(std::numeric_limits<double>::quiet_NaN());
  family.Add({{"v", "h"}}).Set(1e100);
  family.Add({{"v", "i"}}).Set(21196800);
  family.Add({{"v", "j"}}).Set(-0.0);
  family.Add({{"v", "k"}}).Set(123456);
  BuildHistogram()
      .Name("h")
      .Help("H.")
      .Register(metrics.registry())
      .Add({}, prometheus::Histogram::BucketBoundaries{0.23535468936502524, 1.9999999999999993})
      .Observe(1);
  EXPECT_EQ(metrics.Render(),
            "# HELP g H.\n"
            "# TYPE g gauge\n"
            "g{v=\"a\"} 0.30000000000000004\n"
            "g{v=\"b\"} 1e+06\n"
            "g{v=\"c\"} 123456.7\n"
            "g{v=\"d\"} 1e-05\n"
            "g{v=\"e\"} +Inf\n"
            "g{v=\"f\"} -Inf\n"
            "g{v=\"g\"} NaN\n"
            "g{v=\"h\"} 1e+100\n"
            "g{v=\"i\"} 2.11968e+07\n"
            "g{v=\"j\"} 0\n"
            "g{v=\"k\"} 123456\n"
            "# HELP h H.\n"
            "# TYPE h histogram\n"
            "h_bucket{le=\"0.23535468936502524\"} 0\n"
            "h_bucket{le=\"1.9999999999999993\"} 1\n"
            "h_bucket{le=\"+Inf\"} 1\n"
            "h_sum 1\n"
            "h_count 1\n");
}

TEST(MetricsRegistryTest, CallbackFamiliesRunAtEachRenderSortedAndSkipBadSamples) {
  MetricsRegistry metrics;
  std::atomic<int> calls{0};
  metrics.Add(std::make_shared<CallbackFamily>(
      "devices", "Devices by health.", MetricType::Gauge,
      std::vector<std::string>{"resource_name", "health"}, [&] {
        ++calls;
        return std::vector<CollectedSample>{
            {{"gpu", "unhealthy"}, 1},
            {{"gpu", "healthy"}, static_cast<double>(calls.load())},
            {{"only-one-value"}, 9},
        };
      }));
  metrics.Add(std::make_shared<CallbackFamily>("b_total", "Counted elsewhere.", MetricType::Counter,
                                               std::vector<std::string>(), [] {
                                                 return std::vector<CollectedSample>{{{}, 7}};
                                               }));
  const std::string counter =
      "# HELP b_total Counted elsewhere.\n"
      "# TYPE b_total counter\n"
      "b_total 7\n";
  const std::string devices_head =
      "# HELP devices Devices by health.\n"
      "# TYPE devices gauge\n";
  EXPECT_EQ(metrics.Render(), counter + devices_head +
                                  "devices{health=\"healthy\",resource_name=\"gpu\"} 1\n"
                                  "devices{health=\"unhealthy\",resource_name=\"gpu\"} 1\n");
  EXPECT_EQ(metrics.Render(), counter + devices_head +
                                  "devices{health=\"healthy\",resource_name=\"gpu\"} 2\n"
                                  "devices{health=\"unhealthy\",resource_name=\"gpu\"} 1\n");
  EXPECT_EQ(calls.load(), 2);
}

TEST(MetricsRegistryTest, ConcurrentUpdatesAndScrapesAreAllCounted) {
  MetricsRegistry metrics;
  auto& counter = BuildCounter().Name("c_total").Help("C.").Register(metrics.registry());
  auto& histogram = BuildHistogram().Name("h").Help("H.").Register(metrics.registry());
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10000;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        counter.Add({{"k", "x"}}).Increment();
        histogram.Add({{"k", "x"}}, prometheus::Histogram::BucketBoundaries{1}).Observe(0.5);
      }
    });
  }
  // Scrapes in the middle must not disturb the updates.
  for (int i = 0; i < 20; ++i) metrics.Render();
  for (auto& thread : threads) thread.join();
  const std::string text = metrics.Render();
  EXPECT_EQ(Sample(text, "c_total{k=\"x\"}"), kThreads * kPerThread) << text;
  EXPECT_EQ(Sample(text, "h_count{k=\"x\"}"), kThreads * kPerThread) << text;
  EXPECT_EQ(Sample(text, "h_bucket{k=\"x\",le=\"1\"}"), kThreads * kPerThread) << text;
}

TEST(ProcessCollectorTest, ExportsClientGolangProcessMetrics) {
  MetricsRegistry metrics;
  metrics.Add(std::make_shared<ProcessCollector>());
  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  const std::string text = metrics.Render();
  for (const char* type :
       {"# TYPE process_cpu_seconds_total counter\n", "# TYPE process_open_fds gauge\n",
        "# TYPE process_max_fds gauge\n", "# TYPE process_virtual_memory_bytes gauge\n",
        "# TYPE process_virtual_memory_max_bytes gauge\n",
        "# TYPE process_resident_memory_bytes gauge\n",
        "# TYPE process_start_time_seconds gauge\n"}) {
    EXPECT_TRUE(absl::StrContains(text, type)) << type << text;
  }
  EXPECT_TRUE(absl::StrContains(text,
                                "# HELP process_cpu_seconds_total Total user and system CPU time "
                                "spent in seconds.\n"))
      << text;
  EXPECT_GE(Sample(text, "process_cpu_seconds_total"), 0);
  // Standard input, output and error at least.
  EXPECT_GE(Sample(text, "process_open_fds"), 3);
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  EXPECT_EQ(Sample(text, "process_max_fds"), static_cast<double>(files.rlim_cur));
  EXPECT_GT(Sample(text, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(Sample(text, "process_virtual_memory_bytes"),
            Sample(text, "process_resident_memory_bytes"));
  // This test started within the last hour, and not after now.
  const std::optional<double> start = Sample(text, "process_start_time_seconds");
  ASSERT_TRUE(start.has_value()) << text;
  EXPECT_LE(*start, now + 1);
  EXPECT_GT(*start, now - 3600);
}

TEST(BuildInfoTest, ConstantOneWithVersionCompilerAndPlatform) {
  MetricsRegistry metrics;
  AddBuildInfo(metrics.registry());
  const std::string text = metrics.Render();
  EXPECT_TRUE(absl::StrContains(text, "# TYPE devmgr_build_info gauge\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, "devmgr_build_info{compiler=\"")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\",platform=\"linux/")) << text;
  EXPECT_TRUE(absl::StrContains(text, "\",version=\"")) << text;
  EXPECT_TRUE(absl::EndsWith(text, "\"} 1\n")) << text;
}

using MetricsRegistryDeathTest = ::testing::Test;

TEST_F(MetricsRegistryDeathTest, CallbackFamilyMistakesAbort) {
  auto none = [] { return std::vector<CollectedSample>(); };
  EXPECT_DEATH(CallbackFamily("bad-name", "H.", MetricType::Gauge, {}, none),
               "invalid metric name");
  EXPECT_DEATH(CallbackFamily("9lives", "H.", MetricType::Gauge, {}, none), "invalid metric name");
  EXPECT_DEATH(CallbackFamily("c", "H.", MetricType::Gauge, {"__reserved"}, none),
               "invalid label name");
  EXPECT_DEATH(CallbackFamily("c", "H.", MetricType::Gauge, {"a", "a"}, none), "repeated");
  EXPECT_DEATH(CallbackFamily("h", "H.", MetricType::Histogram, {}, none),
               "must be a counter or a gauge");
}

}  // namespace
}  // namespace devmgr
