#include "cmd/devmgr/pods_cmd.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cmd/devmgr/rpc_client.h"
#include "common/file_store.h"
#include "common/table.h"
#include "devmgr/admin/v1/api.grpc.pb.h"

namespace devmgr::cli {
namespace {

namespace admin = devmgr::admin::v1;

struct PodsFlags {
  std::string root_dir = "/var/lib/kubelet";
  std::string timeout = "10s";
  OutputFormat format = OutputFormat::kTable;
  std::string file;
  std::string pod_uid;
  std::string container;
};

// Admission may wait for plugins (--admission-wait on the daemon, plugin deadlines).
constexpr char kAdmitTimeout[] = "2m";

void AddOptionRows(const std::string& container, const admin::RunOptions& options, Table& table) {
  for (const auto& env : options.envs()) {
    table.AddRow({container, "env", absl::StrCat(env.key(), "=", env.value())});
  }
  for (const auto& device : options.devices()) {
    table.AddRow({container, "device",
                  absl::StrCat(device.container_path(), " <- ", device.host_path(), " (",
                               device.permissions(), ")")});
  }
  for (const auto& mount : options.mounts()) {
    table.AddRow({container, "mount",
                  absl::StrCat(mount.container_path(), " <- ", mount.host_path(),
                               mount.read_only() ? " (ro)" : "")});
  }
  for (const auto& annotation : options.annotations()) {
    table.AddRow(
        {container, "annotation", absl::StrCat(annotation.key(), "=", annotation.value())});
  }
  for (const auto& name : options.cdi_devices()) table.AddRow({container, "cdi", name});
}

absl::StatusOr<std::string> ReadManifest(const std::string& file) {
  if (file == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  return ReadWholeFile(file);
}

int RunAdmit(const PodsFlags& flags) {
  absl::StatusOr<std::string> manifest = ReadManifest(flags.file);
  if (!manifest.ok()) return Fail(kExitUsage, manifest.status().message());
  Connection connection = ConnectDaemon(flags.root_dir, flags.timeout);
  if (connection.exit_code != kExitOk) return connection.exit_code;
  auto stub = admin::Admin::NewStub(connection.channel);
  admin::AdmitPodRequest request;
  request.set_manifest(*std::move(manifest));
  admin::AdmitPodResponse response;
  grpc::ClientContext context;
  SetDeadline(context, connection.timeout);
  if (grpc::Status status = stub->AdmitPod(&context, request, &response); !status.ok()) {
    return DaemonFailure("AdmitPod", status);
  }
  if (response.generated_uid()) {
    std::cerr << "devmgr: the manifest has no metadata.uid; generated " << response.pod_uid()
              << '\n';
  }
  if (flags.format == OutputFormat::kJson) {
    PrintJson(response, true);
    return kExitOk;
  }
  std::cout << "pod " << response.pod_uid() << " admitted\n";
  Table table({"CONTAINER", "KIND", "VALUE"});
  for (const auto& container : response.containers()) {
    AddOptionRows(container.container_name(), container.options(), table);
  }
  table.Print(std::cout);
  return kExitOk;
}

int RunRemove(const PodsFlags& flags) {
  Connection connection = ConnectDaemon(flags.root_dir, flags.timeout);
  if (connection.exit_code != kExitOk) return connection.exit_code;
  auto stub = admin::Admin::NewStub(connection.channel);
  admin::RemovePodRequest request;
  request.set_pod_uid(flags.pod_uid);
  admin::RemovePodResponse response;
  grpc::ClientContext context;
  SetDeadline(context, connection.timeout);
  if (grpc::Status status = stub->RemovePod(&context, request, &response); !status.ok()) {
    return DaemonFailure("RemovePod", status);
  }
  if (flags.format == OutputFormat::kJson) {
    PrintJson(response, false);
  } else {
    std::cout << "pod " << flags.pod_uid << " removed\n";
  }
  return kExitOk;
}

std::string DevicesText(const admin::ContainerDevices& container) {
  std::vector<std::string> parts;
  for (const auto& resource : container.resources()) {
    std::vector<std::string> ids;
    for (const auto& device : resource.devices()) {
      std::string id = device.id();
      if (!device.numa_nodes().empty()) {
        absl::StrAppend(&id, "(numa ", absl::StrJoin(device.numa_nodes(), ","), ")");
      }
      ids.push_back(std::move(id));
    }
    parts.push_back(absl::StrCat(resource.resource_name(), "=", absl::StrJoin(ids, ",")));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, " ");
}

// HealthText: "Healthy" when every device the container holds is, else each other device with
// its health ("gpu1=Unhealthy"); "-" for a container that holds none.
std::string HealthText(const admin::ContainerDevices& container) {
  std::vector<std::string> others;
  bool any = false;
  for (const auto& resource : container.resources()) {
    for (const auto& device : resource.devices()) {
      any = true;
      if (device.health() != "Healthy") {
        others.push_back(absl::StrCat(device.id(), "=", device.health()));
      }
    }
  }
  if (!any) return "-";
  return others.empty() ? "Healthy" : absl::StrJoin(others, ",");
}

int RunList(const PodsFlags& flags) {
  Connection connection = ConnectDaemon(flags.root_dir, flags.timeout);
  if (connection.exit_code != kExitOk) return connection.exit_code;
  auto stub = admin::Admin::NewStub(connection.channel);
  admin::ListPodsResponse response;
  grpc::ClientContext context;
  SetDeadline(context, connection.timeout);
  if (grpc::Status status = stub->ListPods(&context, admin::ListPodsRequest(), &response);
      !status.ok()) {
    return DaemonFailure("ListPods", status);
  }
  if (flags.format == OutputFormat::kJson) {
    PrintJson(response, true);
    return kExitOk;
  }
  Table table({"UID", "POD", "CONTAINER", "DEVICES", "HEALTH"});
  for (const auto& status : response.pods()) {
    const std::string pod = status.recovered()
                                ? "(recovered from checkpoint)"
                                : absl::StrCat(status.pod().namespace_(), "/", status.pod().name());
    if (status.containers().empty()) table.AddRow({status.pod().uid(), pod, "-", "-", "-"});
    for (const auto& container : status.containers()) {
      table.AddRow({status.pod().uid(), pod, container.container_name(), DevicesText(container),
                    HealthText(container)});
    }
  }
  table.Print(std::cout);
  return kExitOk;
}

int RunOptions(const PodsFlags& flags) {
  Connection connection = ConnectDaemon(flags.root_dir, flags.timeout);
  if (connection.exit_code != kExitOk) return connection.exit_code;
  auto stub = admin::Admin::NewStub(connection.channel);
  admin::GetRunOptionsRequest request;
  request.set_pod_uid(flags.pod_uid);
  request.set_container_name(flags.container);
  admin::GetRunOptionsResponse response;
  grpc::ClientContext context;
  SetDeadline(context, connection.timeout);
  if (grpc::Status status = stub->GetRunOptions(&context, request, &response); !status.ok()) {
    return DaemonFailure("GetRunOptions", status);
  }
  if (flags.format == OutputFormat::kJson) {
    PrintJson(response, true);
    return kExitOk;
  }
  Table table({"CONTAINER", "KIND", "VALUE"});
  AddOptionRows(flags.container, response.options(), table);
  for (const auto& resource : response.devices().resources()) {
    for (const auto& device : resource.devices()) {
      table.AddRow(
          {flags.container, "health",
           absl::StrCat(resource.resource_name(), "/", device.id(), "=", device.health())});
    }
  }
  table.Print(std::cout);
  return kExitOk;
}

CLI::App* AddSubcommand(CLI::App& pods, const std::string& name, const std::string& description,
                        PodsFlags& flags, const std::string& default_timeout) {
  CLI::App* command = pods.add_subcommand(name, description);
  flags.timeout = default_timeout;
  command->add_option("--root-dir", flags.root_dir, "kubelet root folder of the daemon")
      ->capture_default_str();
  command->add_option("--timeout", flags.timeout, "how long to wait for the daemon")
      ->capture_default_str();
  AddOutputFlag(*command, flags.format);
  return command;
}

}  // namespace

void AddPodsCommand(CLI::App& app, CommandResult& result) {
  CLI::App* pods =
      app.add_subcommand("pods", "admit, remove and list pods on a devmgr serve daemon");
  pods->require_subcommand(1);

  auto admit_flags = std::make_shared<PodsFlags>();
  CLI::App* admit = AddSubcommand(*pods, "admit",
                                  "admit a Kubernetes Pod manifest (YAML or JSON) and print each "
                                  "container's run options",
                                  *admit_flags, kAdmitTimeout);
  admit->add_option("file", admit_flags->file, "the manifest, or - for standard input")->required();
  admit->callback([&result, admit_flags] { result.exit_code = RunAdmit(*admit_flags); });

  auto remove_flags = std::make_shared<PodsFlags>();
  CLI::App* remove =
      AddSubcommand(*pods, "remove", "free a pod's devices and forget it", *remove_flags, "10s");
  remove->add_option("uid", remove_flags->pod_uid, "the pod's UID")->required();
  remove->callback([&result, remove_flags] { result.exit_code = RunRemove(*remove_flags); });

  auto list_flags = std::make_shared<PodsFlags>();
  CLI::App* list =
      AddSubcommand(*pods, "list", "list admitted pods and their devices", *list_flags, "10s");
  list->callback([&result, list_flags] { result.exit_code = RunList(*list_flags); });

  auto options_flags = std::make_shared<PodsFlags>();
  CLI::App* options =
      AddSubcommand(*pods, "options", "print one container's run options", *options_flags, "10s");
  options->add_option("uid", options_flags->pod_uid, "the pod's UID")->required();
  options->add_option("container", options_flags->container, "the container's name")->required();
  options->callback([&result, options_flags] { result.exit_code = RunOptions(*options_flags); });
}

}  // namespace devmgr::cli
