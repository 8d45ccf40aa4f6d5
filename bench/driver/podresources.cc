// PodResources: GetAllocatableResources and List against a bare server sending the same bytes.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/driver/admin_calls.h"
#include "bench/driver/bare_server.h"
#include "bench/driver/harness.h"
#include "bench/driver/measurements.h"
#include "bench/driver/timed_calls.h"
#include "podresources/v1/api.grpc.pb.h"

namespace devmgr::bench {
namespace {

namespace admin = devmgr::admin::v1;
namespace fs = std::filesystem;

}  // namespace

absl::Status MeasureAllocatable(const fs::path& root, BenchDaemon& daemon, const Options& flags,
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
  // One call first, for the bytes the bare server sends.
  std::string serialised;
  std::vector<double> first;
  if (absl::Status status =
          TimeCalls<Response>(1, call_on(daemon.podresources()), check, first, serialised);
      !status.ok()) {
    return status;
  }
  auto bare = BareServer::Start(root / "floor-allocatable.sock", serialised);
  if (!bare.ok()) return bare.status();
  std::vector<double> measured;
  std::vector<double> floor;
  if (absl::Status status =
          TimeAlternately<Response>(samples, call_on(daemon.podresources()),
                                    call_on((*bare)->channel()), check, measured, floor);
      !status.ok()) {
    return status;
  }
  rows.push_back(Timed(absl::StrCat("PodResources GetAllocatableResources, ", devices, " devices"),
                       measured, floor, "bare server sending the same pre-serialised bytes", 1000,
                       "ms"));
  return absl::OkStatus();
}

absl::Status MeasureList(const fs::path& root, BenchDaemon& daemon, const Options& flags,
                         std::vector<Row>& rows) {
  auto plugin = StartPlugin(root, "list", flags.pods * 8);
  if (!plugin.ok()) return plugin.status();
  if (absl::Status status = WaitAllocatable(daemon, Resource("list"), int64_t{flags.pods} * 8);
      !status.ok()) {
    return status;
  }
  auto admitted = AdmitMany(daemon, flags.pods, 8, [](int i) {
    return PodRequest(MakePod(absl::StrCat("list-", i), Resource("list"), 4, 2));
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

  const auto daemon_call = call_on(daemon.podresources());
  // One call first, for the bytes the bare server sends.
  std::string serialised;
  std::vector<double> first;
  if (absl::Status status = TimeCalls<Response>(1, daemon_call, check, first, serialised);
      !status.ok()) {
    return status;
  }
  auto bare = BareServer::Start(root / "floor-list.sock", serialised);
  if (!bare.ok()) return bare.status();
  const auto floor_call = call_on((*bare)->channel());

  std::vector<double> measured;
  std::vector<double> floor;
  if (absl::Status status =
          TimeAlternately<Response>(flags.samples, daemon_call, floor_call, check, measured, floor);
      !status.ok()) {
    return status;
  }
  auto admin = admin::Admin::NewStub(daemon.admin());
  auto replace_a_pod = [&admin] {
    if (absl::Status status = Remove(*admin, "list-0"); !status.ok()) return status;
    return Admit(*admin, MakePod("list-0", Resource("list"), 4, 2));
  };
  std::vector<double> after_change;
  std::vector<double> floor_after_change;
  if (absl::Status status =
          TimeAlternately<Response>(flags.samples, daemon_call, floor_call, check, after_change,
                                    floor_after_change, replace_a_pod);
      !status.ok()) {
    return status;
  }
  auto qps = calls_per_second(daemon_call);
  if (!qps.ok()) return qps.status();
  auto floor_qps = calls_per_second(floor_call);
  if (!floor_qps.ok()) return floor_qps.status();

  const std::string shape = absl::StrCat(flags.pods, " pods x 4 containers x 2 devices");
  rows.push_back(Timed(absl::StrCat("PodResources List, ", shape), measured, floor,
                       "bare server sending the same pre-serialised bytes"));
  rows.push_back(Timed(absl::StrCat("PodResources List after a pod changed, ", shape), after_change,
                       floor_after_change, "bare server sending the same pre-serialised bytes"));
  rows.push_back(Row{absl::StrCat("PodResources List calls/s, ", shape), "1/s", *qps, std::nullopt,
                     *floor_qps, "the same bare server, calls/s", true});
  return RemoveMany(daemon, "list-", flags.pods);
}

}  // namespace devmgr::bench
