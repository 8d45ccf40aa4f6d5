#include "cmd/devmgr/slices_cmd.h"

#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/devmgr/cluster.h"
#include "cmd/devmgr/command_tree.h"
#include "cmd/devmgr/printer.h"
#include "cmd/devmgr/rpc_client.h"
#include "kubeclient/client.h"
#include "resourceslice/api_store.h"
#include "resourceslice/store_service.h"

namespace devmgr::cli {
namespace {

struct SlicesFlags {
  std::string root_dir = "/var/lib/kubelet";
  // Set when --root-dir was given: the daemon's store even when KUBECONFIG is set.
  bool root_dir_given = false;
  std::string kubeconfig;
  std::string context;
  std::string timeout = "10s";
  std::string driver;
  std::string node;
  std::string pool;
  std::string name;
  OutputFormat format = OutputFormat::kTable;
};

// Owner: "Kind/name" of the controlling owner, or "-".
std::string Owner(const kubeapi::ResourceSlice& slice) {
  for (const kubeapi::OwnerReference& owner : slice.metadata.owner_references) {
    if (owner.controller.value_or(false)) return absl::StrCat(owner.kind, "/", owner.name);
  }
  return "-";
}

// Nodes: which nodes the slice's devices are for.
std::string Nodes(const kubeapi::ResourceSlice& slice) {
  if (slice.spec.node_name.has_value()) return *slice.spec.node_name;
  if (slice.spec.all_nodes.value_or(false)) return "(all nodes)";
  if (slice.spec.node_selector.has_value()) return "(node selector)";
  if (slice.spec.per_device_node_selection.value_or(false)) return "(per device)";
  return "-";
}

void Print(const std::vector<kubeapi::ResourceSlice>& slices, OutputFormat format, bool one) {
  if (IsStructured(format)) {
    kubeapi::Json out;
    if (one) {
      out = kubeapi::EncodeResourceSlice(slices.front());
    } else {
      out = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", kubeapi::Json::array()}};
      for (const kubeapi::ResourceSlice& slice : slices) {
        out["items"].push_back(kubeapi::EncodeResourceSlice(slice));
      }
    }
    PrintObject(OrderedJson(out), format);
    return;
  }
  // Wide adds the object's identity: its UID and resourceVersion.
  ColumnTable table({{"NAME"},
                     {"DRIVER"},
                     {"POOL"},
                     {"GENERATION"},
                     {"NODE"},
                     {"DEVICES"},
                     {"OWNER"},
                     {"UID", /*wide=*/true},
                     {"RESOURCEVERSION", /*wide=*/true}},
                    format);
  for (const kubeapi::ResourceSlice& slice : slices) {
    table.AddRow(
        {slice.metadata.name, slice.spec.driver, slice.spec.pool.name,
         absl::StrCat(slice.spec.pool.generation, "/", slice.spec.pool.resource_slice_count),
         Nodes(slice), absl::StrCat(slice.spec.devices.size()), Owner(slice),
         slice.metadata.uid.empty() ? "-" : slice.metadata.uid,
         slice.metadata.resource_version.empty() ? "-" : slice.metadata.resource_version});
  }
  table.Print(std::cout);
}

// StoreFailure reports a failed call to the API server or the daemon's store: one that could not
// be made or was not answered (unreachable, TLS, a deadline) is usage (2), the server's answer
// a "no" (1). Its code leads, as the message alone may be empty.
int StoreFailure(absl::string_view what, const absl::Status& status) {
  const bool unreachable = absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
  return Fail(
      unreachable ? kExitUsage : kExitNo,
      absl::StrCat(what, ": ", absl::StatusCodeToString(status.code()), ": ", status.message()));
}

int RunCluster(const SlicesFlags& flags, const kubeclient::RestConfig& cluster, bool get) {
  absl::StatusOr<absl::Duration> timeout = ParseFlagDuration("--timeout", flags.timeout);
  if (!timeout.ok()) return Fail(kExitUsage, timeout.status().message());
  kubeclient::ClientOptions options;
  options.timeout = *timeout;
  absl::StatusOr<std::unique_ptr<kubeclient::Client>> client =
      kubeclient::Client::Create(cluster, options);
  if (!client.ok()) return Fail(kExitUsage, client.status().message());
  if (get) {
    absl::StatusOr<kubeapi::ResourceSlice> slice = (*client)->GetResourceSlice(flags.name);
    if (!slice.ok()) return StoreFailure("cannot get the ResourceSlice", slice.status());
    Print({*std::move(slice)}, flags.format, true);
    return kExitOk;
  }
  resourceslice::ApiSliceStore store(**client);
  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> slices =
      store.List({flags.driver, flags.node, flags.pool});
  if (!slices.ok()) return StoreFailure("cannot list ResourceSlices", slices.status());
  Print(*slices, flags.format, false);
  return kExitOk;
}

int Run(const SlicesFlags& flags, bool get) {
  // kubectl's "resource name may not be empty".
  if (get && flags.name.empty()) return Fail(kExitUsage, "a ResourceSlice's name may not be empty");
  if (!flags.root_dir_given || !flags.kubeconfig.empty() || !flags.context.empty()) {
    absl::StatusOr<std::optional<kubeclient::RestConfig>> cluster =
        FindCluster(flags.kubeconfig, flags.context);
    if (!cluster.ok()) return Fail(kExitUsage, cluster.status().message());
    if (cluster->has_value()) return RunCluster(flags, **cluster, get);
  }
  Connection connection = ConnectDaemon(flags.root_dir, flags.timeout);
  if (connection.exit_code != kExitOk) return connection.exit_code;
  resourceslice::GrpcSliceStore store(connection.channel, connection.timeout);
  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> slices =
      store.List({flags.driver, flags.node, flags.pool});
  if (absl::IsUnimplemented(slices.status())) {
    return Fail(kExitNo,
                "cannot list ResourceSlices: the daemon keeps none (it runs with --dra=false)");
  }
  if (!slices.ok()) return StoreFailure("cannot list ResourceSlices", slices.status());
  if (get) {
    std::erase_if(*slices, [&](const kubeapi::ResourceSlice& slice) {
      return slice.metadata.name != flags.name;
    });
    if (slices->empty()) {
      return Fail(kExitNo, absl::StrCat("resourceslice \"", flags.name, "\" not found"));
    }
  }
  Print(*slices, flags.format, get);
  return kExitOk;
}

void AddCommonFlags(CLI::App& command, SlicesFlags& flags) {
  command
      .add_option("--root-dir", flags.root_dir,
                  "Kubelet root folder of the daemon whose local store to read (instead of a "
                  "cluster found through KUBECONFIG or the service account)")
      ->type_name("DIR")
      ->capture_default_str();
  command
      .add_option("--kubeconfig", flags.kubeconfig,
                  "Read the cluster's ResourceSlices, reached with this kubeconfig (else "
                  "KUBECONFIG, else the in-cluster service account, else the daemon's store)")
      ->type_name("FILE");
  command
      .add_option("--context", flags.context,
                  "The kubeconfig context to use (of --kubeconfig, else of KUBECONFIG)")
      ->type_name("NAME");
  command.add_option("--timeout", flags.timeout, "How long to wait for the daemon or the server")
      ->type_name("DURATION")
      ->capture_default_str();
  AddOutputFlag(command, flags.format);
}

// The callback of a slices subcommand: notes whether --root-dir was given, then runs.
std::function<void()> Runner(CLI::App& command, CommandResult& result,
                             std::shared_ptr<SlicesFlags> flags, bool get) {
  return [&command, &result, flags, get] {
    flags->root_dir_given = command.count("--root-dir") > 0;
    result.exit_code = Run(*flags, get);
  };
}

}  // namespace

void AddSlicesCommand(CLI::App& app, CommandResult& result) {
  CLI::App* slices = app.add_subcommand(
      "slices",
      "ResourceSlices DRA drivers published: in a cluster, or in the daemon's local store");
  slices->require_subcommand(1);
  SetExamples(*slices,
              {{"The ResourceSlices of the cluster KUBECONFIG names", "devmgr slices list"},
               {"Those in the local store of the daemon under /tmp/node",
                "devmgr slices list --root-dir /tmp/node"}});

  auto list_flags = std::make_shared<SlicesFlags>();
  CLI::App* list = slices->add_subcommand("list", "List ResourceSlices, by name");
  AddCommonFlags(*list, *list_flags);
  list->add_option("--driver", list_flags->driver, "Only this driver's (spec.driver)")
      ->type_name("NAME");
  list->add_option("--node", list_flags->node, "Only this node's (spec.nodeName)")
      ->type_name("NAME");
  list->add_option("--pool", list_flags->pool, "Only this pool's (spec.pool.name)")
      ->type_name("NAME");
  SetExamples(*list, {{"The slices one driver published, from the cluster KUBECONFIG names",
                       "devmgr slices list --driver gpu.example.com"},
                      {"Those of one node, in the daemon's local store, as YAML",
                       "devmgr slices list --root-dir /tmp/node --node node -o yaml"}});
  list->callback(Runner(*list, result, list_flags, false));

  auto get_flags = std::make_shared<SlicesFlags>();
  CLI::App* get = slices->add_subcommand("get", "Show one ResourceSlice; exit 1 if there is none");
  get->add_option("name", get_flags->name, "The slice's name")->required()->type_name("NAME");
  SetExamples(*get,
              {{"One slice, as YAML", "devmgr slices get -o yaml 0-gpu.example.com-node-7k2xq"}});
  AddCommonFlags(*get, *get_flags);
  get->callback(Runner(*get, result, get_flags, true));
}

}  // namespace devmgr::cli
