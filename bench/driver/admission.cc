// Admission through the daemon's admin API: the latency of one, and the rate of many at once.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/driver/admin_calls.h"
#include "bench/driver/harness.h"
#include "bench/driver/measurements.h"
#include "common/file_store.h"
#include "common/unix_socket.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace devmgr::bench {
namespace {

namespace admin = devmgr::admin::v1;
namespace fs = std::filesystem;

}  // namespace

absl::Status MeasureAdmission(const fs::path& root, BenchDaemon& daemon, const Options& flags,
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
    return PodRequest(MakePod(absl::StrCat("adm-background-", i), Resource("adm"), 1, 1));
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
      auto bytes = ReadWholeFile(root / "device-plugins" / "kubelet_internal_checkpoint");
      if (!bytes.ok()) return bytes.status();
      checkpoint_bytes = *std::move(bytes);
    }
    if (absl::Status status = Remove(*stub, uid); !status.ok()) return status;
  }

  auto plugin_stub = v1beta1::DevicePlugin::NewStub(grpc::CreateChannel(
      UnixTarget((*plugin)->SocketPath("adm")), grpc::InsecureChannelCredentials()));
  const fs::path floor_dir = root / "floor-checkpoint";
  fs::create_directories(floor_dir);
  const FileStore store(floor_dir);
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

absl::Status MeasureConcurrentAdmission(const fs::path& root, BenchDaemon& daemon,
                                        const Options& flags, std::vector<Row>& rows) {
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
  auto rates = MeasureRates(daemon, "conc", batch, kAdmitters, [&](const std::string& uid, int i) {
    return PodRequest(MakePod(uid, Resource(absl::StrCat("c", i % kAdmitters)), 1, 1));
  });
  if (!rates.ok()) return rates.status();
  Row row{absl::StrCat("admissions/s, ", kAdmitters, " admitters x ", kAdmitters, " plugins"),
          "1/s",
          rates->concurrent,
          std::nullopt,
          rates->serial,
          "the same admissions from 1 admitter",
          true};
  rows.push_back(std::move(row));
  return absl::OkStatus();
}

}  // namespace devmgr::bench
