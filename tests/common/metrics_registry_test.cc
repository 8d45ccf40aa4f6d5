// MetricsRegistry: the text exposition format 0.0.4 byte for byte (golden texts written from
// what Go's client_golang prints for the same metrics), value formatting as Go's 'g', label
// escaping and ordering, collectors, and the registration mistakes that abort.
#include "common/metrics_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <thread>
#include <vector>

namespace devmgr {
namespace {

TEST(FormatMetricValueTest, MatchesGoShortestG) {
  EXPECT_EQ(FormatMetricValue(0), "0");
  EXPECT_EQ(FormatMetricValue(-0.0), "0");
  EXPECT_EQ(FormatMetricValue(1), "1");
  EXPECT_EQ(FormatMetricValue(-1), "-1");
  EXPECT_EQ(FormatMetricValue(0.005), "0.005");
  EXPECT_EQ(FormatMetricValue(2.5), "2.5");
  EXPECT_EQ(FormatMetricValue(10), "10");
  EXPECT_EQ(FormatMetricValue(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatMetricValue(0.0001), "0.0001");
  EXPECT_EQ(FormatMetricValue(0.00001), "1e-05");
  EXPECT_EQ(FormatMetricValue(123456.7), "123456.7");
  EXPECT_EQ(FormatMetricValue(999999), "999999");
  EXPECT_EQ(FormatMetricValue(1e6), "1e+06");
  EXPECT_EQ(FormatMetricValue(1234567), "1.234567e+06");
  EXPECT_EQ(FormatMetricValue(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(FormatMetricValue(1e100), "1e+100");
  EXPECT_EQ(FormatMetricValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatMetricValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatMetricValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(MetricsRegistryTest, RendersFamiliesSortedWithHelpAndType) {
  MetricsRegistry registry;
  CounterFamily& registrations =
      registry.AddCounter("kubelet_device_plugin_registration_total",
                          "Cumulative number of device plugin registrations.", {"resource_name"});
  GaugeFamily& up = registry.AddGauge("a_up", "Whether it is up.");
  registrations.WithLabels({"example.com/gpu"}).Inc();
  registrations.WithLabels({"example.com/gpu"}).Inc(2);
  registrations.WithLabels({"b.com/x"}).Inc();
  up.WithLabels({}).Set(1);

  EXPECT_EQ(registry.Render(),
            "# HELP a_up Whether it is up.\n"
            "# TYPE a_up gauge\n"
            "a_up 1\n"
            "# HELP kubelet_device_plugin_registration_total Cumulative number of device plugin "
            "registrations.\n"
            "# TYPE kubelet_device_plugin_registration_total counter\n"
            "kubelet_device_plugin_registration_total{resource_name=\"b.com/x\"} 1\n"
            "kubelet_device_plugin_registration_total{resource_name=\"example.com/gpu\"} 3\n");
}

TEST(MetricsRegistryTest, RendersHistogramBucketsCumulativeWithInfSumAndCount) {
  MetricsRegistry registry;
  HistogramFamily& durations =
      registry.AddHistogram("op_duration_seconds", "Duration.", {0.005, 0.5, 1}, {"resource_name"});
  Histogram& gpu = durations.WithLabels({"gpu"});
  gpu.Observe(0.25);
  gpu.Observe(0.5);  // on a bound: counted in that bucket (le is inclusive)
  gpu.Observe(0.75);
  gpu.Observe(30);

  EXPECT_EQ(registry.Render(),
            "# HELP op_duration_seconds Duration.\n"
            "# TYPE op_duration_seconds histogram\n"
            "op_duration_seconds_bucket{resource_name=\"gpu\",le=\"0.005\"} 0\n"
            "op_duration_seconds_bucket{resource_name=\"gpu\",le=\"0.5\"} 2\n"
            "op_duration_seconds_bucket{resource_name=\"gpu\",le=\"1\"} 3\n"
            "op_duration_seconds_bucket{resource_name=\"gpu\",le=\"+Inf\"} 4\n"
            "op_duration_seconds_sum{resource_name=\"gpu\"} 31.5\n"
            "op_duration_seconds_count{resource_name=\"gpu\"} 4\n");
}

TEST(MetricsRegistryTest, UnlabelledHistogramShowsFromTheStart) {
  MetricsRegistry registry;
  registry.AddHistogram("write_seconds", "Writes.", {0.1});
  EXPECT_EQ(registry.Render(),
            "# HELP write_seconds Writes.\n"
            "# TYPE write_seconds histogram\n"
            "write_seconds_bucket{le=\"0.1\"} 0\n"
            "write_seconds_bucket{le=\"+Inf\"} 0\n"
            "write_seconds_sum 0\n"
            "write_seconds_count 0\n");
}

TEST(MetricsRegistryTest, LeavesOutLabelledFamiliesWithoutChildren) {
  MetricsRegistry registry;
  registry.AddCounter("never_used_total", "Never used.", {"reason"});
  registry.AddCounter("plain_total", "Plain.");
  EXPECT_EQ(registry.Render(),
            "# HELP plain_total Plain.\n"
            "# TYPE plain_total counter\n"
            "plain_total 0\n");
}

TEST(MetricsRegistryTest, EscapesLabelValuesAndHelp) {
  MetricsRegistry registry;
  registry.AddGauge("g", "Help with \\ and \"quotes\"\nand a second line.", {"v"})
      .WithLabels({"a\\b\"c\nd"})
      .Set(2);
  EXPECT_EQ(registry.Render(),
            "# HELP g Help with \\\\ and \"quotes\"\\nand a second line.\n"
            "# TYPE g gauge\n"
            "g{v=\"a\\\\b\\\"c\\nd\"} 2\n");
}

TEST(MetricsRegistryTest, SortsLabelPairsByNameAndChildrenByTheirValues) {
  MetricsRegistry registry;
  GaugeFamily& family = registry.AddGauge("g", "H.", {"state", "resource_name"});
  family.WithLabels({"running", "b"}).Set(1);
  family.WithLabels({"stopped", "a"}).Set(2);
  family.WithLabels({"running", "a"}).Set(3);
  // Declared (state, resource_name); printed and ordered as (resource_name, state).
  EXPECT_EQ(registry.Render(),
            "# HELP g H.\n"
            "# TYPE g gauge\n"
            "g{resource_name=\"a\",state=\"running\"} 3\n"
            "g{resource_name=\"a\",state=\"stopped\"} 2\n"
            "g{resource_name=\"b\",state=\"running\"} 1\n");
}

TEST(MetricsRegistryTest, CollectorsRunAtEachRenderSortedAndSkipBadSamples) {
  MetricsRegistry registry;
  std::atomic<int> calls{0};
  registry.AddCollector("devices", "Devices by health.", MetricType::kGauge,
                        {"resource_name", "health"}, [&] {
                          ++calls;
                          return std::vector<CollectedSample>{
                              {{"gpu", "unhealthy"}, 1},
                              {{"gpu", "healthy"}, static_cast<double>(calls.load())},
                              {{"only-one-value"}, 9},
                          };
                        });
  registry.AddCollector("empty_total", "Nothing.", MetricType::kCounter, {},
                        [] { return std::vector<CollectedSample>(); });
  const std::string expected_head =
      "# HELP devices Devices by health.\n"
      "# TYPE devices gauge\n";
  EXPECT_EQ(registry.Render(), expected_head +
                                   "devices{health=\"healthy\",resource_name=\"gpu\"} 1\n"
                                   "devices{health=\"unhealthy\",resource_name=\"gpu\"} 1\n");
  EXPECT_EQ(registry.Render(), expected_head +
                                   "devices{health=\"healthy\",resource_name=\"gpu\"} 2\n"
                                   "devices{health=\"unhealthy\",resource_name=\"gpu\"} 1\n");
  EXPECT_EQ(calls.load(), 2);
}

TEST(MetricsRegistryTest, ConcurrentUpdatesAreAllCounted) {
  MetricsRegistry registry;
  CounterFamily& counter = registry.AddCounter("c_total", "C.", {"k"});
  HistogramFamily& histogram = registry.AddHistogram("h", "H.", {1}, {"k"});
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10000;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        counter.WithLabels({"x"}).Inc();
        histogram.WithLabels({"x"}).Observe(0.5);
      }
    });
  }
  // Scrapes in the middle must not disturb the updates.
  for (int i = 0; i < 20; ++i) registry.Render();
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter.WithLabels({"x"}).Value(), kThreads * kPerThread);
  const Histogram::Snapshot snapshot = histogram.WithLabels({"x"}).Collect();
  EXPECT_EQ(snapshot.count, static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(snapshot.cumulative_counts, (std::vector<uint64_t>{snapshot.count, snapshot.count}));
}

using MetricsRegistryDeathTest = ::testing::Test;

TEST_F(MetricsRegistryDeathTest, RegistrationMistakesAbort) {
  EXPECT_DEATH(MetricsRegistry().AddCounter("bad-name", "H."), "invalid metric name");
  EXPECT_DEATH(MetricsRegistry().AddCounter("9lives", "H."), "invalid metric name");
  EXPECT_DEATH(MetricsRegistry().AddCounter("c", "H.", {"__reserved"}), "invalid label name");
  EXPECT_DEATH(MetricsRegistry().AddCounter("c", "H.", {"a", "a"}), "repeated");
  EXPECT_DEATH(MetricsRegistry().AddHistogram("h", "H.", {1}, {"le"}), "reserved");
  EXPECT_DEATH(MetricsRegistry().AddHistogram("h", "H.", {1, 1}), "strictly increasing");
  EXPECT_DEATH(MetricsRegistry().AddHistogram("h", "H.", {}), "no buckets");
  EXPECT_DEATH(
      {
        MetricsRegistry registry;
        registry.AddGauge("g", "H.");
        registry.AddCounter("g", "H.");
      },
      "registered twice");
  EXPECT_DEATH(MetricsRegistry().AddCounter("c", "H.", {"a"}).WithLabels({"x", "y"}),
               "has 1 labels, got 2 values");
  EXPECT_DEATH(MetricsRegistry().AddCounter("c", "H.").WithLabels({}).Inc(-1), "cannot go down");
}

}  // namespace
}  // namespace devmgr
