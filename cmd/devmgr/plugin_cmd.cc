#include "cmd/devmgr/plugin_cmd.h"

#include <pthread.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cmd/devmgr/cluster.h"
#include "cmd/devmgr/command_tree.h"
#include "cmd/devmgr/log_flags.h"
#include "common/file_store.h"
#include "common/logging.h"
#include "common/unix_socket.h"
#include "deviceplugin/cdi.h"
#include "deviceplugin/plugin.h"
#include "kubeclient/client.h"
#include "kubeletplugin/admin_claim_lookup.h"
#include "kubeletplugin/socket_names.h"
#include "node/cluster_claim_source.h"
#include "plugins/fake/fake_plugin.h"
#include "plugins/fakedra/fake_driver.h"
#include "plugins/generic/generic_plugin.h"
#include "plugins/generic/nvml_library.h"
#include "plugins/generic/share_spreader.h"
#include "plugins/generic/xid_watch.h"
#include "resourceslice/api_store.h"
#include "resourceslice/store_service.h"

namespace devmgr::cli {
namespace {

// A fake plugin builds all its devices before it serves (a billion took 23 GiB): more than a
// million is no node's, and is refused as usage.
constexpr int64_t kMaxFakeDevices = 1'000'000;

// Flags every plugin shares.
struct CommonFlags {
  std::string root_dir = "/var/lib/kubelet";
  bool registry = false;
  std::string cdi_dir;
  std::string check_interval = "1s";
  LogFlags log;
};

struct FakeFlags {
  std::string resource;
  int64_t devices = 1;
  int64_t numa_nodes = 0;
  std::string id_prefix = "dev-";
  std::string flip_every = "0s";
  std::string preferred = "none";
  std::string allocate_latency = "0s";
  std::string allocate_error;
  bool allocate_hang = false;
  bool preferred_hang = false;
};

struct FakeDraFlags {
  std::string driver;
  int64_t devices = 1;
  std::string root_dir = "/var/lib/kubelet";
  std::string node = "node";
  ClusterFlags cluster;
  std::string rolling_update;
  std::string versions = "v1,v1beta1";
  std::string cdi_dir;
  std::string prepare_latency = "0s";
  std::string prepare_error;
  std::string unprepare_error;
  bool prepare_hang = false;
  std::string only;
  LogFlags log;
};

// Deadline of each call to the daemon (a claim lookup, a ResourceSlice write): well inside the
// 45 s the kubelet gives a whole NodePrepareResources.
constexpr absl::Duration kDaemonCallTimeout = absl::Seconds(10);

struct GenericFlags {
  std::string config;
  std::string rescan_interval = "5s";
  std::string dev_root = "/";
  std::string sys_root = "/sys";
  std::string proc_root = "/proc";
  std::string nvml_library = plugins::kNvmlSoname;
};

void AddCommonFlags(CLI::App& command, CommonFlags& flags) {
  command
      .add_option("--root-dir", flags.root_dir,
                  "Kubelet root folder: kubelet.sock is in DIR/device-plugins")
      ->type_name("DIR")
      ->capture_default_str();
  command.add_flag("--registry", flags.registry,
                   "Register through DIR/plugins_registry instead of kubelet.sock");
  command
      .add_option("--cdi-dir", flags.cdi_dir,
                  "Write CDI spec files here and return CDI device names")
      ->type_name("DIR");
  command
      .add_option("--check-interval", flags.check_interval,
                  "How often to check for a kubelet restart")
      ->type_name("DURATION")
      ->capture_default_str();
  AddLogFlags(command, flags.log);
}

// BlockStopSignals blocks the signals the command waits for, in this thread and in every thread
// started after it, so that only sigwait below sees them.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// WaitForStopSignal returns on SIGTERM or SIGINT (blocked with BlockStopSignals); SIGUSR1 calls
// `on_usr1` and goes on waiting.
void WaitForStopSignal(const sigset_t& signals, const LoggerPtr& logger,
                       const std::function<void()>& on_usr1) {
  for (;;) {
    int signal = 0;
    if (sigwait(&signals, &signal) != 0) continue;
    if (signal == SIGUSR1) {
      on_usr1();
      continue;
    }
    DEVMGR_LOG(logger, info, "Stopping on signal", "signal", signal);
    return;
  }
}

// PluginLogger: the plugins' logger on stderr, at the level --log names.
absl::StatusOr<LoggerPtr> PluginLogger(const LogFlags& log_flag) {
  return NewLogger(log_flag, "devmgr-plugin", std::make_shared<spdlog::sinks::stderr_sink_mt>());
}

// RunPlugin starts a plugin and serves until SIGTERM or SIGINT; SIGUSR1 calls `on_usr1`.
// `device_types` are the types the plugin serves; `cdi_kinds` those whose CDI kind is not
// "<namespace>/<type>" (CdiOptions).
int RunPlugin(const CommonFlags& flags, const LoggerPtr& logger,
              const std::string& resource_namespace, const std::vector<std::string>& device_types,
              deviceplugin::Scanner& scanner, const deviceplugin::Hooks& hooks,
              std::map<std::string, std::string, std::less<>> cdi_kinds,
              const std::function<void()>& on_usr1, const std::function<void()>& before_stop) {
  absl::StatusOr<absl::Duration> check_interval =
      ParseFlagDuration("--check-interval", flags.check_interval);
  if (!check_interval.ok()) return Fail(kExitUsage, check_interval.status().message());
  if (*check_interval == absl::ZeroDuration()) {
    return Fail(kExitUsage, "--check-interval must be positive");
  }

  const sigset_t signals = BlockStopSignals();

  deviceplugin::PluginOptions options;
  options.resource_namespace = resource_namespace;
  options.registration = flags.registry ? deviceplugin::RegistrationMode::kPluginsRegistry
                                        : deviceplugin::RegistrationMode::kKubeletSocket;
  options.plugin_dir = std::filesystem::path(flags.root_dir) / "device-plugins";
  options.registry_dir = std::filesystem::path(flags.root_dir) / "plugins_registry";
  options.check_interval = *check_interval;
  if (!flags.cdi_dir.empty()) {
    options.cdi = deviceplugin::CdiOptions{
        .folder = flags.cdi_dir, .vendor = resource_namespace, .kinds = std::move(cdi_kinds)};
    // Otherwise the type would be served without CDI (its spec not written, Allocate naming no
    // CDI device), which a node whose runtime expects CDI finds only in the log.
    for (const std::string& type : device_types) {
      const std::string kind = deviceplugin::CdiKind(*options.cdi, type);
      if (!deviceplugin::IsValidCdiKind(kind)) {
        return Fail(
            kExitUsage,
            absl::StrCat("--cdi-dir: device type ", type, " would have the CDI kind \"", kind,
                         "\", which CDI refuses: each part of <vendor>/<class> must "
                         "begin with a letter and end with a letter or digit"));
      }
    }
  }
  options.hooks = hooks;
  options.logger = logger;
  absl::StatusOr<std::unique_ptr<deviceplugin::Plugin>> plugin =
      deviceplugin::Plugin::Start(std::move(options), &scanner);
  if (!plugin.ok()) return Fail(kExitUsage, plugin.status().message());

  WaitForStopSignal(signals, logger, on_usr1);
  before_stop();
  (*plugin)->Stop();
  return kExitOk;
}

// SplitResource splits "example.com/gpu" into its namespace and device type.
bool SplitResource(const std::string& resource, std::string& ns, std::string& type) {
  const size_t slash = resource.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == resource.size() ||
      resource.find('/', slash + 1) != std::string::npos) {
    return false;
  }
  ns = resource.substr(0, slash);
  type = resource.substr(slash + 1);
  return true;
}

int RunFake(const CommonFlags& common, const FakeFlags& flags) {
  std::string ns;
  plugins::FakeDeviceOptions devices;
  if (!SplitResource(flags.resource, ns, devices.device_type)) {
    return Fail(kExitUsage, absl::StrCat("--resource: want NAMESPACE/TYPE like example.com/gpu, "
                                         "not \"",
                                         flags.resource, "\""));
  }
  if (flags.devices < 0 || flags.devices > kMaxFakeDevices) {
    return Fail(kExitUsage, absl::StrCat("--devices must be 0 to ", kMaxFakeDevices));
  }
  if (flags.numa_nodes < 0) return Fail(kExitUsage, "--numa-nodes must not be negative");
  devices.devices = flags.devices;
  devices.numa_nodes = flags.numa_nodes;
  devices.id_prefix = flags.id_prefix;
  devices.null_device_nodes = !common.cdi_dir.empty();
  absl::StatusOr<absl::Duration> flip_every = ParseFlagDuration("--flip-every", flags.flip_every);
  absl::StatusOr<absl::Duration> latency =
      ParseFlagDuration("--allocate-latency", flags.allocate_latency);
  if (!flip_every.ok()) return Fail(kExitUsage, flip_every.status().message());
  if (!latency.ok()) return Fail(kExitUsage, latency.status().message());
  devices.flip_every = *flip_every;

  plugins::FakeHookOptions hook_options;
  if (flags.preferred == "none") {
    hook_options.preferred = plugins::PreferredPolicy::kNone;
  } else if (flags.preferred == "first") {
    hook_options.preferred = plugins::PreferredPolicy::kFirst;
  } else if (flags.preferred == "numa") {
    hook_options.preferred = plugins::PreferredPolicy::kNuma;
  } else {
    return Fail(kExitUsage, absl::StrCat("--preferred: want none, first or numa, not \"",
                                         flags.preferred, "\""));
  }
  if (flags.preferred_hang && hook_options.preferred == plugins::PreferredPolicy::kNone) {
    return Fail(kExitUsage, "--preferred-hang: needs --preferred first or numa");
  }
  hook_options.allocate_latency = *latency;
  hook_options.allocate_error = flags.allocate_error;
  hook_options.allocate_hang = flags.allocate_hang;
  hook_options.preferred_hang = flags.preferred_hang;

  absl::StatusOr<LoggerPtr> logger = PluginLogger(common.log);
  if (!logger.ok()) return Fail(kExitUsage, logger.status().message());
  plugins::FakeScanner scanner(devices);
  plugins::FakeHooks hooks(hook_options);
  return RunPlugin(
      common, *logger, ns, {devices.device_type}, scanner, hooks.AsHooks(), {},
      [&] { scanner.RequestFlip(); }, [&] { hooks.Release(); });
}

// RunFakeDra serves a fake DRA driver until SIGTERM or SIGINT. Claims are read from the daemon
// on <root>/devmgr.sock; the channel connects lazily, so the driver may start before the daemon
// does (a claim prepared while no daemon answers fails, and the node retries it).
int RunFakeDra(const FakeDraFlags& flags) {
  if (!kubeletplugin::IsValidDriverName(flags.driver)) {
    return Fail(kExitUsage,
                absl::StrCat("--driver: want a DNS subdomain of at most 63 characters like "
                             "gpu.example.com, not \"",
                             flags.driver, "\""));
  }
  if (flags.devices < 0 || flags.devices > kMaxFakeDevices) {
    return Fail(kExitUsage, absl::StrCat("--devices must be 0 to ", kMaxFakeDevices));
  }
  plugins::FakeDraOptions options;
  options.serve_v1 = false;
  options.serve_v1beta1 = false;
  for (absl::string_view version : absl::StrSplit(flags.versions, ',')) {
    if (version == "v1") {
      options.serve_v1 = true;
    } else if (version == "v1beta1") {
      options.serve_v1beta1 = true;
    } else {
      return Fail(kExitUsage, absl::StrCat("--versions: want v1, v1beta1 or both (v1,v1beta1), "
                                           "not \"",
                                           flags.versions, "\""));
    }
  }
  absl::StatusOr<absl::Duration> latency =
      ParseFlagDuration("--prepare-latency", flags.prepare_latency);
  if (!latency.ok()) return Fail(kExitUsage, latency.status().message());
  absl::StatusOr<LoggerPtr> made = PluginLogger(flags.log);
  if (!made.ok()) return Fail(kExitUsage, made.status().message());
  const LoggerPtr logger = *std::move(made);
  // The endpoint the driver announces, and the daemon's socket, must be absolute paths.
  std::error_code ec;
  const std::filesystem::path root = std::filesystem::absolute(flags.root_dir, ec);
  if (ec) return Fail(kExitUsage, absl::StrCat("--root-dir ", flags.root_dir, ": ", ec.message()));
  const std::filesystem::path admin_socket = root / "devmgr.sock";
  if (absl::Status path_ok = ValidateSocketPath(admin_socket); !path_ok.ok()) {
    return Fail(kExitUsage, path_ok.message());
  }

  const sigset_t signals = BlockStopSignals();

  options.driver_name = flags.driver;
  options.root_dir = root;
  options.pool = flags.node;
  options.rolling_update_uid = flags.rolling_update;
  options.devices = flags.devices;
  options.cdi_dir = flags.cdi_dir;
  options.prepare_latency = *latency;
  options.prepare_error = flags.prepare_error;
  options.unprepare_error = flags.unprepare_error;
  options.prepare_hang = flags.prepare_hang;
  options.serve_registration = flags.only != "service";
  options.serve_service = flags.only != "registration";
  // In a cluster, claims are read from its API server and the devices published there, owned
  // by the Node, as a Go driver on kubeletplugin does; without one, both go through the
  // daemon's admin socket (its claims, its local ResourceSlice store).
  std::unique_ptr<kubeclient::Client> cluster;
  std::unique_ptr<node::ClusterClaimSource> cluster_claims;
  std::unique_ptr<resourceslice::SliceStore> slices;
  absl::StatusOr<std::optional<kubeclient::RestConfig>> config = ChooseCluster(flags.cluster);
  if (!config.ok()) return Fail(kExitUsage, config.status().message());
  absl::StatusOr<kubeclient::ClientOptions> client_options = ClusterClientOptions(flags.cluster);
  if (!client_options.ok()) return Fail(kExitUsage, client_options.status().message());
  client_options->logger = logger;
  if (config->has_value()) {
    absl::StatusOr<std::unique_ptr<kubeclient::Client>> client =
        kubeclient::Client::Create(**config, *client_options);
    if (!client.ok()) return Fail(kExitUsage, client.status().message());
    cluster = *std::move(client);
    cluster_claims = std::make_unique<node::ClusterClaimSource>(*cluster);
    options.claim_lookup = [source = cluster_claims.get()](const std::string& namespace_name,
                                                           const std::string& name) {
      return source->GetClaim(namespace_name, name);
    };
    slices = std::make_unique<resourceslice::ApiSliceStore>(*cluster, logger);
  } else {
    options.claim_lookup = kubeletplugin::AdminClaimLookup(admin_socket, kDaemonCallTimeout);
    slices = std::make_unique<resourceslice::GrpcSliceStore>(admin_socket, kDaemonCallTimeout);
  }
  options.slice_store = slices.get();
  options.logger = logger;
  absl::StatusOr<std::unique_ptr<plugins::FakeDraDriver>> driver =
      plugins::FakeDraDriver::Start(std::move(options));
  if (!driver.ok()) return Fail(kExitUsage, driver.status().message());

  // SIGUSR1 turns the next device unhealthy (or back), reported on the health streams.
  WaitForStopSignal(signals, logger, [&driver] { (*driver)->FlipHealth(); });
  (*driver)->Stop();
  return kExitOk;
}

int RunGeneric(const CommonFlags& common, const GenericFlags& flags) {
  absl::StatusOr<std::string> text = ReadWholeFile(flags.config);
  if (!text.ok()) return Fail(kExitUsage, text.status().message());
  absl::StatusOr<plugins::GenericConfig> config = plugins::ParseGenericConfig(*text);
  if (!config.ok()) {
    return Fail(kExitUsage, absl::StrCat(flags.config, ": ", config.status().message()));
  }
  absl::StatusOr<absl::Duration> rescan =
      ParseFlagDuration("--rescan-interval", flags.rescan_interval);
  if (!rescan.ok()) return Fail(kExitUsage, rescan.status().message());
  if (*rescan == absl::ZeroDuration())
    return Fail(kExitUsage, "--rescan-interval must be positive");
  for (const auto& [flag, folder] :
       {std::pair("--dev-root", &flags.dev_root), std::pair("--sys-root", &flags.sys_root),
        std::pair("--proc-root", &flags.proc_root)}) {
    std::error_code ec;
    if (!std::filesystem::is_directory(*folder, ec)) {
      return Fail(kExitUsage, absl::StrCat(flag, " ", *folder, ": not a folder"));
    }
  }
  absl::StatusOr<LoggerPtr> logger = PluginLogger(common.log);
  if (!logger.ok()) return Fail(kExitUsage, logger.status().message());
  const std::string ns = config->resource_namespace;
  auto cdi_kinds = plugins::CdiKinds(*config);
  std::vector<std::string> device_types;
  for (const plugins::GenericGroup& group : config->groups) device_types.push_back(group.name);
  plugins::ShareSpreader spreader(*config);
  deviceplugin::Hooks hooks;
  if (spreader.Shares()) hooks.preferred_allocator = &spreader;
  // NVML is loaded only for a config with a group that asks for it, and then must work: a GPU
  // node whose plugin cannot see XID errors would serve broken GPUs as healthy.
  std::unique_ptr<plugins::XidWatch> xid_watch;
  if (std::any_of(config->groups.begin(), config->groups.end(),
                  [](const plugins::GenericGroup& group) { return group.nvml.has_value(); })) {
    absl::StatusOr<std::unique_ptr<plugins::NvmlLibrary>> nvml =
        plugins::NvmlLibrary::Open(flags.nvml_library);
    if (!nvml.ok()) return Fail(kExitUsage, nvml.status().message());
    absl::StatusOr<std::unique_ptr<plugins::XidWatch>> watch =
        plugins::XidWatch::Start(*std::move(nvml), {.logger = *logger});
    if (!watch.ok()) return Fail(kExitUsage, absl::StrCat("NVML: ", watch.status().message()));
    xid_watch = *std::move(watch);
  }
  plugins::GenericScanner scanner(*std::move(config), {.dev_root = flags.dev_root,
                                                       .sys_root = flags.sys_root,
                                                       .proc_root = flags.proc_root,
                                                       .rescan_interval = *rescan,
                                                       .logger = *logger,
                                                       .gpu_health = xid_watch.get()});
  // The first scan here, before anything is served, so that a config that does not fit this
  // host (overlapping groups, a garbled sysfs) is a usage error, not a log line.
  absl::StatusOr<deviceplugin::DeviceTree> first = scanner.ScanOnce();
  if (!first.ok()) {
    return Fail(kExitUsage, absl::StrCat(flags.config, ": ", first.status().message()));
  }
  return RunPlugin(
      common, *logger, ns, device_types, scanner, hooks, std::move(cdi_kinds), [] {}, [] {});
}

}  // namespace

void AddPluginCommand(CLI::App& app, CommandResult& result) {
  CLI::App* plugin = app.add_subcommand(
      "plugin", "Run a device plugin built on the devmgr SDK, or a fake DRA driver");
  plugin->require_subcommand(1);
  SetExamples(*plugin, {{"Four fake GPUs on two NUMA nodes, for the daemon under /tmp/node",
                         "devmgr plugin fake --root-dir /tmp/node --resource example.com/gpu "
                         "--devices 4 --numa-nodes 2"},
                        {"The host's device nodes that a config names",
                         "devmgr plugin generic --config examples/generic/serial.yaml"}});

  auto common_fake = std::make_shared<CommonFlags>();
  auto fake_flags = std::make_shared<FakeFlags>();
  CLI::App* fake = plugin->add_subcommand(
      "fake", "A simulated device plugin for tests and demos (SIGUSR1 flips a device's health)");
  AddCommonFlags(*fake, *common_fake);
  fake->add_option("--resource", fake_flags->resource, "Extended resource, e.g. example.com/gpu")
      ->required()
      ->type_name("NAME");
  fake->add_option("--devices", fake_flags->devices, "Number of devices")
      ->capture_default_str()
      ->transform(DecimalInteger<int64_t>());
  fake->add_option("--numa-nodes", fake_flags->numa_nodes,
                   "Spread devices over this many NUMA nodes (0: no topology)")
      ->capture_default_str()
      ->transform(DecimalInteger<int64_t>());
  fake->add_option("--id-prefix", fake_flags->id_prefix, "Device IDs are PREFIX0, PREFIX1, ...")
      ->type_name("PREFIX")
      ->capture_default_str();
  fake->add_option("--flip-every", fake_flags->flip_every,
                   "Flip the health of the next device this often (0s: never)")
      ->type_name("DURATION")
      ->capture_default_str();
  fake->add_option("--preferred", fake_flags->preferred,
                   "GetPreferredAllocation policy: none (not offered), first or numa")
      ->type_name("POLICY")
      ->capture_default_str();
  fake->add_option("--allocate-latency", fake_flags->allocate_latency,
                   "Delay every Allocate by this much")
      ->type_name("DURATION")
      ->capture_default_str();
  fake->add_option("--allocate-error", fake_flags->allocate_error,
                   "Fail every Allocate with this message")
      ->type_name("MESSAGE");
  fake->add_flag("--allocate-hang", fake_flags->allocate_hang,
                 "Never answer Allocate (until the plugin stops, which fails it)");
  fake->add_flag("--preferred-hang", fake_flags->preferred_hang,
                 "Never answer GetPreferredAllocation (until the plugin stops, which fails it); "
                 "needs a "
                 "--preferred policy");
  SetExamples(*fake, {{"Four devices on two NUMA nodes, registered with the daemon under /tmp/node",
                       "devmgr plugin fake --root-dir /tmp/node --resource example.com/gpu "
                       "--devices 4 --numa-nodes 2"},
                      {"Registered by probe, with a device's health flipped every 30s",
                       "devmgr plugin fake --root-dir /tmp/node --resource example.com/nic "
                       "--registry --flip-every 30s"}});
  fake->callback([&result, common_fake, fake_flags] {
    result.exit_code = RunFake(*common_fake, *fake_flags);
  });

  auto fake_dra_flags = std::make_shared<FakeDraFlags>();
  CLI::App* fake_dra = plugin->add_subcommand(
      "fake-dra",
      "A fake DRA driver for tests and demos: N devices in one pool, claims read from the "
      "daemon's admin API or from a cluster");
  fake_dra->add_option("--driver", fake_dra_flags->driver, "Driver name, e.g. gpu.example.com")
      ->required()
      ->type_name("NAME");
  fake_dra->add_option("--devices", fake_dra_flags->devices, "Number of devices, dev-0 ...")
      ->capture_default_str()
      ->transform(DecimalInteger<int64_t>());
  fake_dra
      ->add_option("--root-dir", fake_dra_flags->root_dir,
                   "Kubelet root folder: sockets go to DIR/plugins/DRIVER/dra.sock and "
                   "DIR/plugins_registry/DRIVER-reg.sock, claims come from DIR/devmgr.sock")
      ->type_name("DIR")
      ->capture_default_str();
  fake_dra
      ->add_option("--node,--node-name", fake_dra_flags->node,
                   "Node name: the Node that owns the devices' ResourceSlices, and their pool")
      ->type_name("NAME")
      ->capture_default_str();
  AddClusterFlags(*fake_dra, fake_dra_flags->cluster,
                  "claims are read from it and the devices published there as ResourceSlices "
                  "(else both go through the daemon on --root-dir)");
  fake_dra
      ->add_option("--rolling-update", fake_dra_flags->rolling_update,
                   "Run as the driver pod with this UID beside another instance of the "
                   "driver: sockets get upstream's rolling-update names "
                   "(plugins/DRIVER/dra-UID.sock, plugins_registry/DRIVER-UID-reg.sock)")
      ->type_name("UID");
  fake_dra
      ->add_option("--versions", fake_dra_flags->versions,
                   "DRAPlugin services to serve: v1, v1beta1 or v1,v1beta1")
      ->type_name("VERSIONS")
      ->capture_default_str();
  fake_dra
      ->add_option("--cdi-dir", fake_dra_flags->cdi_dir,
                   "Write a CDI spec file for the devices here")
      ->type_name("DIR");
  fake_dra
      ->add_option("--prepare-latency", fake_dra_flags->prepare_latency,
                   "Delay every NodePrepareResources by this much")
      ->type_name("DURATION")
      ->capture_default_str();
  fake_dra
      ->add_option("--prepare-error", fake_dra_flags->prepare_error,
                   "Fail every claim of every NodePrepareResources with this message")
      ->type_name("MESSAGE");
  fake_dra
      ->add_option("--unprepare-error", fake_dra_flags->unprepare_error,
                   "Fail every claim of every NodeUnprepareResources with this message")
      ->type_name("MESSAGE");
  fake_dra->add_flag("--prepare-hang", fake_dra_flags->prepare_hang,
                     "Never answer NodePrepareResources (until the driver stops)");
  fake_dra
      ->add_option("--only", fake_dra_flags->only,
                   "Serve only the registration socket, or only the service socket and its "
                   "ResourceSlices: one driver as two processes, whose service may listen after "
                   "it registered or stop and come back (upstream's RegistrationService and "
                   "DRAService)")
      ->type_name("PART")
      ->check(CLI::IsMember({"registration", "service"}));
  SetExamples(*fake_dra,
              {{"Eight devices of driver gpu.example.com, for the daemon under /tmp/node",
                "devmgr plugin fake-dra --root-dir /tmp/node --driver gpu.example.com --devices 8"},
               {"Publishing its ResourceSlices to a cluster instead",
                "devmgr plugin fake-dra --driver gpu.example.com --kubeconfig ~/.kube/config "
                "--node-name worker-1"}});
  AddLogFlags(*fake_dra, fake_dra_flags->log);
  fake_dra->callback([&result, fake_dra_flags] { result.exit_code = RunFakeDra(*fake_dra_flags); });

  auto common_generic = std::make_shared<CommonFlags>();
  auto generic_flags = std::make_shared<GenericFlags>();
  CLI::App* generic = plugin->add_subcommand(
      "generic", "Expose host device nodes (paths or globs from a YAML/JSON config)");
  AddCommonFlags(*generic, *common_generic);
  generic->add_option("--config", generic_flags->config, "YAML or JSON config file")
      ->required()
      ->type_name("FILE");
  generic
      ->add_option("--rescan-interval", generic_flags->rescan_interval,
                   "Look for added and removed devices this often")
      ->type_name("DURATION")
      ->capture_default_str();
  generic
      ->add_option("--dev-root", generic_flags->dev_root,
                   "Look for the config's paths under this folder (the host's / when the plugin "
                   "runs in a container); answers still name the host paths")
      ->type_name("DIR")
      ->capture_default_str();
  generic->add_option("--sys-root", generic_flags->sys_root, "Where sysfs is mounted")
      ->type_name("DIR")
      ->capture_default_str();
  generic
      ->add_option("--proc-root", generic_flags->proc_root,
                   "Where procfs is mounted (the NVIDIA driver names its GPUs' PCI functions "
                   "there, for their NUMA nodes)")
      ->type_name("DIR")
      ->capture_default_str();
  generic
      ->add_option("--nvml-library", generic_flags->nvml_library,
                   "NVIDIA's NVML, loaded when a group of the config has nvml health")
      ->type_name("FILE")
      ->capture_default_str();
  SetExamples(*generic, {{"The host's device nodes that examples/generic/serial.yaml names",
                          "devmgr plugin generic --config examples/generic/serial.yaml"},
                         {"In a container with the host's / mounted at /host",
                          "devmgr plugin generic --config /etc/devmgr/generic.yaml --dev-root "
                          "/host --sys-root /host/sys"}});
  generic->callback([&result, common_generic, generic_flags] {
    result.exit_code = RunGeneric(*common_generic, *generic_flags);
  });
}

}  // namespace devmgr::cli
