#include "cmd/devmgr/pods_cmd.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cmd/devmgr/command_tree.h"
#include "cmd/devmgr/printer.h"
#include "cmd/devmgr/rpc_client.h"
#include "common/errno_status.h"
#include "common/file_store.h"
#include "common/table.h"
#include "common/utf8.h"
#include "devmgr/admin/v1/api.grpc.pb.h"
#include "node/admin_service.h"

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

using Rows = std::vector<std::vector<std::string>>;

// OptionRows: CONTAINER, KIND and VALUE of each run option of one container.
Rows OptionRows(const std::string& container, const admin::RunOptions& options) {
  Rows rows;
  for (const auto& env : options.envs()) {
    rows.push_back({container, "env", absl::StrCat(env.key(), "=", env.value())});
  }
  for (const auto& device : options.devices()) {
    rows.push_back({container, "device",
                    absl::StrCat(device.container_path(), " <- ", device.host_path(), " (",
                                 device.permissions(), ")")});
  }
  for (const auto& mount : options.mounts()) {
    rows.push_back({container, "mount",
                    absl::StrCat(mount.container_path(), " <- ", mount.host_path(),
                                 mount.read_only() ? " (ro)" : "")});
  }
  for (const auto& annotation : options.annotations()) {
    rows.push_back(
        {container, "annotation", absl::StrCat(annotation.key(), "=", annotation.value())});
  }
  for (const auto& name : options.cdi_devices()) rows.push_back({container, "cdi", name});
  return rows;
}

// ReadStdin: all of standard input, read until it holds more than `limit` bytes at most (a
// stream without end, /dev/zero, is not read into memory for ever).
absl::StatusOr<std::string> ReadStdin(size_t limit) {
  std::string text;
  char chunk[64 * 1024];
  while (text.size() <= limit) {
    const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot read the manifest from stdin");
    }
    text.append(chunk, static_cast<size_t>(n));
  }
  return text;
}

absl::StatusOr<std::string> ReadManifest(const std::string& file, size_t limit) {
  if (file == "-") return ReadStdin(limit);
  return ReadWholeFile(file);
}

int RunAdmit(const PodsFlags& flags) {
  // The request carries the manifest and a few bytes more.
  const size_t limit = static_cast<size_t>(node::kMaxAdminRequestBytes) - 64;
  absl::StatusOr<std::string> manifest = ReadManifest(flags.file, limit);
  if (!manifest.ok()) return Fail(kExitUsage, manifest.status().message());
  if (manifest->size() > limit) {
    return Fail(kExitUsage, absl::StrCat("the manifest is more than ", limit,
                                         " bytes, the most the daemon reads"));
  }
  if (const size_t bad = FirstInvalidUtf8(*manifest); bad != absl::string_view::npos) {
    return Fail(kExitUsage,
                absl::StrCat("the manifest ", flags.file == "-" ? "on stdin" : flags.file,
                             " is not UTF-8 text at byte ", bad));
  }
  Connection connection = ConnectDaemon(flags.root_dir, flags.timeout);
  if (connection.exit_code != kExitOk) return connection.exit_code;
  auto stub = admin::Admin::NewStub(connection.channel);
  admin::AdmitPodRequest request;
  request.set_manifest(*std::move(manifest));
  admin::AdmitPodResponse response;
  grpc::ClientContext context;
  SetDeadline(context, connection.timeout);
  if (grpc::Status status = stub->AdmitPod(&context, request, &response); !status.ok()) {
    return DaemonFailure("AdmitPod", status, context);
  }
  if (response.generated_uid()) {
    std::cerr << "devmgr: the manifest has no metadata.uid; generated "
              << TerminalText(response.pod_uid()) << '\n';
  }
  if (!response.non_device_plugin_resources().empty()) {
    // As a kubelet admits them: its device manager skips what no plugin serves.
    std::cerr << "devmgr: not device-plugin resources, admitted without devices: "
              << absl::StrJoin(response.non_device_plugin_resources(), ", ") << '\n';
  }
  if (IsStructured(flags.format)) {
    PrintObject(ProtoToJson(response), flags.format);
    return kExitOk;
  }
  std::cout << "pod " << TerminalText(response.pod_uid()) << " admitted\n";
  ColumnTable table({{"CONTAINER"}, {"KIND"}, {"VALUE"}}, flags.format);
  for (const auto& container : response.containers()) {
    for (const auto& row : OptionRows(container.container_name(), container.options())) {
      table.AddRow(row);
    }
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
    return DaemonFailure("RemovePod", status, context);
  }
  if (IsStructured(flags.format)) {
    PrintObject(ProtoToJson(response), flags.format);
  } else {
    std::cout << "pod " << TerminalText(flags.pod_uid) << " removed\n";
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

// FindContainer: the container of `pod` named `name`, or null (a pod recovered from the
// checkpoint has only the containers that hold devices).
const admin::Container* FindContainer(const admin::Pod& pod, const std::string& name) {
  for (const auto* list : {&pod.init_containers(), &pod.containers()}) {
    for (const admin::Container& container : *list) {
      if (container.name() == name) return &container;
    }
  }
  return nullptr;
}

// TypeText: the container's kind for the wide table: init, sidecar or regular.
std::string TypeText(const admin::Container* container) {
  if (container == nullptr) return "-";
  switch (container->type()) {
    case admin::Container::INIT:
      return "init";
    case admin::Container::SIDECAR:
      return "sidecar";
    default:
      return "regular";
  }
}

// RequestsText: "resource=count,..." the container asks for, in name order.
std::string RequestsText(const admin::Container* container) {
  if (container == nullptr || container->devices().empty()) return "-";
  std::map<std::string, int64_t> sorted(container->devices().begin(), container->devices().end());
  std::vector<std::string> parts;
  for (const auto& [resource, count] : sorted) parts.push_back(absl::StrCat(resource, "=", count));
  return absl::StrJoin(parts, ",");
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
    return DaemonFailure("ListPods", status, context);
  }
  if (IsStructured(flags.format)) {
    PrintObject(ProtoToJson(response), flags.format);
    return kExitOk;
  }
  // Wide adds what the pod asked for: each container's kind and device requests.
  ColumnTable table({{"UID"},
                     {"POD"},
                     {"CONTAINER"},
                     {"DEVICES"},
                     {"HEALTH"},
                     {"TYPE", /*wide=*/true},
                     {"REQUESTS", /*wide=*/true}},
                    flags.format);
  for (const auto& status : response.pods()) {
    const std::string pod = status.recovered()
                                ? "(recovered from checkpoint)"
                                : absl::StrCat(status.pod().namespace_(), "/", status.pod().name());
    if (status.containers().empty()) {
      table.AddRow({status.pod().uid(), pod, "-", "-", "-", "-", "-"});
    }
    for (const auto& container : status.containers()) {
      const admin::Container* spec = FindContainer(status.pod(), container.container_name());
      table.AddRow({status.pod().uid(), pod, container.container_name(), DevicesText(container),
                    HealthText(container), TypeText(spec), RequestsText(spec)});
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
    return DaemonFailure("GetRunOptions", status, context);
  }
  if (IsStructured(flags.format)) {
    PrintObject(ProtoToJson(response), flags.format);
    return kExitOk;
  }
  // Wide adds the NUMA nodes of each device the container holds.
  ColumnTable table({{"CONTAINER"}, {"KIND"}, {"VALUE"}, {"NUMA", /*wide=*/true}}, flags.format);
  for (auto& row : OptionRows(flags.container, response.options())) {
    row.push_back("-");
    table.AddRow(row);
  }
  for (const auto& resource : response.devices().resources()) {
    for (const auto& device : resource.devices()) {
      table.AddRow({flags.container, "health",
                    absl::StrCat(resource.resource_name(), "/", device.id(), "=", device.health()),
                    device.numa_nodes().empty() ? "-" : absl::StrJoin(device.numa_nodes(), ",")});
    }
  }
  table.Print(std::cout);
  return kExitOk;
}

CLI::App* AddSubcommand(CLI::App& pods, const std::string& name, const std::string& description,
                        PodsFlags& flags, const std::string& default_timeout) {
  CLI::App* command = pods.add_subcommand(name, description);
  flags.timeout = default_timeout;
  command->add_option("--root-dir", flags.root_dir, "Kubelet root folder of the daemon")
      ->type_name("DIR")
      ->capture_default_str();
  command->add_option("--timeout", flags.timeout, "How long to wait for the daemon")
      ->type_name("DURATION")
      ->capture_default_str();
  AddOutputFlag(*command, flags.format);
  return command;
}

}  // namespace

void AddPodsCommand(CLI::App& app, CommandResult& result) {
  CLI::App* pods =
      app.add_subcommand("pods", "Admit, remove and list pods on a devmgr serve daemon");
  pods->require_subcommand(1);
  SetExamples(*pods, {{"Admit a pod to the daemon under /tmp/node",
                       "devmgr pods admit --root-dir /tmp/node examples/pod.yaml"},
                      {"List the pods it admitted", "devmgr pods list --root-dir /tmp/node"}});

  auto admit_flags = std::make_shared<PodsFlags>();
  CLI::App* admit = AddSubcommand(*pods, "admit",
                                  "Admit a Kubernetes Pod manifest (YAML or JSON) and print each "
                                  "container's run options",
                                  *admit_flags, kAdmitTimeout);
  admit->add_option("file", admit_flags->file, "The manifest, or - for standard input")
      ->required()
      ->type_name("FILE");
  SetExamples(*admit, {{"Admit the pod of a manifest file", "devmgr pods admit examples/pod.yaml"},
                       {"From standard input, the run options as JSON",
                        "kubectl get pod trainer -o yaml | devmgr pods admit -o json -"}});
  admit->callback([&result, admit_flags] { result.exit_code = RunAdmit(*admit_flags); });

  auto remove_flags = std::make_shared<PodsFlags>();
  CLI::App* remove =
      AddSubcommand(*pods, "remove", "Free a pod's devices and forget it", *remove_flags, "10s");
  remove->add_option("uid", remove_flags->pod_uid, "The pod's UID")->required()->type_name("UID");
  SetExamples(*remove, {{"Remove a pod: its devices become free",
                         "devmgr pods remove 0d3f4a52-8b1e-4c39-9a7e-2f6b1c8d9e01"}});
  remove->callback([&result, remove_flags] { result.exit_code = RunRemove(*remove_flags); });

  auto list_flags = std::make_shared<PodsFlags>();
  CLI::App* list =
      AddSubcommand(*pods, "list", "List admitted pods and their devices", *list_flags, "10s");
  SetExamples(*list, {{"The pods of the daemon under /tmp/node, with their devices' health",
                       "devmgr pods list --root-dir /tmp/node"},
                      {"As JSON, for scripts", "devmgr pods list -o json"}});
  list->callback([&result, list_flags] { result.exit_code = RunList(*list_flags); });

  auto options_flags = std::make_shared<PodsFlags>();
  CLI::App* options =
      AddSubcommand(*pods, "options", "Print one container's run options", *options_flags, "10s");
  options->add_option("uid", options_flags->pod_uid, "The pod's UID")->required()->type_name("UID");
  options->add_option("container", options_flags->container, "The container's name")
      ->required()
      ->type_name("NAME");
  SetExamples(*options, {{"The env, mounts, devices and CDI names of container trainer",
                          "devmgr pods options 0d3f4a52-8b1e-4c39-9a7e-2f6b1c8d9e01 trainer"}});
  options->callback([&result, options_flags] { result.exit_code = RunOptions(*options_flags); });
}

}  // namespace devmgr::cli
