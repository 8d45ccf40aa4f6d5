#include "cmd/devmgr/slices_cmd.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/devmgr/rpc_client.h"
#include "common/table.h"
#include "resourceslice/store_service.h"

namespace devmgr::cli {
namespace {

struct SlicesFlags {
  std::string root_dir = "/var/lib/kubelet";
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
  if (format == OutputFormat::kJson) {
    if (one) {
      std::cout << kubeapi::EncodeResourceSlice(slices.front()).dump(2) << '\n';
      return;
    }
    kubeapi::Json list = {
        {"apiVersion", "v1"}, {"kind", "List"}, {"items", kubeapi::Json::array()}};
    for (const kubeapi::ResourceSlice& slice : slices) {
      list["items"].push_back(kubeapi::EncodeResourceSlice(slice));
    }
    std::cout << list.dump(2) << '\n';
    return;
  }
  Table table({"NAME", "DRIVER", "POOL", "GENERATION", "NODE", "DEVICES", "OWNER"});
  for (const kubeapi::ResourceSlice& slice : slices) {
    table.AddRow(
        {slice.metadata.name, slice.spec.driver, slice.spec.pool.name,
         absl::StrCat(slice.spec.pool.generation, "/", slice.spec.pool.resource_slice_count),
         Nodes(slice), absl::StrCat(slice.spec.devices.size()), Owner(slice)});
  }
  table.Print(std::cout);
}

int Run(const SlicesFlags& flags, bool get) {
  Connection connection = ConnectDaemon(flags.root_dir, flags.timeout);
  if (connection.exit_code != kExitOk) return connection.exit_code;
  resourceslice::GrpcSliceStore store(connection.channel, connection.timeout);
  absl::StatusOr<std::vector<kubeapi::ResourceSlice>> slices =
      store.List({flags.driver, flags.node, flags.pool});
  if (!slices.ok()) {
    return Fail(kExitNo, absl::StrCat("cannot list ResourceSlices: ", slices.status().message()));
  }
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
  command.add_option("--root-dir", flags.root_dir, "kubelet root folder of the daemon")
      ->capture_default_str();
  command.add_option("--timeout", flags.timeout, "how long to wait for the daemon")
      ->capture_default_str();
  AddOutputFlag(command, flags.format);
}

}  // namespace

void AddSlicesCommand(CLI::App& app, CommandResult& result) {
  CLI::App* slices = app.add_subcommand(
      "slices", "ResourceSlices the node's DRA drivers published (the daemon's local store)");
  slices->require_subcommand(1);

  auto list_flags = std::make_shared<SlicesFlags>();
  CLI::App* list = slices->add_subcommand("list", "List ResourceSlices, by name");
  AddCommonFlags(*list, *list_flags);
  list->add_option("--driver", list_flags->driver, "only this driver's (spec.driver)");
  list->add_option("--node", list_flags->node, "only this node's (spec.nodeName)");
  list->add_option("--pool", list_flags->pool, "only this pool's (spec.pool.name)");
  list->callback([&result, list_flags] { result.exit_code = Run(*list_flags, false); });

  auto get_flags = std::make_shared<SlicesFlags>();
  CLI::App* get = slices->add_subcommand("get", "Show one ResourceSlice; exit 1 if there is none");
  get->add_option("name", get_flags->name, "the slice's name")->required();
  AddCommonFlags(*get, *get_flags);
  get->callback([&result, get_flags] { result.exit_code = Run(*get_flags, true); });
}

}  // namespace devmgr::cli
