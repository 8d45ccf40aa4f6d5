#include "bench/driver/harness.h"

#include <grpcpp/grpcpp.h>

#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/metrics_scrape.h"
#include "podresources/v1/api.grpc.pb.h"

namespace devmgr::bench {

namespace fs = std::filesystem;

namespace {

// The value of the sample `series` (its name and labels as the text writes them) in a scrape's
// text; nullopt if the text has no such sample. Values are read as numbers, since Go's form
// writes large ones with an exponent (1e+06).
std::optional<double> SampleValue(absl::string_view text, absl::string_view series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    double value = 0;
    if (absl::ConsumePrefix(&line, series) && absl::ConsumePrefix(&line, " ") &&
        absl::SimpleAtod(line, &value)) {
      return value;
    }
  }
  return std::nullopt;
}

}  // namespace

double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

absl::Status FromGrpc(absl::string_view what, const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

void SetDeadline(grpc::ClientContext& context) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + kCallTimeout));
}

std::string Resource(const std::string& type) { return absl::StrCat(kNamespace, "/", type); }

deviceplugin::DeviceTree DeviceTreeOf(const std::string& type, int devices) {
  deviceplugin::DeviceTree tree;
  for (int i = 0; i < devices; ++i) tree.AddDevice(type, absl::StrCat(type, "-", i), {});
  return tree;
}

absl::StatusOr<std::unique_ptr<deviceplugin::Plugin>> StartPlugin(const fs::path& root,
                                                                  deviceplugin::DeviceTree tree) {
  deviceplugin::PluginOptions options;
  options.resource_namespace = kNamespace;
  options.plugin_dir = root / "device-plugins";
  auto plugin = deviceplugin::Plugin::Start(std::move(options), nullptr);
  if (!plugin.ok()) return plugin.status();
  (*plugin)->Notify(std::move(tree));
  return plugin;
}

absl::StatusOr<std::unique_ptr<deviceplugin::Plugin>> StartPlugin(const fs::path& root,
                                                                  const std::string& type,
                                                                  int devices) {
  return StartPlugin(root, DeviceTreeOf(type, devices));
}

absl::Status WaitAllocatable(BenchDaemon& daemon, const std::string& resource, int64_t devices) {
  auto stub = ::v1::PodResourcesLister::NewStub(daemon.podresources());
  const absl::Time deadline = absl::Now() + kStartTimeout;
  for (;;) {
    grpc::ClientContext context;
    SetDeadline(context);
    ::v1::AllocatableResourcesResponse response;
    grpc::Status status = stub->GetAllocatableResources(&context, {}, &response);
    if (!status.ok()) return FromGrpc("GetAllocatableResources", status);
    int64_t seen = 0;
    for (const auto& container_devices : response.devices()) {
      if (resource.empty() || container_devices.resource_name() == resource) {
        seen += container_devices.device_ids_size();
      }
    }
    if (seen == devices) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("allocatable ", resource, ": ", seen, " of ", devices, " devices"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

absl::Status WaitHealthyDevices(const BenchDaemon& daemon, const std::string& resource,
                                int64_t devices) {
  const std::string series = absl::StrCat(
      "devmgr_device_plugin_devices{health=\"healthy\",resource_name=\"", resource, "\"}");
  const absl::Time deadline = absl::Now() + kStartTimeout;
  for (;;) {
    absl::StatusOr<std::string> text = ScrapeMetrics(daemon.metrics_socket());
    if (!text.ok()) return text.status();
    if (SampleValue(*text, series) == static_cast<double>(devices)) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("metrics never showed ", devices, " healthy devices of ", resource));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

absl::StatusOr<double> HeapTrims(const BenchDaemon& daemon) {
  absl::StatusOr<std::string> text = ScrapeMetrics(daemon.metrics_socket());
  if (!text.ok()) return text.status();
  const std::optional<double> trims = SampleValue(*text, "devmgr_heap_trims_total");
  if (!trims.has_value()) {
    return absl::InternalError("the daemon's metrics have no devmgr_heap_trims_total");
  }
  return *trims;
}

absl::Status WaitHeapTrimmed(const BenchDaemon& daemon, double trims) {
  const absl::Time deadline = absl::Now() + kHeapTrimWait;
  for (;;) {
    absl::StatusOr<double> now = HeapTrims(daemon);
    if (!now.ok()) return now.status();
    if (*now > trims) return absl::OkStatus();
    if (absl::Now() > deadline) {
      if (*now == 0) return absl::DeadlineExceededError("the daemon never trimmed its heap");
      return absl::OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace devmgr::bench
