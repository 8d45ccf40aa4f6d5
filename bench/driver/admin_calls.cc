#include "bench/driver/admin_calls.h"

#include <grpcpp/grpcpp.h>

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/driver/harness.h"
#include "bench/driver/report.h"

namespace devmgr::bench {
namespace {

namespace admin = devmgr::admin::v1;

}  // namespace

admin::Pod MakePod(const std::string& uid, const std::string& resource, int containers,
                   int devices_per_container) {
  admin::Pod pod;
  pod.set_uid(uid);
  pod.set_namespace_("bench");
  pod.set_name(uid);
  for (int c = 0; c < containers; ++c) {
    admin::Container* container = pod.add_containers();
    container->set_name(absl::StrCat("c", c));
    (*container->mutable_devices())[resource] = devices_per_container;
  }
  return pod;
}

admin::AdmitPodRequest PodRequest(admin::Pod pod) {
  admin::AdmitPodRequest request;
  *request.mutable_pod() = std::move(pod);
  return request;
}

admin::AdmitPodRequest ManifestRequest(std::string manifest) {
  admin::AdmitPodRequest request;
  request.set_manifest(std::move(manifest));
  return request;
}

absl::Status Admit(admin::Admin::Stub& stub, const admin::AdmitPodRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context);
  admin::AdmitPodResponse response;
  return FromGrpc("AdmitPod", stub.AdmitPod(&context, request, &response));
}

absl::Status Admit(admin::Admin::Stub& stub, admin::Pod pod) {
  return Admit(stub, PodRequest(std::move(pod)));
}

absl::Status Remove(admin::Admin::Stub& stub, const std::string& uid) {
  grpc::ClientContext context;
  SetDeadline(context);
  admin::RemovePodRequest request;
  request.set_pod_uid(uid);
  admin::RemovePodResponse response;
  return FromGrpc("RemovePod", stub.RemovePod(&context, request, &response));
}

absl::StatusOr<std::vector<double>> AdmitMany(
    BenchDaemon& daemon, int count, int threads,
    const std::function<admin::AdmitPodRequest(int)>& make_request) {
  std::vector<std::vector<double>> latencies(static_cast<size_t>(threads));
  std::vector<absl::Status> errors(static_cast<size_t>(threads));
  std::vector<std::thread> admitters;
  for (int t = 0; t < threads; ++t) {
    admitters.emplace_back([&, t] {
      auto stub = admin::Admin::NewStub(daemon.admin());
      for (int i = t; i < count && errors[static_cast<size_t>(t)].ok(); i += threads) {
        const admin::AdmitPodRequest request = make_request(i);
        const auto start = Clock::now();
        errors[static_cast<size_t>(t)] = Admit(*stub, request);
        latencies[static_cast<size_t>(t)].push_back(MicrosSince(start));
      }
    });
  }
  for (std::thread& admitter : admitters) admitter.join();
  std::vector<double> all;
  for (size_t t = 0; t < errors.size(); ++t) {
    if (!errors[t].ok()) return errors[t];
    all.insert(all.end(), latencies[t].begin(), latencies[t].end());
  }
  return all;
}

absl::StatusOr<AdmissionRates> MeasureRates(
    BenchDaemon& daemon, const std::string& prefix, int count, int threads,
    const std::function<admin::AdmitPodRequest(const std::string& uid, int i)>& make_request) {
  constexpr int kRounds = 3;
  std::vector<double> rates[2];  // [0] serial, [1] concurrent
  for (int round = 0; round < kRounds; ++round) {
    for (int concurrent = 0; concurrent < 2; ++concurrent) {
      const std::string batch = absl::StrCat(prefix, "-", round * 2 + concurrent, "-");
      const auto start = Clock::now();
      auto latencies = AdmitMany(daemon, count, concurrent != 0 ? threads : 1,
                                 [&](int i) { return make_request(absl::StrCat(batch, i), i); });
      if (!latencies.ok()) return latencies.status();
      rates[concurrent].push_back(count / (MicrosSince(start) / 1e6));
      if (absl::Status status = RemoveMany(daemon, batch, count); !status.ok()) return status;
    }
  }
  return AdmissionRates{Percentile(rates[0], 0.5), Percentile(rates[1], 0.5)};
}

absl::Status RemoveMany(BenchDaemon& daemon, const std::string& prefix, int count) {
  auto stub = admin::Admin::NewStub(daemon.admin());
  for (int i = 0; i < count; ++i) {
    if (absl::Status status = Remove(*stub, absl::StrCat(prefix, i)); !status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace devmgr::bench
