#include "cmd/devmgr/dra_cmd.h"

#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cmd/devmgr/checkpoint_verbs.h"
#include "cmd/devmgr/command_tree.h"
#include "cmd/devmgr/dra_allocate.h"
#include "cmd/devmgr/printer.h"
#include "cmd/devmgr/rpc_client.h"
#include "common/table.h"
#include "devmgr/admin/v1/api.grpc.pb.h"
#include "dra/checkpoint.h"

namespace devmgr::cli {
namespace {

namespace admin = devmgr::admin::v1;

std::string LayoutName(const dra::ParsedCheckpoint& parsed) {
  std::string name = !parsed.layout.has_value()                ? "no devices"
                     : *parsed.layout == dra::Layout::kShareId ? "ShareID"
                                                               : "no ShareID";
  if (parsed.claim_info_state_list) absl::StrAppend(&name, ", ClaimInfoStateList");
  return name;
}

size_t ClaimCount(const dra::ParsedCheckpoint& parsed) {
  return parsed.data.entries.has_value() ? parsed.data.entries->size() : 0;
}

std::string ListText(const dra::GoStrings& list) {
  return !list.has_value() || list->empty() ? "-" : absl::StrJoin(*list, ",");
}

void PrintVerify(const std::string& file, const dra::ParsedCheckpoint& parsed,
                 OutputFormat format) {
  const bool valid = parsed.ChecksumMatches();
  if (IsStructured(format)) {
    OrderedJson out;
    out["file"] = file;
    out["valid"] = valid;
    out["layout"] = LayoutName(parsed);
    out["storedChecksum"] = parsed.stored_checksum;
    out["computedChecksum"] = parsed.computed_checksum;
    out["claims"] = ClaimCount(parsed);
    PrintObject(out, format);
  } else if (valid) {
    std::cout << "valid: checksum " << parsed.stored_checksum << ", layout " << LayoutName(parsed)
              << ", " << ClaimCount(parsed) << " claims\n";
  } else {
    std::cout << ChecksumMismatchText(parsed) << '\n';
  }
}

void ShowTable(const std::string& file, const dra::ParsedCheckpoint& parsed) {
  std::cout << "Checkpoint:  " << file << '\n'
            << "Layout:      " << LayoutName(parsed) << '\n'
            << "Checksum:    " << parsed.stored_checksum
            << (parsed.ChecksumMatches()
                    ? " (valid)"
                    : absl::StrCat(" (MISMATCH: computed ", parsed.computed_checksum, ")"))
            << "\n\n";
  Table table({"CLAIM", "UID", "PODS", "DRIVER", "POOL/DEVICE", "SHARE", "REQUESTS", "CDI"});
  for (const dra::ClaimInfoState& claim :
       parsed.data.entries.value_or(std::vector<dra::ClaimInfoState>{})) {
    const std::string name = absl::StrCat(claim.namespace_name, "/", claim.claim_name);
    const std::string pods = claim.pod_uids.has_value() && !claim.pod_uids->empty()
                                 ? absl::StrJoin(*claim.pod_uids, ",")
                                 : "-";
    bool listed = false;
    for (const auto& [driver, state] :
         claim.driver_state.value_or(std::map<std::string, dra::DriverState>{})) {
      for (const dra::CheckpointDevice& device :
           state.devices.value_or(std::vector<dra::CheckpointDevice>{})) {
        table.AddRow({name, claim.claim_uid, pods, driver,
                      absl::StrCat(device.pool_name, "/", device.device_name),
                      device.share_id.value_or("-"), ListText(device.request_names),
                      ListText(device.cdi_device_ids)});
        listed = true;
      }
    }
    if (!listed) table.AddRow({name, claim.claim_uid, pods, "-", "-", "-", "-", "-"});
  }
  table.Print(std::cout);
}

OrderedJson ListJson(const dra::GoStrings& list) {
  return list.has_value() ? OrderedJson(*list) : OrderedJson(nullptr);
}

void ShowObject(const std::string& file, const dra::ParsedCheckpoint& parsed, OutputFormat format) {
  OrderedJson out;
  out["file"] = file;
  out["layout"] = LayoutName(parsed);
  out["storedChecksum"] = parsed.stored_checksum;
  out["computedChecksum"] = parsed.computed_checksum;
  out["valid"] = parsed.ChecksumMatches();
  OrderedJson claims = OrderedJson::array();
  for (const dra::ClaimInfoState& claim :
       parsed.data.entries.value_or(std::vector<dra::ClaimInfoState>{})) {
    OrderedJson item;
    item["claimUID"] = claim.claim_uid;
    item["claimName"] = claim.claim_name;
    item["namespace"] = claim.namespace_name;
    item["podUIDs"] = claim.pod_uids.has_value() ? OrderedJson(*claim.pod_uids) : nullptr;
    OrderedJson drivers = OrderedJson::object();
    OrderedJson skipped = OrderedJson::object();
    for (const auto& [driver, state] :
         claim.driver_state.value_or(std::map<std::string, dra::DriverState>{})) {
      if (state.skip_node_operations.has_value()) {
        skipped[driver] = ListJson(state.skip_node_operations);
      }
      OrderedJson devices = OrderedJson::array();
      for (const dra::CheckpointDevice& device :
           state.devices.value_or(std::vector<dra::CheckpointDevice>{})) {
        OrderedJson d;
        d["poolName"] = device.pool_name;
        d["deviceName"] = device.device_name;
        d["shareID"] = device.share_id.has_value() ? OrderedJson(*device.share_id) : nullptr;
        d["requestNames"] = ListJson(device.request_names);
        d["cdiDeviceIDs"] = ListJson(device.cdi_device_ids);
        devices.push_back(std::move(d));
      }
      drivers[driver] = std::move(devices);
    }
    item["drivers"] = std::move(drivers);
    // DRAOptionalNodeOperations: the operations each driver is not called for, when any.
    if (!skipped.empty()) item["skipNodeOperations"] = std::move(skipped);
    claims.push_back(std::move(item));
  }
  out["claims"] = std::move(claims);
  PrintObject(out, format);
}

void PrintShow(const std::string& file, const dra::ParsedCheckpoint& parsed, OutputFormat format) {
  // Wide is the table: it leaves nothing of the file out.
  if (IsStructured(format)) {
    ShowObject(file, parsed, format);
  } else {
    ShowTable(file, parsed);
  }
}

// DeviceText: "driver/pool/device" and its share, for the claims table.
std::string DeviceText(const admin::PreparedDevice& device) {
  std::string text = absl::StrCat(device.driver(), "/", device.pool(), "/", device.device());
  if (!device.share_id().empty()) absl::StrAppend(&text, " (share ", device.share_id(), ")");
  return text;
}

int RunClaims(const std::string& root_dir, const std::string& timeout, OutputFormat format) {
  Connection connection = ConnectDaemon(root_dir, timeout);
  if (connection.exit_code != kExitOk) return connection.exit_code;
  auto stub = admin::Admin::NewStub(connection.channel);
  admin::ListClaimsResponse response;
  grpc::ClientContext context;
  SetDeadline(context, connection.timeout);
  if (grpc::Status status = stub->ListClaims(&context, admin::ListClaimsRequest(), &response);
      !status.ok()) {
    return DaemonFailure("ListClaims", status, context);
  }
  if (IsStructured(format)) {
    PrintObject(ProtoToJson(response), format);
    return kExitOk;
  }
  // Wide adds the requests each device was allocated for.
  ColumnTable table({{"CLAIM"},
                     {"UID"},
                     {"PODS"},
                     {"PREPARED"},
                     {"DEVICE"},
                     {"CDI"},
                     {"REQUESTS", /*wide=*/true}},
                    format);
  for (const admin::PreparedClaim& claim : response.claims()) {
    const std::string name = absl::StrCat(claim.namespace_(), "/", claim.name());
    const std::string pods = claim.pod_uids().empty() ? "-" : absl::StrJoin(claim.pod_uids(), ",");
    const std::string prepared = claim.prepared() ? "yes" : "not since start";
    if (claim.devices().empty()) {
      table.AddRow({name, claim.uid(), pods, prepared, "-", "-", "-"});
    }
    for (const admin::PreparedDevice& device : claim.devices()) {
      table.AddRow(
          {name, claim.uid(), pods, prepared, DeviceText(device),
           device.cdi_device_ids().empty() ? "-" : absl::StrJoin(device.cdi_device_ids(), ","),
           device.request_names().empty() ? "-" : absl::StrJoin(device.request_names(), ",")});
    }
  }
  table.Print(std::cout);
  return kExitOk;
}

struct ClaimsFlags {
  std::string root_dir = "/var/lib/kubelet";
  std::string timeout = "10s";
  OutputFormat format = OutputFormat::kTable;
};

}  // namespace

void AddDraCommand(CLI::App& app, CommandResult& result) {
  CLI::App* dra = app.add_subcommand("dra", "Dynamic Resource Allocation on the node");
  dra->require_subcommand(1);
  SetExamples(*dra, {{"The ResourceClaims the daemon under /tmp/node holds",
                      "devmgr dra claims --root-dir /tmp/node"},
                     {"Check the DRA manager's checkpoint",
                      "devmgr dra checkpoint verify "
                      "/tmp/node/dra_manager_state"}});
  CLI::App* checkpoint = dra->add_subcommand(
      "checkpoint", "Read and verify a dra_manager_state (devmgr's or a real kubelet's)");
  checkpoint->require_subcommand(1);

  AddCheckpointVerbs<dra::ParsedCheckpoint>(
      *checkpoint, "A dra_manager_state file",
      "Show the prepared claims; exit 1 if the checksum mismatches",
      {"DRA checkpoint", dra::Parse, PrintVerify, PrintShow}, result);
  SetExamples(*checkpoint, {{"Check the prepared claims' checkpoint of the daemon under /tmp/node",
                             "devmgr dra checkpoint verify /tmp/node/dra_manager_state"},
                            {"Show the claims in it",
                             "devmgr dra checkpoint show "
                             "/tmp/node/dra_manager_state"}});
  SetExamples(*checkpoint->get_subcommand("verify"),
              {{"Check the prepared claims' checkpoint of the daemon under /tmp/node",
                "devmgr dra checkpoint verify /tmp/node/dra_manager_state"}});
  SetExamples(*checkpoint->get_subcommand("show"),
              {{"Each prepared claim with its pods, drivers and devices",
                "devmgr dra checkpoint show /tmp/node/dra_manager_state"},
               {"As YAML", "devmgr dra checkpoint show -o yaml /tmp/node/dra_manager_state"}});

  auto flags = std::make_shared<ClaimsFlags>();
  CLI::App* claims = dra->add_subcommand(
      "claims", "List the ResourceClaims a devmgr serve daemon holds, with their pods and devices");
  claims->add_option("--root-dir", flags->root_dir, "Kubelet root folder of the daemon")
      ->type_name("DIR")
      ->capture_default_str();
  claims->add_option("--timeout", flags->timeout, "How long to wait for the daemon")
      ->type_name("DURATION")
      ->capture_default_str();
  SetExamples(*claims, {{"The claims of the daemon under /tmp/node, with their pods and devices",
                         "devmgr dra claims --root-dir /tmp/node"},
                        {"With the requests each device was allocated for",
                         "devmgr dra claims --root-dir /tmp/node -o wide"}});
  AddOutputFlag(*claims, flags->format);
  claims->callback([&result, flags] {
    result.exit_code = RunClaims(flags->root_dir, flags->timeout, flags->format);
  });

  AddAllocateCommand(*dra, result);
}

}  // namespace devmgr::cli
