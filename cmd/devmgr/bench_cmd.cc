#include "cmd/devmgr/bench_cmd.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/file_store.h"
#include "cmd/devmgr/bench_daemon.h"
#include "cmd/devmgr/pre_serialised_service.h"
#include "cmd/devmgr/table.h"
#include "common/metrics_registry.h"
#include "common/metrics_scrape.h"
#include "deviceplugin/plugin.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "devmgr/admin/v1/api.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "podresources/client.h"
#include "podresources/v1/api.grpc.pb.h"

namespace devmgr::cli {
namespace {

namespace admin = devmgr::admin::v1;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr char kNamespace[] = "bench.example.com";
constexpr absl::Duration kStartTimeout = absl::Seconds(60);
// Longer than the daemon's heap trimmer can take after work ends (HeapTrimmer::Options).
constexpr absl::Duration kHeapTrimWait = absl::Seconds(15);
constexpr absl::Duration kCallTimeout = absl::Seconds(120);

// The steps, each against a daemon of its own, that --only selects.
constexpr char kStepLatency[] = "latency";
constexpr char kStepRestart[] = "restart";
constexpr char kStepMemory[] = "memory";

struct BenchFlags {
  bool quick = false;
  int samples = 200;
  int devices = 100000;
  int pods = 1000;
  int checkpoint_entries = 10000;
  int plugins = 256;
  int plugin_devices = 400;
  int memory_pods = 10000;
  // For how admission cost grows: the admission plugin's devices, and pods admitted before.
  int admission_devices = 8;
  int admitted_pods = 0;
  // The steps to run ("latency", "restart", "memory"); empty for all.
  std::vector<std::string> only;
  OutputFormat format = OutputFormat::kTable;
};

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

double Percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return std::nan("");
  // Nearest rank: the smallest value with at least `fraction` of the samples at or below it.
  size_t rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(values.size())));
  rank = std::clamp<size_t>(rank, 1, values.size()) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(rank), values.end());
  return values[rank];
}

double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

Row Timed(std::string name, const std::vector<double>& micros, const std::vector<double>& floor,
          std::string floor_name, double scale = 1, std::string unit = "us") {
  Row row{std::move(name),
          std::move(unit),
          Percentile(micros, 0.5) / scale,
          Percentile(micros, 0.99) / scale,
          std::nullopt,
          std::move(floor_name)};
  if (!floor.empty()) row.floor_median = Percentile(floor, 0.5) / scale;
  return row;
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

// DeviceTreeOf: `devices` healthy devices "<type>-<i>" of `type`.
deviceplugin::DeviceTree DeviceTreeOf(const std::string& type, int devices) {
  deviceplugin::DeviceTree tree;
  for (int i = 0; i < devices; ++i) tree.AddDevice(type, absl::StrCat(type, "-", i), {});
  return tree;
}

// StartPlugin serves `tree` with the SDK, registered on the root's kubelet.sock. The SDK's
// default Allocate answers at once.
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

// WaitAllocatable polls PodResources until `resource` (or, if empty, all resources together)
// has `devices` allocatable devices.
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

// WaitHealthyDevices polls the daemon's metrics until `resource` has `devices` healthy
// devices: the device manager's allocatable count (what node status reports), read at the cost
// of one line per resource, where GetAllocatableResources lists every device.
absl::Status WaitHealthyDevices(const BenchDaemon& daemon, const std::string& resource,
                                int64_t devices) {
  const std::string sample =
      absl::StrCat("\ndevmgr_device_plugin_devices{health=\"healthy\",resource_name=\"", resource,
                   "\"} ", FormatMetricValue(static_cast<double>(devices)), "\n");
  const absl::Time deadline = absl::Now() + kStartTimeout;
  for (;;) {
    absl::StatusOr<std::string> text = ScrapeMetrics(daemon.metrics_socket());
    if (!text.ok()) return text.status();
    if (absl::StrContains(*text, sample)) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("metrics never showed ", devices, " healthy devices of ", resource));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// HeapTrims reads how often the daemon has handed freed heap memory back to the kernel.
absl::StatusOr<double> HeapTrims(const BenchDaemon& daemon) {
  absl::StatusOr<std::string> text = ScrapeMetrics(daemon.metrics_socket());
  if (!text.ok()) return text.status();
  constexpr absl::string_view kSample = "\ndevmgr_heap_trims_total ";
  absl::string_view rest = *text;
  const size_t at = rest.find(kSample);
  double trims = 0;
  if (at != absl::string_view::npos) rest = rest.substr(at + kSample.size());
  if (at == absl::string_view::npos || !absl::SimpleAtod(rest.substr(0, rest.find('\n')), &trims)) {
    return absl::InternalError("the daemon's metrics have no devmgr_heap_trims_total");
  }
  return trims;
}

// WaitHeapTrimmed waits until the daemon has trimmed its heap after the work so far: a trim
// after `trims` (read when the work ended), which comes a second after the last change. A
// trim that began between the last change and that read is the one waited for; then none
// follows, and the bound ends the wait.
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

admin::Pod MakePod(const std::string& uid, const std::string& resource, int containers,
                   int devices_per_container) {
  admin::Pod pod;
  pod.set_uid(uid);
  pod.set_namespace_("bench");
  pod.set_name(uid);
  for (int c = 0; c < containers; ++c) {
    admin::Container* container = pod.add_containers();
    container->set_name(absl::StrCat("c", c));
    (*container->mutable_devices())[resource] = devices_per_container;
  }
  return pod;
}

absl::Status Admit(admin::Admin::Stub& stub, admin::Pod pod) {
  grpc::ClientContext context;
  SetDeadline(context);
  admin::AdmitPodRequest request;
  *request.mutable_pod() = std::move(pod);
  admin::AdmitPodResponse response;
  return FromGrpc("AdmitPod", stub.AdmitPod(&context, request, &response));
}

absl::Status Remove(admin::Admin::Stub& stub, const std::string& uid) {
  grpc::ClientContext context;
  SetDeadline(context);
  admin::RemovePodRequest request;
  request.set_pod_uid(uid);
  admin::RemovePodResponse response;
  return FromGrpc("RemovePod", stub.RemovePod(&context, request, &response));
}

// AdmitMany admits pods 0..count-1 (made by `make_pod`) from `threads` admitters, admitter t
// taking pods t, t+threads, ...; returns each admission's latency.
absl::StatusOr<std::vector<double>> AdmitMany(BenchDaemon& daemon, int count, int threads,
                                              const std::function<admin::Pod(int)>& make_pod) {
  std::vector<std::vector<double>> latencies(static_cast<size_t>(threads));
  std::vector<absl::Status> errors(static_cast<size_t>(threads));
  std::vector<std::thread> admitters;
  for (int t = 0; t < threads; ++t) {
    admitters.emplace_back([&, t] {
      auto stub = admin::Admin::NewStub(daemon.admin());
      for (int i = t; i < count && errors[static_cast<size_t>(t)].ok(); i += threads) {
        admin::Pod pod = make_pod(i);
        const auto start = Clock::now();
        errors[static_cast<size_t>(t)] = Admit(*stub, std::move(pod));
        latencies[static_cast<size_t>(t)].push_back(MicrosSince(start));
      }
    });
  }
  for (std::thread& admitter : admitters) admitter.join();
  std::vector<double> all;
  for (size_t t = 0; t < errors.size(); ++t) {
    if (!errors[t].ok()) return errors[t];
    all.insert(all.end(), latencies[t].begin(), latencies[t].end());
  }
  return all;
}

absl::Status RemoveMany(BenchDaemon& daemon, const std::string& prefix, int count) {
  auto stub = admin::Admin::NewStub(daemon.admin());
  for (int i = 0; i < count; ++i) {
    if (absl::Status status = Remove(*stub, absl::StrCat(prefix, i)); !status.ok()) return status;
  }
  return absl::OkStatus();
}

// Admission of a 1-container, 1-device pod through the admin API, beside one bare Allocate
// round trip to the same plugin plus one durable write of the checkpoint the daemon wrote.
absl::Status MeasureAdmission(const fs::path& root, BenchDaemon& daemon, const BenchFlags& flags,
                              std::vector<Row>& rows) {
  if (flags.admitted_pods >= flags.admission_devices) {
    return absl::InvalidArgumentError("--admitted-pods must be below --admission-devices");
  }
  auto plugin = StartPlugin(root, "adm", flags.admission_devices);
  if (!plugin.ok()) return plugin.status();
  if (absl::Status status = WaitAllocatable(daemon, Resource("adm"), flags.admission_devices);
      !status.ok()) {
    return status;
  }
  auto admitted = AdmitMany(daemon, flags.admitted_pods, 8, [](int i) {
    return MakePod(absl::StrCat("adm-background-", i), Resource("adm"), 1, 1);
  });
  if (!admitted.ok()) return admitted.status();
  auto stub = admin::Admin::NewStub(daemon.admin());
  std::vector<double> measured;
  std::string checkpoint_bytes;
  for (int i = 0; i < flags.samples; ++i) {
    const std::string uid = absl::StrCat("adm-", i);
    const auto start = Clock::now();
    if (absl::Status status = Admit(*stub, MakePod(uid, Resource("adm"), 1, 1)); !status.ok()) {
      return status;
    }
    measured.push_back(MicrosSince(start));
    if (checkpoint_bytes.empty()) {
      auto bytes =
          checkpoint::ReadWholeFile(root / "device-plugins" / "kubelet_internal_checkpoint");
      if (!bytes.ok()) return bytes.status();
      checkpoint_bytes = *std::move(bytes);
    }
    if (absl::Status status = Remove(*stub, uid); !status.ok()) return status;
  }

  auto plugin_stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel(absl::StrCat("unix://", (*plugin)->SocketPath("adm").string()),
                          grpc::InsecureChannelCredentials()));
  const fs::path floor_dir = root / "floor-checkpoint";
  fs::create_directories(floor_dir);
  const checkpoint::FileStore store(floor_dir);
  std::vector<double> floor;
  for (int i = 0; i < flags.samples; ++i) {
    const auto start = Clock::now();
    v1beta1::AllocateRequest request;
    request.add_container_requests()->add_devices_ids("adm-0");
    v1beta1::AllocateResponse response;
    grpc::ClientContext context;
    SetDeadline(context);
    if (absl::Status status =
            FromGrpc("Allocate", plugin_stub->Allocate(&context, request, &response));
        !status.ok()) {
      return status;
    }
    if (absl::Status status = store.Write("kubelet_internal_checkpoint", checkpoint_bytes);
        !status.ok()) {
      return status;
    }
    floor.push_back(MicrosSince(start));
  }
  std::string name = "admit pod, 1 container x 1 device";
  if (flags.admission_devices != 8 || flags.admitted_pods != 0) {
    absl::StrAppend(&name, ", of ", flags.admission_devices, " devices, ", flags.admitted_pods,
                    " pods before");
  }
  rows.push_back(Timed(std::move(name), measured, floor,
                       "Allocate rpc + write/fsync/rename of the same checkpoint"));
  return RemoveMany(daemon, "adm-background-", flags.admitted_pods);
}

// Admissions per second with 8 admitters over 8 plugins, beside the same admissions made one
// after the other: the ratio is the speedup concurrency gives.
absl::Status MeasureConcurrentAdmission(const fs::path& root, BenchDaemon& daemon,
                                        const BenchFlags& flags, std::vector<Row>& rows) {
  constexpr int kAdmitters = 8;
  const int batch =
      std::max(kAdmitters * 2, (flags.samples + kAdmitters - 1) / kAdmitters * kAdmitters);
  std::vector<std::unique_ptr<deviceplugin::Plugin>> plugins;
  for (int p = 0; p < kAdmitters; ++p) {
    auto plugin = StartPlugin(root, absl::StrCat("c", p), batch / kAdmitters);
    if (!plugin.ok()) return plugin.status();
    plugins.push_back(*std::move(plugin));
  }
  for (int p = 0; p < kAdmitters; ++p) {
    absl::Status status =
        WaitAllocatable(daemon, Resource(absl::StrCat("c", p)), batch / kAdmitters);
    if (!status.ok()) return status;
  }
  constexpr int kRounds = 3;
  std::vector<double> rates[2];  // [0] serial, [1] concurrent
  for (int round = 0; round < kRounds; ++round) {
    for (int concurrent = 0; concurrent < 2; ++concurrent) {
      const std::string prefix = absl::StrCat("conc-", round, "-", concurrent, "-");
      const auto start = Clock::now();
      auto latencies = AdmitMany(daemon, batch, concurrent != 0 ? kAdmitters : 1, [&](int i) {
        return MakePod(absl::StrCat(prefix, i), Resource(absl::StrCat("c", i % kAdmitters)), 1, 1);
      });
      if (!latencies.ok()) return latencies.status();
      rates[concurrent].push_back(batch / (MicrosSince(start) / 1e6));
      if (absl::Status status = RemoveMany(daemon, prefix, batch); !status.ok()) return status;
    }
  }
  Row row{absl::StrCat("admissions/s, ", kAdmitters, " admitters x ", kAdmitters, " plugins"),
          "1/s",
          Percentile(rates[1], 0.5),
          std::nullopt,
          Percentile(rates[0], 0.5),
          "the same admissions from 1 admitter",
          true};
  rows.push_back(std::move(row));
  return absl::OkStatus();
}

// CallsPerSecond runs `call` for `seconds` and returns how many it made per second.
absl::StatusOr<double> CallsPerSecond(double seconds, const std::function<absl::Status()>& call) {
  const auto start = Clock::now();
  int64_t calls = 0;
  while (MicrosSince(start) < seconds * 1e6) {
    if (absl::Status status = call(); !status.ok()) return status;
    ++calls;
  }
  return static_cast<double>(calls) / (MicrosSince(start) / 1e6);
}

// TimeCalls makes `samples` calls of `call` (which fills a Response and returns the call's
// status), checks every answer with `check`, and keeps the bytes of the first in `serialised`
// (for the bare server that answers with the same). `before`, if given, runs before each call,
// outside the time measured.
template <typename Response>
absl::Status TimeCalls(int samples,
                       const std::function<grpc::Status(grpc::ClientContext&, Response&)>& call,
                       const std::function<absl::Status(const Response&)>& check,
                       std::vector<double>& micros, std::string& serialised,
                       const std::function<absl::Status()>& before = {}) {
  for (int i = 0; i < samples; ++i) {
    if (before) {
      if (absl::Status status = before(); !status.ok()) return status;
    }
    const auto start = Clock::now();
    grpc::ClientContext context;
    SetDeadline(context);
    Response response;
    if (absl::Status status = FromGrpc("call", call(context, response)); !status.ok()) {
      return status;
    }
    micros.push_back(MicrosSince(start));
    if (absl::Status status = check(response); !status.ok()) return status;
    if (serialised.empty()) serialised = response.SerializeAsString();
  }
  return absl::OkStatus();
}

// BareServer: PreSerialisedService on its own socket, with a channel to it. The floor of a
// read-only PodResources call.
class BareServer {
 public:
  static absl::StatusOr<std::unique_ptr<BareServer>> Start(const fs::path& socket,
                                                           const std::string& bytes) {
    std::unique_ptr<BareServer> bare(new BareServer(bytes));
    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat("unix://", socket.string()),
                             grpc::InsecureServerCredentials());
    builder.RegisterCallbackGenericService(&bare->service_);
    bare->server_ = builder.BuildAndStart();
    if (bare->server_ == nullptr) return absl::InternalError("the bare server did not start");
    auto channel = podresources::Dial({socket});
    if (!channel.ok()) return channel.status();
    bare->channel_ = *channel;
    return bare;
  }
  ~BareServer() {
    channel_.reset();
    if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }
  BareServer(const BareServer&) = delete;
  BareServer& operator=(const BareServer&) = delete;

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  explicit BareServer(const std::string& bytes) : service_(bytes) {}

  PreSerialisedService service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

// GetAllocatableResources while `devices` devices are allocatable, beside a bare server
// answering with the same bytes.
absl::Status MeasureAllocatable(const fs::path& root, BenchDaemon& daemon, const BenchFlags& flags,
                                int64_t devices, std::vector<Row>& rows) {
  using Response = ::v1::AllocatableResourcesResponse;
  auto call_on = [](const std::shared_ptr<grpc::Channel>& channel) {
    return [stub = std::shared_ptr(::v1::PodResourcesLister::NewStub(channel))](
               grpc::ClientContext& context, Response& response) {
      return stub->GetAllocatableResources(&context, {}, &response);
    };
  };
  auto check = [devices](const Response& response) {
    int64_t seen = 0;
    for (const auto& entry : response.devices()) seen += entry.device_ids_size();
    if (seen == devices) return absl::OkStatus();
    return absl::InternalError(
        absl::StrCat("GetAllocatableResources: ", seen, " devices, not ", devices));
  };
  const int samples = std::min(flags.samples, 20);
  std::string serialised;
  std::vector<double> measured;
  if (absl::Status status =
          TimeCalls<Response>(samples, call_on(daemon.podresources()), check, measured, serialised);
      !status.ok()) {
    return status;
  }
  auto bare = BareServer::Start(root / "floor-allocatable.sock", serialised);
  if (!bare.ok()) return bare.status();
  std::vector<double> floor;
  if (absl::Status status =
          TimeCalls<Response>(samples, call_on((*bare)->channel()), check, floor, serialised);
      !status.ok()) {
    return status;
  }
  rows.push_back(Timed(absl::StrCat("PodResources GetAllocatableResources, ", devices, " devices"),
                       measured, floor, "bare server sending the same pre-serialised bytes", 1000,
                       "ms"));
  return absl::OkStatus();
}

// ListAndWatch of N devices, from a plugin's start until the daemon counts the N devices
// healthy (its metrics, as node status would show them), beside a bare client that starts the
// same plugin where no kubelet listens, waits for its socket, dials it and decodes the first
// ListAndWatch message. Both plugins build their tree before the clock starts and their
// ListAndWatch message after: what the daemon adds is registration, dialing back and taking
// the devices in. The same figures are also set beside decoding alone: a bare client dialing
// the daemon's plugin, which already serves, and decoding its first message. Then
// GetAllocatableResources over those N devices.
absl::Status MeasureListAndWatch(const fs::path& root, BenchDaemon& daemon, const BenchFlags& flags,
                                 std::vector<Row>& rows) {
  const int rounds = std::min(flags.samples, 11);
  const fs::path floor_root = root / "floor-lw";
  fs::create_directories(floor_root / "device-plugins");
  std::vector<double> measured;
  std::vector<double> floor;
  std::vector<double> decoding;
  // Dials `socket` and decodes the first ListAndWatch message, which must hold every device.
  auto decode = [&flags](const fs::path& socket) -> absl::Status {
    auto channel = podresources::Dial({socket});
    if (!channel.ok()) return channel.status();
    auto stub = v1beta1::DevicePlugin::NewStub(*channel);
    grpc::ClientContext context;
    auto reader = stub->ListAndWatch(&context, {});
    v1beta1::ListAndWatchResponse response;
    const bool full = reader->Read(&response) && response.devices_size() == flags.devices;
    context.TryCancel();
    reader->Finish().IgnoreError();
    if (!full) return absl::InternalError("bare ListAndWatch client: no full snapshot");
    return absl::OkStatus();
  };
  std::unique_ptr<deviceplugin::Plugin> plugin;
  for (int round = 0; round < rounds; ++round) {
    const std::string type = absl::StrCat("lw", round);
    deviceplugin::DeviceTree tree = DeviceTreeOf(type, flags.devices);
    plugin.reset();  // the previous round's, before the clock starts
    const auto start = Clock::now();
    auto started = StartPlugin(root, std::move(tree));
    if (!started.ok()) return started.status();
    plugin = *std::move(started);
    if (absl::Status status = WaitHealthyDevices(daemon, Resource(type), flags.devices);
        !status.ok()) {
      return status;
    }
    measured.push_back(MicrosSince(start));

    const auto decoding_start = Clock::now();
    if (absl::Status status = decode(plugin->SocketPath(type)); !status.ok()) return status;
    decoding.push_back(MicrosSince(decoding_start));

    deviceplugin::DeviceTree floor_tree = DeviceTreeOf(type, flags.devices);
    const auto floor_start = Clock::now();
    auto floor_plugin = StartPlugin(floor_root, std::move(floor_tree));
    if (!floor_plugin.ok()) return floor_plugin.status();
    const fs::path socket = (*floor_plugin)->SocketPath(type);
    const absl::Time deadline = absl::Now() + kStartTimeout;
    while (!fs::exists(socket)) {
      if (absl::Now() > deadline) return absl::DeadlineExceededError("floor plugin: no socket");
      absl::SleepFor(absl::Microseconds(100));
    }
    if (absl::Status status = decode(socket); !status.ok()) return status;
    floor.push_back(MicrosSince(floor_start));
  }
  rows.push_back(Timed(
      absl::StrCat("ListAndWatch ", flags.devices, " devices to allocatable"), measured, floor,
      "bare client starting the same plugin, dialing and decoding its stream", 1000, "ms"));
  rows.push_back(Timed(
      absl::StrCat("ListAndWatch ", flags.devices, " devices, beside decoding"), measured, decoding,
      "bare client dialing the plugin already serving and decoding its stream", 1000, "ms"));
  // The last round's plugin still serves: its devices are the only allocatable ones.
  return MeasureAllocatable(root, daemon, flags, flags.devices, rows);
}

// PodResources List with P pods x 4 containers x 2 devices, beside a bare server answering
// with the same response serialised in advance; then calls per second of each. The daemon
// sends its kept answer again while nothing changed (podresources/list_cache.h), so List is
// also measured with one pod removed and admitted again before each call, which makes every
// answer a new one.
absl::Status MeasureList(const fs::path& root, BenchDaemon& daemon, const BenchFlags& flags,
                         std::vector<Row>& rows) {
  auto plugin = StartPlugin(root, "list", flags.pods * 8);
  if (!plugin.ok()) return plugin.status();
  if (absl::Status status = WaitAllocatable(daemon, Resource("list"), int64_t{flags.pods} * 8);
      !status.ok()) {
    return status;
  }
  auto admitted = AdmitMany(daemon, flags.pods, 8, [](int i) {
    return MakePod(absl::StrCat("list-", i), Resource("list"), 4, 2);
  });
  if (!admitted.ok()) return admitted.status();

  using Response = ::v1::ListPodResourcesResponse;
  auto call_on = [](const std::shared_ptr<grpc::Channel>& channel) {
    return [stub = std::shared_ptr(::v1::PodResourcesLister::NewStub(channel))](
               grpc::ClientContext& context, Response& response) {
      return stub->List(&context, {}, &response);
    };
  };
  auto check = [&flags](const Response& response) {
    if (response.pod_resources_size() == flags.pods) return absl::OkStatus();
    return absl::InternalError(
        absl::StrCat("List: ", response.pod_resources_size(), " pods, not ", flags.pods));
  };
  auto calls_per_second = [&flags](const auto& call) {
    return CallsPerSecond(flags.quick ? 0.1 : 2.0, [&call] {
      grpc::ClientContext context;
      SetDeadline(context);
      Response response;
      return FromGrpc("List", call(context, response));
    });
  };

  std::string serialised;
  std::vector<double> measured;
  const auto daemon_call = call_on(daemon.podresources());
  if (absl::Status status =
          TimeCalls<Response>(flags.samples, daemon_call, check, measured, serialised);
      !status.ok()) {
    return status;
  }
  auto qps = calls_per_second(daemon_call);
  if (!qps.ok()) return qps.status();
  std::vector<double> after_change;
  std::string unused;
  auto admin = admin::Admin::NewStub(daemon.admin());
  auto replace_a_pod = [&admin] {
    if (absl::Status status = Remove(*admin, "list-0"); !status.ok()) return status;
    return Admit(*admin, MakePod("list-0", Resource("list"), 4, 2));
  };
  if (absl::Status status = TimeCalls<Response>(flags.samples, daemon_call, check, after_change,
                                                unused, replace_a_pod);
      !status.ok()) {
    return status;
  }

  auto bare = BareServer::Start(root / "floor-list.sock", serialised);
  if (!bare.ok()) return bare.status();
  std::vector<double> floor;
  const auto floor_call = call_on((*bare)->channel());
  if (absl::Status status =
          TimeCalls<Response>(flags.samples, floor_call, check, floor, serialised);
      !status.ok()) {
    return status;
  }
  auto floor_qps = calls_per_second(floor_call);
  if (!floor_qps.ok()) return floor_qps.status();

  const std::string shape = absl::StrCat(flags.pods, " pods x 4 containers x 2 devices");
  rows.push_back(Timed(absl::StrCat("PodResources List, ", shape), measured, floor,
                       "bare server sending the same pre-serialised bytes"));
  rows.push_back(Timed(absl::StrCat("PodResources List after a pod changed, ", shape), after_change,
                       floor, "bare server sending the same pre-serialised bytes"));
  rows.push_back(Row{absl::StrCat("PodResources List calls/s, ", shape), "1/s", *qps, std::nullopt,
                     *floor_qps, "the same bare server, calls/s", true});
  return RemoveMany(daemon, "list-", flags.pods);
}

// A daemon starting over a K-entry checkpoint until PodResources answers, beside reading and
// decoding the same checkpoint bytes.
absl::Status MeasureRestart(const fs::path& root, const BenchFlags& flags, std::vector<Row>& rows) {
  checkpoint::CheckpointData data;
  const std::string resource = Resource("restart");
  std::vector<std::string>& registered = data.registered_devices[resource];
  for (int i = 0; i < flags.checkpoint_entries; ++i) {
    const std::string device = absl::StrCat("restart-", i);
    data.pod_device_entries.push_back({absl::StrCat("restart-pod-", i),
                                       "c0",
                                       resource,
                                       {{-1, {device}}},
                                       v1beta1::ContainerAllocateResponse().SerializeAsString()});
    registered.push_back(device);
  }
  const fs::path folder = root / "device-plugins";
  fs::create_directories(folder);
  const checkpoint::FileStore store(folder);
  if (absl::Status status = store.Write("kubelet_internal_checkpoint", checkpoint::Encode(data));
      !status.ok()) {
    return status;
  }
  const int rounds = std::min(flags.samples, 5);
  std::vector<double> measured;
  for (int round = 0; round < rounds; ++round) {
    const auto start = Clock::now();
    auto daemon = BenchDaemon::Start(root, kStartTimeout);
    if (!daemon.ok()) return daemon.status();
    measured.push_back(MicrosSince(start));
  }
  std::vector<double> floor;
  for (int round = 0; round < flags.samples; ++round) {
    const auto start = Clock::now();
    auto bytes = checkpoint::ReadWholeFile(folder / "kubelet_internal_checkpoint");
    if (!bytes.ok()) return bytes.status();
    auto decoded = checkpoint::Decode(*bytes);
    if (!decoded.ok()) return decoded.status();
    if (decoded->pod_device_entries.size() != static_cast<size_t>(flags.checkpoint_entries)) {
      return absl::InternalError("the daemon lost checkpoint entries across restarts");
    }
    floor.push_back(MicrosSince(start));
  }
  rows.push_back(Timed(
      absl::StrCat("restart, ", flags.checkpoint_entries, "-entry checkpoint, to PodResources"),
      measured, floor, "read + decode the same checkpoint bytes", 1000, "ms"));
  return absl::OkStatus();
}

double MiB(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// The daemon's resident memory idle, then with X plugins x Y devices and Z one-device pods.
absl::Status MeasureMemory(const fs::path& root, const BenchFlags& flags, std::vector<Row>& rows) {
  auto daemon = BenchDaemon::Start(root, kStartTimeout);
  if (!daemon.ok()) return daemon.status();
  auto idle = (*daemon)->ResidentBytes();
  if (!idle.ok()) return idle.status();
  rows.push_back(Row{"resident memory, idle", "MiB", MiB(*idle), std::nullopt, std::nullopt, ""});

  std::vector<std::unique_ptr<deviceplugin::Plugin>> plugins;
  for (int p = 0; p < flags.plugins; ++p) {
    auto plugin = StartPlugin(root, absl::StrCat("m", p), flags.plugin_devices);
    if (!plugin.ok()) return plugin.status();
    plugins.push_back(*std::move(plugin));
  }
  if (absl::Status status =
          WaitAllocatable(**daemon, "", int64_t{flags.plugins} * flags.plugin_devices);
      !status.ok()) {
    return status;
  }
  auto admitted = AdmitMany(**daemon, flags.memory_pods, 8, [&](int i) {
    return MakePod(absl::StrCat("mem-", i), Resource(absl::StrCat("m", i % flags.plugins)), 1, 1);
  });
  if (!admitted.ok()) return admitted.status();
  auto trims = HeapTrims(**daemon);
  if (!trims.ok()) return trims.status();
  auto busy = (*daemon)->ResidentBytes();
  if (!busy.ok()) return busy.status();
  if (absl::Status trimmed = WaitHeapTrimmed(**daemon, *trims); !trimmed.ok()) return trimmed;
  auto loaded = (*daemon)->ResidentBytes();
  auto peak = (*daemon)->ResidentBytes(/*peak=*/true);
  if (!loaded.ok()) return loaded.status();
  if (!peak.ok()) return peak.status();
  const std::string load = absl::StrCat(flags.plugins, " plugins x ", flags.plugin_devices,
                                        " devices + ", flags.memory_pods, " pods");
  rows.push_back(Row{absl::StrCat("resident memory, ", load, ", right after the last admission"),
                     "MiB", MiB(*busy), std::nullopt, std::nullopt, ""});
  rows.push_back(Row{absl::StrCat("resident memory, ", load), "MiB", MiB(*loaded), std::nullopt,
                     std::nullopt, ""});
  rows.push_back(Row{absl::StrCat("peak resident memory, ", load), "MiB", MiB(*peak), std::nullopt,
                     std::nullopt, ""});
  return absl::OkStatus();
}

// A private root under /tmp (short: unix socket paths), removed at the end.
class TempRoot {
 public:
  TempRoot() {
    std::string pattern = "/tmp/devmgr-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempRoot() {
    std::error_code error;
    if (!path_.empty()) fs::remove_all(path_, error);
  }
  TempRoot(const TempRoot&) = delete;
  TempRoot& operator=(const TempRoot&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

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

void Print(const BenchFlags& flags, const std::vector<Row>& rows) {
  if (flags.format == OutputFormat::kJson) {
    nlohmann::json out;
    out["sizes"] = {{"samples", flags.samples},
                    {"devices", flags.devices},
                    {"pods", flags.pods},
                    {"checkpoint_entries", flags.checkpoint_entries},
                    {"plugins", flags.plugins},
                    {"plugin_devices", flags.plugin_devices},
                    {"memory_pods", flags.memory_pods},
                    {"admission_devices", flags.admission_devices},
                    {"admitted_pods", flags.admitted_pods}};
    out["results"] = nlohmann::json::array();
    for (const Row& row : rows) {
      out["results"].push_back({{"name", row.name},
                                {"unit", row.unit},
                                {"median", JsonNumber(row.median)},
                                {"p99", JsonNumber(row.p99)},
                                {"floor", row.floor},
                                {"floor_median", JsonNumber(row.floor_median)},
                                {"ratio", JsonNumber(Ratio(row))},
                                {"higher_is_better", row.higher_is_better}});
    }
    std::cout << out.dump(2) << '\n';
    return;
  }
  Table table({"MEASUREMENT", "UNIT", "MEDIAN", "P99", "FLOOR", "RATIO", "FLOOR IS"});
  for (const Row& row : rows) {
    table.AddRow({row.name, row.unit, Number(row.median), Number(row.p99), Number(row.floor_median),
                  Number(Ratio(row)), row.floor.empty() ? "-" : row.floor});
  }
  table.Print(std::cout);
}

int RunBench(const BenchFlags& flags) {
  std::vector<Row> rows;
  auto step = [&](absl::string_view what, const std::function<absl::Status(const fs::path&)>& run) {
    TempRoot root;
    if (root.path().empty()) return absl::InternalError("cannot make a folder under /tmp");
    absl::Status status = run(root.path());
    if (!status.ok())
      return absl::Status(status.code(), absl::StrCat(what, ": ", status.message()));
    return absl::OkStatus();
  };
  auto wanted = [&](absl::string_view name) {
    return flags.only.empty() || absl::c_linear_search(flags.only, name);
  };
  absl::Status status;
  if (wanted(kStepLatency)) {
    status = step("admission, ListAndWatch, List", [&](const fs::path& root) {
      auto daemon = BenchDaemon::Start(root, kStartTimeout);
      if (!daemon.ok()) return daemon.status();
      for (const auto& measure :
           {MeasureAdmission, MeasureConcurrentAdmission, MeasureListAndWatch, MeasureList}) {
        if (absl::Status result = measure(root, **daemon, flags, rows); !result.ok()) {
          return result;
        }
      }
      return absl::OkStatus();
    });
  }
  if (status.ok() && wanted(kStepRestart)) {
    status =
        step("restart", [&](const fs::path& root) { return MeasureRestart(root, flags, rows); });
  }
  if (status.ok() && wanted(kStepMemory)) {
    status = step("memory", [&](const fs::path& root) { return MeasureMemory(root, flags, rows); });
  }
  if (!status.ok()) return Fail(kExitNo, status.ToString());
  Print(flags, rows);
  return kExitOk;
}

}  // namespace

void AddBenchCommand(CLI::App& app, CommandResult& result) {
  auto flags = std::make_shared<BenchFlags>();
  CLI::App* bench = app.add_subcommand(
      "bench", "measure a real devmgr serve with real plugins, each path beside its floor");
  bench->add_flag("--quick", flags->quick, "tiny sizes, to check that every measurement runs");
  struct Size {
    const char* flag;
    int BenchFlags::*field;
    int quick;
    const char* help;
    bool zero_allowed = false;
  };
  const std::vector<Size> sizes = {
      {"--samples", &BenchFlags::samples, 5, "samples per latency measurement"},
      {"--devices", &BenchFlags::devices, 100, "devices of the ListAndWatch plugin"},
      {"--pods", &BenchFlags::pods, 4, "pods (x 4 containers x 2 devices) for PodResources List"},
      {"--checkpoint-entries", &BenchFlags::checkpoint_entries, 10,
       "entries of the restart checkpoint"},
      {"--plugins", &BenchFlags::plugins, 2, "plugins for the memory measurement"},
      {"--plugin-devices", &BenchFlags::plugin_devices, 4, "devices per plugin for memory"},
      {"--memory-pods", &BenchFlags::memory_pods, 4, "one-device pods for memory"},
      {"--admission-devices", &BenchFlags::admission_devices, 8,
       "devices of the plugin that single admissions use"},
      {"--admitted-pods", &BenchFlags::admitted_pods, 0,
       "one-device pods admitted before single admissions are measured", true},
  };
  std::vector<std::pair<CLI::Option*, Size>> options;
  for (const Size& size : sizes) {
    CLI::Option* option =
        bench->add_option(size.flag, (*flags).*size.field, size.help)
            ->capture_default_str()
            ->check(size.zero_allowed ? CLI::NonNegativeNumber : CLI::PositiveNumber);
    options.emplace_back(option, size);
  }
  bench
      ->add_option("--only", flags->only,
                   "run only these steps: latency (admission, ListAndWatch, List), restart, "
                   "memory; repeat or separate with commas")
      ->delimiter(',')
      ->check(CLI::IsMember({kStepLatency, kStepRestart, kStepMemory}));
  AddOutputFlag(*bench, flags->format);
  bench->callback([flags, options, &result] {
    BenchFlags run = *flags;
    // --quick replaces the defaults only: a size given on the command line still counts.
    for (const auto& [option, size] : options) {
      if (run.quick && option->count() == 0) run.*size.field = size.quick;
    }
    result.exit_code = RunBench(run);
  });
}

}  // namespace devmgr::cli
