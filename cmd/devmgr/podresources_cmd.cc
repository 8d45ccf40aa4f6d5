#include "cmd/devmgr/podresources_cmd.h"

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cmd/devmgr/command_tree.h"
#include "cmd/devmgr/printer.h"
#include "cmd/devmgr/rpc_client.h"
#include "common/table.h"
#include "devmgr/podresources/v1/api.grpc.pb.h"
#include "podresources/client.h"
#include "podresources/v1/api.grpc.pb.h"

namespace devmgr::cli {
namespace {

using WatchResponse = ::devmgr::podresources::v1::WatchResponse;

struct PodResourcesOptions {
  std::string root_dir = "/var/lib/kubelet";
  std::string socket;
  std::string timeout = "10s";
  int max_message_bytes = podresources::kDefaultMaxReceiveMessageBytes;
  OutputFormat format = OutputFormat::kTable;
  std::string namespace_name;
  std::string pod_name;
  uint64_t resume_revision = 0;
  int64_t count = 0;
};

Connection Connect(const PodResourcesOptions& options) {
  const std::filesystem::path socket =
      options.socket.empty()
          ? std::filesystem::path(options.root_dir) / "pod-resources" / "kubelet.sock"
          : std::filesystem::path(options.socket);
  return cli::Connect(socket, options.timeout, options.max_message_bytes);
}

std::string NumaText(const ::v1::TopologyInfo& topology) {
  std::vector<std::string> nodes;
  for (const auto& node : topology.nodes()) nodes.push_back(absl::StrCat(node.id()));
  return nodes.empty() ? "-" : absl::StrJoin(nodes, ",");
}

// DevicesText: "resource=id(numa),id(numa) other=id" for one container.
std::string DevicesText(const google::protobuf::RepeatedPtrField<::v1::ContainerDevices>& devices) {
  std::map<std::string, std::vector<std::string>> by_resource;
  for (const auto& entry : devices) {
    for (const std::string& id : entry.device_ids()) {
      by_resource[entry.resource_name()].push_back(
          entry.has_topology() ? absl::StrCat(id, "(numa ", NumaText(entry.topology()), ")") : id);
    }
  }
  std::vector<std::string> parts;
  for (const auto& [resource, ids] : by_resource) {
    parts.push_back(absl::StrCat(resource, "=", absl::StrJoin(ids, ",")));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, " ");
}

std::string CpusText(const google::protobuf::RepeatedField<int64_t>& cpus) {
  return cpus.empty() ? "-" : absl::StrJoin(cpus, ",");
}

std::string MemoryText(const google::protobuf::RepeatedPtrField<::v1::ContainerMemory>& memory) {
  std::vector<std::string> parts;
  for (const auto& block : memory) {
    parts.push_back(absl::StrCat(block.memory_type(), "=", block.size(), "(numa ",
                                 NumaText(block.topology()), ")"));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, " ");
}

std::string DynamicText(const google::protobuf::RepeatedPtrField<::v1::DynamicResource>& claims) {
  std::vector<std::string> parts;
  // "namespace/claim=driver/pool/device,...", as the claim's devices were prepared.
  for (const auto& claim : claims) {
    std::vector<std::string> devices;
    for (const auto& device : claim.claim_resources()) {
      devices.push_back(
          absl::StrCat(device.driver_name(), "/", device.pool_name(), "/", device.device_name()));
    }
    parts.push_back(absl::StrCat(claim.claim_namespace(), "/", claim.claim_name(),
                                 devices.empty() ? "" : "=", absl::StrJoin(devices, ",")));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, ",");
}

// CdiText: the CDI device names of a container's claims, for the wide table.
std::string CdiText(const google::protobuf::RepeatedPtrField<::v1::DynamicResource>& claims) {
  std::vector<std::string> names;
  for (const auto& claim : claims) {
    for (const auto& device : claim.claim_resources()) {
      for (const auto& cdi : device.cdi_devices()) names.push_back(cdi.name());
    }
  }
  return names.empty() ? "-" : absl::StrJoin(names, ",");
}

// A name as a cell: "-" for none (a pod recovered from a kubelet's checkpoint has no namespace
// or name), so that every row has a word in every column for scripts that split on blanks.
std::string NameCell(const std::string& name) { return name.empty() ? "-" : name; }

void AddPodRows(const ::v1::PodResources& pod, ColumnTable& table) {
  const std::string namespace_cell = NameCell(pod.namespace_());
  const std::string name_cell = NameCell(pod.name());
  // The pod's own exclusive CPUs and memory (pod-level resources), on each of its rows.
  const std::string pod_cpus = CpusText(pod.cpu_ids());
  const std::string pod_memory = MemoryText(pod.memory());
  if (pod.containers().empty()) {
    table.AddRow({namespace_cell, name_cell, "-", "-", "-", "-", "-", "-", pod_cpus, pod_memory});
  }
  for (const auto& container : pod.containers()) {
    table.AddRow({namespace_cell, name_cell, NameCell(container.name()),
                  DevicesText(container.devices()), CpusText(container.cpu_ids()),
                  MemoryText(container.memory()), DynamicText(container.dynamic_resources()),
                  CdiText(container.dynamic_resources()), pod_cpus, pod_memory});
  }
}

// PodTable: one row per container; wide adds the CDI devices of its claims and the pod's own
// CPUs and memory.
ColumnTable PodTable(OutputFormat format) {
  return ColumnTable({{"NAMESPACE"},
                      {"POD"},
                      {"CONTAINER"},
                      {"DEVICES"},
                      {"CPUS"},
                      {"MEMORY"},
                      {"CLAIMS"},
                      {"CDI", /*wide=*/true},
                      {"POD CPUS", /*wide=*/true},
                      {"POD MEMORY", /*wide=*/true}},
                     format);
}

int List(const PodResourcesOptions& options) {
  Connection connection = Connect(options);
  if (connection.channel == nullptr) return connection.exit_code;
  auto stub = ::v1::PodResourcesLister::NewStub(connection.channel);
  grpc::ClientContext context;
  SetDeadline(context, connection.timeout);
  ::v1::ListPodResourcesResponse response;
  const grpc::Status status = stub->List(&context, {}, &response);
  if (!status.ok()) return RpcFailure("List", status);
  if (IsStructured(options.format)) {
    PrintObject(ProtoToJson(response), options.format);
    return kExitOk;
  }
  ColumnTable table = PodTable(options.format);
  for (const auto& pod : response.pod_resources()) AddPodRows(pod, table);
  table.Print(std::cout);
  return kExitOk;
}

int Get(const PodResourcesOptions& options) {
  Connection connection = Connect(options);
  if (connection.channel == nullptr) return connection.exit_code;
  auto stub = ::v1::PodResourcesLister::NewStub(connection.channel);
  grpc::ClientContext context;
  SetDeadline(context, connection.timeout);
  ::v1::GetPodResourcesRequest request;
  request.set_pod_namespace(options.namespace_name);
  request.set_pod_name(options.pod_name);
  ::v1::GetPodResourcesResponse response;
  const grpc::Status status = stub->Get(&context, request, &response);
  if (!status.ok()) {
    // The kubelet says "not found" only in the message (its status code is UNKNOWN).
    if (absl::EndsWith(status.error_message(), "not found")) {
      return Fail(kExitNo, status.error_message());
    }
    return RpcFailure("Get", status);
  }
  if (IsStructured(options.format)) {
    PrintObject(ProtoToJson(response), options.format);
    return kExitOk;
  }
  ColumnTable table = PodTable(options.format);
  AddPodRows(response.pod_resources(), table);
  table.Print(std::cout);
  return kExitOk;
}

int Allocatable(const PodResourcesOptions& options) {
  Connection connection = Connect(options);
  if (connection.channel == nullptr) return connection.exit_code;
  auto stub = ::v1::PodResourcesLister::NewStub(connection.channel);
  grpc::ClientContext context;
  SetDeadline(context, connection.timeout);
  ::v1::AllocatableResourcesResponse response;
  const grpc::Status status = stub->GetAllocatableResources(&context, {}, &response);
  if (!status.ok()) return RpcFailure("GetAllocatableResources", status);
  // Wide is the table: it leaves nothing of the answer out.
  if (IsStructured(options.format)) {
    PrintObject(ProtoToJson(response), options.format);
    return kExitOk;
  }
  Table devices({"RESOURCE", "DEVICE", "NUMA"});
  for (const auto& entry : response.devices()) {
    for (const std::string& id : entry.device_ids()) {
      devices.AddRow({entry.resource_name(), id, NumaText(entry.topology())});
    }
  }
  devices.Print(std::cout);
  std::cout << "\nCPUS: " << CpusText(response.cpu_ids()) << '\n';
  if (!response.memory().empty()) {
    std::cout << '\n';
    Table memory({"MEMORY TYPE", "SIZE", "NUMA"});
    for (const auto& block : response.memory()) {
      memory.AddRow({block.memory_type(), absl::StrCat(block.size()), NumaText(block.topology())});
    }
    memory.Print(std::cout);
  }
  return kExitOk;
}

void PrintEvent(const WatchResponse& event, OutputFormat format) {
  std::cout << "revision " << event.revision() << " " << WatchResponse::Kind_Name(event.kind());
  if (event.kind() == WatchResponse::SNAPSHOT) {
    std::cout << " (" << event.pod_resources_size() << " pods)\n";
  } else {
    std::cout << " " << TerminalText(event.pod_uid()) << '\n';
  }
  ColumnTable table = PodTable(format);
  for (const auto& pod : event.pod_resources()) AddPodRows(pod, table);
  table.Print(std::cout);
  // The health of the devices each pod holds, beside its entry of pod_resources.
  Table health({"NAMESPACE", "POD", "CONTAINER", "RESOURCE", "DEVICE", "HEALTH"});
  bool any = false;
  for (int i = 0; i < event.pod_health_size() && i < event.pod_resources_size(); ++i) {
    const auto& pod = event.pod_resources(i);
    for (const auto& container : event.pod_health(i).containers()) {
      for (const auto& resource : container.allocated_resources_status()) {
        for (const auto& device : resource.resources()) {
          health.AddRow({pod.namespace_(), pod.name(), container.name(), resource.name(),
                         device.resource_id(), device.health()});
          any = true;
        }
      }
    }
  }
  if (any) health.Print(std::cout);
  std::cout << std::flush;
}

int Watch(const PodResourcesOptions& options) {
  Connection connection = Connect(options);
  if (connection.channel == nullptr) return connection.exit_code;
  auto stub = ::devmgr::podresources::v1::PodResourcesWatcher::NewStub(connection.channel);
  grpc::ClientContext context;
  ::devmgr::podresources::v1::WatchRequest request;
  request.set_resume_revision(options.resume_revision);
  std::unique_ptr<grpc::ClientReader<WatchResponse>> reader = stub->Watch(&context, request);
  WatchResponse event;
  int64_t received = 0;
  while (reader->Read(&event)) {
    if (IsStructured(options.format)) {
      PrintStreamItem(ProtoToJson(event), options.format);
    } else {
      PrintEvent(event, options.format);
    }
    if (!std::cout.good()) {
      // Nobody reads any more (a pipe whose reader went away, with SIGPIPE ignored, as under
      // systemd): a watch would go on writing into nothing for ever.
      context.TryCancel();
      reader->Finish();
      return OutputWritten(kExitOk);
    }
    if (options.count > 0 && ++received >= options.count) {
      context.TryCancel();
      reader->Finish();
      return kExitOk;
    }
  }
  const grpc::Status status = reader->Finish();
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    return Fail(kExitNo, "Watch is not served here (a kubelet has no Watch; devmgr does)");
  }
  return RpcFailure("Watch", status);
}

}  // namespace

void AddPodResourcesCommand(CLI::App& app, CommandResult& result) {
  CLI::App* command = app.add_subcommand(
      "podresources", "Query a PodResources socket (devmgr's or a real kubelet's)");
  command->require_subcommand(1);
  SetExamples(*command, {{"What a monitoring agent sees on the daemon under /tmp/node",
                          "devmgr podresources list --root-dir /tmp/node"},
                         {"What a real kubelet can allocate",
                          "devmgr podresources allocatable --socket "
                          "/var/lib/kubelet/pod-resources/kubelet.sock"}});
  auto options = std::make_shared<PodResourcesOptions>();

  auto add_common = [options](CLI::App& sub) {
    sub.add_option("--root-dir", options->root_dir,
                   "Kubelet root directory; the socket is DIR/pod-resources/kubelet.sock")
        ->type_name("DIR")
        ->capture_default_str();
    sub.add_option("--socket", options->socket, "PodResources socket path (overrides --root-dir)")
        ->type_name("FILE");
    sub.add_option("--timeout", options->timeout, "Connect and call timeout, e.g. 10s")
        ->type_name("DURATION")
        ->capture_default_str();
    sub.add_option("--max-message-bytes", options->max_message_bytes,
                   "Largest response accepted, in bytes")
        ->type_name("BYTES")
        ->capture_default_str()
        ->transform(DecimalInteger<int>())
        ->check(Positive());
    AddOutputFlag(sub, options->format);
  };

  CLI::App* list = command->add_subcommand("list", "List the resources of every active pod");
  add_common(*list);
  SetExamples(*list, {{"The devices, CPUs and memory of every pod on the daemon under /tmp/node",
                       "devmgr podresources list --root-dir /tmp/node"},
                      {"Of a real kubelet's pods, as JSON",
                       "devmgr podresources list --socket "
                       "/var/lib/kubelet/pod-resources/kubelet.sock -o json"}});
  list->callback([options, &result] { result.exit_code = List(*options); });

  CLI::App* allocatable =
      command->add_subcommand("allocatable", "Show the node's allocatable devices, CPUs, memory");
  add_common(*allocatable);
  SetExamples(*allocatable, {{"What the node under /tmp/node can allocate",
                              "devmgr podresources allocatable --root-dir /tmp/node"}});
  allocatable->callback([options, &result] { result.exit_code = Allocatable(*options); });

  CLI::App* get = command->add_subcommand("get", "Show the resources of one pod; exit 1 if absent");
  get->add_option("NAMESPACE", options->namespace_name, "Pod namespace")
      ->required()
      ->type_name("NAMESPACE");
  get->add_option("NAME", options->pod_name, "Pod name")->required()->type_name("NAME");
  add_common(*get);
  SetExamples(*get, {{"The resources of pod default/gpu-demo (examples/pod.yaml)",
                      "devmgr podresources get --root-dir /tmp/node default gpu-demo"}});
  get->callback([options, &result] { result.exit_code = Get(*options); });

  CLI::App* watch = command->add_subcommand(
      "watch", "Stream a snapshot and then every change (devmgr only); JSON is one line per event");
  watch
      ->add_option("--resume-revision", options->resume_revision,
                   "Resume after this revision (0: start with a snapshot)")
      ->capture_default_str()
      ->transform(DecimalInteger<uint64_t>());
  watch->add_option("--count", options->count, "Exit 0 after this many messages (0: never)")
      ->capture_default_str()
      ->transform(DecimalInteger<int64_t>())
      ->check(NonNegative());
  add_common(*watch);
  SetExamples(*watch, {{"Follow every change on the daemon under /tmp/node, one JSON line each",
                        "devmgr podresources watch --root-dir /tmp/node -o json"},
                       {"Exit after three messages, the snapshot first",
                        "devmgr podresources watch --root-dir /tmp/node --count 3"}});
  watch->callback([options, &result] { result.exit_code = Watch(*options); });
}

}  // namespace devmgr::cli
