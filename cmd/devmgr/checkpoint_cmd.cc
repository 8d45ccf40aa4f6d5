#include "cmd/devmgr/checkpoint_cmd.h"

#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint/checkpoint.h"
#include "cmd/devmgr/checkpoint_verbs.h"
#include "cmd/devmgr/command_tree.h"
#include "cmd/devmgr/printer.h"
#include "common/table.h"
#include "deviceplugin/v1beta1/api.pb.h"

namespace devmgr::cli {
namespace {

std::string DevicesText(const checkpoint::DevicesPerNuma& per_numa) {
  std::vector<std::string> parts;
  for (const auto& [numa, ids] : per_numa) {
    parts.push_back(absl::StrCat(numa, ":", ids.empty() ? "-" : absl::StrJoin(ids, ",")));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, " ");
}

void PrintVerify(const std::string& file, const checkpoint::ParsedCheckpoint& parsed,
                 OutputFormat format) {
  const bool valid = parsed.ChecksumMatches();
  if (IsStructured(format)) {
    OrderedJson out;
    out["file"] = file;
    out["valid"] = valid;
    out["format"] = checkpoint::FormatName(parsed.format);
    out["storedChecksum"] = parsed.stored_checksum;
    out["computedChecksum"] = parsed.computed_checksum;
    out["entries"] = parsed.data.pod_device_entries.size();
    out["registeredResources"] = parsed.data.registered_devices.size();
    PrintObject(out, format);
  } else if (valid) {
    std::cout << "valid: checksum " << parsed.stored_checksum << ", format "
              << checkpoint::FormatName(parsed.format) << ", "
              << parsed.data.pod_device_entries.size() << " entries, "
              << parsed.data.registered_devices.size() << " registered resources\n";
  } else {
    std::cout << ChecksumMismatchText(parsed) << '\n';
  }
}

// DecodeAllocation turns AllocResp bytes into the plugin's ContainerAllocateResponse; nullptr
// when the bytes are not one (the kubelet skips such entries on restore).
std::unique_ptr<v1beta1::ContainerAllocateResponse> DecodeAllocation(const std::string& bytes) {
  auto response = std::make_unique<v1beta1::ContainerAllocateResponse>();
  if (!response->ParseFromString(bytes)) return nullptr;
  return response;
}

void PrintAllocation(const v1beta1::ContainerAllocateResponse& response, std::ostream& out) {
  // Protobuf maps iterate in no fixed order; sort for stable output.
  std::map<std::string, std::string> envs(response.envs().begin(), response.envs().end());
  std::map<std::string, std::string> annotations(response.annotations().begin(),
                                                 response.annotations().end());
  // What a plugin answered, shown as text a terminal does not obey (TerminalText).
  const auto text = [](absl::string_view value) { return TerminalText(value); };
  for (const auto& [key, value] : envs) {
    out << "    env         " << text(key) << "=" << text(value) << '\n';
  }
  for (const auto& mount : response.mounts()) {
    out << "    mount       " << text(mount.host_path()) << " -> " << text(mount.container_path())
        << (mount.read_only() ? " (ro)" : " (rw)") << '\n';
  }
  for (const auto& device : response.devices()) {
    out << "    device      " << text(device.host_path()) << " -> " << text(device.container_path())
        << " (" << (device.permissions().empty() ? "-" : text(device.permissions())) << ")\n";
  }
  for (const auto& [key, value] : annotations) {
    out << "    annotation  " << text(key) << "=" << text(value) << '\n';
  }
  for (const auto& cdi : response.cdi_devices()) {
    out << "    cdi         " << text(cdi.name()) << '\n';
  }
}

void ShowTable(const std::string& file, const checkpoint::ParsedCheckpoint& parsed) {
  std::cout << "Checkpoint:  " << file << '\n'
            << "Format:      " << checkpoint::FormatName(parsed.format) << '\n'
            << "Checksum:    " << parsed.stored_checksum
            << (parsed.ChecksumMatches()
                    ? " (valid)"
                    : absl::StrCat(" (MISMATCH: computed ", parsed.computed_checksum, ")"))
            << "\n\n";

  Table entries({"POD UID", "CONTAINER", "RESOURCE", "NUMA:DEVICES"});
  for (const auto& entry : parsed.data.pod_device_entries) {
    entries.AddRow(
        {entry.pod_uid, entry.container_name, entry.resource_name, DevicesText(entry.device_ids)});
  }
  entries.Print(std::cout);

  std::cout << "\nAllocations:\n";
  if (parsed.data.pod_device_entries.empty()) std::cout << "  (none)\n";
  for (const auto& entry : parsed.data.pod_device_entries) {
    std::cout << "  " << TerminalText(entry.pod_uid) << "/" << TerminalText(entry.container_name)
              << " " << TerminalText(entry.resource_name) << '\n';
    auto response = DecodeAllocation(entry.alloc_resp);
    if (response == nullptr) {
      std::cout << "    (undecodable response, " << entry.alloc_resp.size() << " bytes)\n";
    } else {
      PrintAllocation(*response, std::cout);
    }
  }

  std::cout << '\n';
  Table registered({"REGISTERED RESOURCE", "HEALTHY DEVICES AT WRITE"});
  for (const auto& [resource, ids] : parsed.data.registered_devices) {
    registered.AddRow({resource, ids.empty() ? "-" : absl::StrJoin(ids, ",")});
  }
  registered.Print(std::cout);
}

void ShowObject(const std::string& file, const checkpoint::ParsedCheckpoint& parsed,
                OutputFormat format) {
  OrderedJson out;
  out["file"] = file;
  out["format"] = checkpoint::FormatName(parsed.format);
  out["storedChecksum"] = parsed.stored_checksum;
  out["computedChecksum"] = parsed.computed_checksum;
  out["valid"] = parsed.ChecksumMatches();
  out["podDeviceEntries"] = OrderedJson::array();
  for (const auto& entry : parsed.data.pod_device_entries) {
    OrderedJson item;
    item["podUID"] = entry.pod_uid;
    item["containerName"] = entry.container_name;
    item["resourceName"] = entry.resource_name;
    OrderedJson per_numa = OrderedJson::object();
    for (const auto& [numa, ids] : entry.device_ids) per_numa[absl::StrCat(numa)] = ids;
    item["deviceIDs"] = per_numa;
    auto response = DecodeAllocation(entry.alloc_resp);
    if (response != nullptr) {
      item["allocResp"] = ProtoToJson(*response);
    } else {
      item["allocResp"] = nullptr;
      item["allocRespError"] = "not a ContainerAllocateResponse";
    }
    out["podDeviceEntries"].push_back(std::move(item));
  }
  out["registeredDevices"] = OrderedJson::object();
  for (const auto& [resource, ids] : parsed.data.registered_devices) {
    out["registeredDevices"][resource] = ids;
  }
  PrintObject(out, format);
}

void PrintShow(const std::string& file, const checkpoint::ParsedCheckpoint& parsed,
               OutputFormat format) {
  // Wide is the table: it leaves nothing of the file out.
  if (IsStructured(format)) {
    ShowObject(file, parsed, format);
  } else {
    ShowTable(file, parsed);
  }
}

}  // namespace

void AddCheckpointCommand(CLI::App& app, CommandResult& result) {
  CLI::App* checkpoint = app.add_subcommand(
      "checkpoint", "Read and verify a kubelet_internal_checkpoint (devmgr's or a real kubelet's)");
  checkpoint->require_subcommand(1);
  AddCheckpointVerbs<checkpoint::ParsedCheckpoint>(
      *checkpoint, "Checkpoint file",
      "Show the allocations and registered resources; exit 1 if the checksum mismatches",
      {"checkpoint", checkpoint::Parse, PrintVerify, PrintShow}, result);
  SetExamples(*checkpoint, {{"Check a real kubelet's checkpoint in place",
                             "devmgr checkpoint verify "
                             "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"},
                            {"Show what it holds",
                             "devmgr checkpoint show "
                             "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"}});
  SetExamples(*checkpoint->get_subcommand("verify"),
              {{"Check a real kubelet's checkpoint in place",
                "devmgr checkpoint verify "
                "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"},
               {"Both checksums, as JSON",
                "devmgr checkpoint verify -o json "
                "/tmp/node/device-plugins/kubelet_internal_checkpoint"}});
  SetExamples(*checkpoint->get_subcommand("show"),
              {{"The allocations of a real kubelet's checkpoint, and its registered resources",
                "devmgr checkpoint show "
                "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"}});
}

}  // namespace devmgr::cli
