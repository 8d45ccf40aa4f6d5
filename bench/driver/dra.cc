// DRA through the daemon: pods with ResourceClaims admitted over the admin API, their claims
// prepared by a fake DRA driver (plugins/fakedra) that runs in the bench's process and reads
// each claim back from the daemon, as `devmgr plugin fake-dra` does on a node without a cluster.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/driver/admin_calls.h"
#include "bench/driver/harness.h"
#include "bench/driver/measurements.h"
#include "common/file_store.h"
#include "dra/checkpoint.h"
#include "dra/driver_client.h"
#include "kubeletplugin/admin_claim_lookup.h"
#include "plugins/fakedra/fake_driver.h"

namespace devmgr::bench {
namespace {

namespace admin = devmgr::admin::v1;
namespace fs = std::filesystem;

constexpr char kDraDriver[] = "gpu.bench.example.com";

// ClaimName: claim `index` of pod `uid`.
std::string ClaimName(const std::string& uid, int index) {
  return absl::StrCat(uid, "-claim-", index);
}

// PodWithClaims: the manifest of pod `uid` whose container uses `claims` claims, each allocated
// one device of the driver, "dev-<first_device>" onwards, followed by the claims themselves.
std::string PodWithClaims(const std::string& uid, int claims, int first_device) {
  std::string pod_claims;
  std::string uses;
  std::string documents;
  for (int i = 0; i < claims; ++i) {
    const std::string claim = ClaimName(uid, i);
    absl::StrAppend(&pod_claims, "  - {name: c", i, ", resourceClaimName: ", claim, "}\n");
    absl::StrAppend(&uses, i == 0 ? "" : ", ", "{name: c", i, "}");
    absl::StrAppend(&documents, "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n",
                    "metadata: {name: ", claim, ", uid: uid-", claim, "}\n",
                    "status: {allocation: {devices: {results: [{request: req, driver: ", kDraDriver,
                    ", pool: node, device: dev-", first_device + i, "}]}}}\n");
  }
  return absl::StrCat("metadata: {name: ", uid, ", uid: ", uid, "}\nspec:\n  resourceClaims:\n",
                      pod_claims, "  containers: [{name: app, resources: {claims: [", uses,
                      "]}}]\n", documents);
}

// StartDriver starts the fake driver with `devices` devices in `root` and waits until the daemon
// has confirmed its registration.
absl::StatusOr<std::unique_ptr<plugins::FakeDraDriver>> StartDriver(const fs::path& root,
                                                                    int devices) {
  plugins::FakeDraOptions options;
  options.driver_name = kDraDriver;
  options.root_dir = root;
  options.devices = devices;
  options.serve_health = false;
  options.claim_lookup = kubeletplugin::AdminClaimLookup(root / "devmgr.sock", kCallTimeout);
  absl::StatusOr<std::unique_ptr<plugins::FakeDraDriver>> driver =
      plugins::FakeDraDriver::Start(std::move(options));
  if (!driver.ok()) return driver.status();
  const absl::Time deadline = absl::Now() + kStartTimeout;
  while (!(*driver)->registration().registered) {
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("the daemon never registered ", kDraDriver,
                                                      ": ", (*driver)->registration().error));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return driver;
}

}  // namespace

absl::Status MeasureDraPrepare(const fs::path& root, BenchDaemon& daemon, const Options& flags,
                               std::vector<Row>& rows) {
  const int claims = flags.dra_claims;
  const int before = flags.dra_admitted_pods;
  // Devices 0 .. before*claims-1 for the pods admitted first, then the measured pod's.
  auto driver = StartDriver(root, (before + 1) * claims);
  if (!driver.ok()) return driver.status();
  auto admitted = AdmitMany(daemon, before, 8, [&](int i) {
    return ManifestRequest(PodWithClaims(absl::StrCat("dra-background-", i), claims, i * claims));
  });
  if (!admitted.ok()) return admitted.status();
  auto stub = admin::Admin::NewStub(daemon.admin());
  std::vector<double> measured;
  for (int i = 0; i < flags.samples; ++i) {
    const std::string uid = absl::StrCat("dra-", i);
    const auto start = Clock::now();
    if (absl::Status status =
            Admit(*stub, ManifestRequest(PodWithClaims(uid, claims, before * claims)));
        !status.ok()) {
      return status;
    }
    measured.push_back(MicrosSince(start));
    if (i + 1 < flags.samples) {
      if (absl::Status status = Remove(*stub, uid); !status.ok()) return status;
    }
  }

  // The floor, while the last pod is admitted (the driver reads its claims from the daemon, as
  // in the measured path): the same driver asked to prepare those claims, and the state the
  // daemon wrote for them made durable once.
  const std::string last = absl::StrCat("dra-", flags.samples - 1);
  auto state = ReadWholeFile(root / dra::kCheckpointName);
  if (!state.ok()) return state.status();
  const dra::DriverClient client(kDraDriver, (*driver)->service_socket().string(),
                                 dra::kDraPluginServiceV1, kCallTimeout);
  dra::draapi::v1::NodePrepareResourcesRequest request;
  for (int c = 0; c < claims; ++c) {
    auto* claim = request.add_claims();
    claim->set_namespace_("default");
    claim->set_name(ClaimName(last, c));
    claim->set_uid(absl::StrCat("uid-", ClaimName(last, c)));
  }
  const fs::path floor_dir = root / "floor-dra";
  fs::create_directories(floor_dir);
  const FileStore store(floor_dir);
  std::vector<double> floor;
  for (int i = 0; i < flags.samples; ++i) {
    const auto start = Clock::now();
    auto response = client.NodePrepareResources(request);
    if (!response.ok()) return response.status();
    if (absl::Status status = store.Write(dra::kCheckpointName, *state); !status.ok()) {
      return status;
    }
    floor.push_back(MicrosSince(start));
  }
  std::string name =
      claims == 1 ? "DRA admit pod, 1 claim" : absl::StrCat("DRA admit pod, ", claims, " claims");
  if (before > 0) absl::StrAppend(&name, ", ", before, " pods before");
  rows.push_back(Timed(std::move(name), measured, floor,
                       "NodePrepareResources rpc + write/fsync/rename of the same state"));
  if (absl::Status status = Remove(*stub, last); !status.ok()) return status;
  return RemoveMany(daemon, "dra-background-", before);
}

absl::Status MeasureConcurrentDra(const fs::path& root, BenchDaemon& daemon, const Options& flags,
                                  std::vector<Row>& rows) {
  constexpr int kAdmitters = 8;
  constexpr int kClaims = 2;
  const int pods = flags.dra_pods;
  auto driver = StartDriver(root, pods * kClaims);
  if (!driver.ok()) return driver.status();
  auto rates = MeasureRates(daemon, "dra", pods, kAdmitters, [&](const std::string& uid, int i) {
    return ManifestRequest(PodWithClaims(uid, kClaims, i * kClaims));
  });
  if (!rates.ok()) return rates.status();
  rows.push_back(Row{absl::StrCat("DRA pods/s, ", pods, " pods x ", kClaims, " claims, ",
                                  kAdmitters, " admitters"),
                     "1/s", rates->concurrent, std::nullopt, rates->serial,
                     "the same pods from 1 admitter", true});
  return absl::OkStatus();
}

}  // namespace devmgr::bench
