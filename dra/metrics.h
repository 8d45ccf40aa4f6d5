// What the DRA manager tells a metrics sink, as the kubelet's DRA metrics count it:
//   dra_operations_duration_seconds{operation_name,is_error}: each PrepareResources and
//     UnprepareResources call of the host (operation_name "PrepareResources" or
//     "UnprepareResources"; is_error "true" when it failed);
//   dra_grpc_operations_duration_seconds{driver_name,method_name,grpc_status_code}: each call to
//     a driver (method_name the full gRPC method, "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/
//     NodePrepareResources"; grpc_status_code as Go spells the code, "OK", "DeadlineExceeded").
// The third, dra_resource_claims_in_use, is read from Manager::ClaimsInUse at scrape time.
// node/node_metrics.h renders them. Calls come from the threads of the host's calls and must
// not block.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace devmgr::dra {

inline constexpr absl::string_view kPrepareResourcesOperation = "PrepareResources";
inline constexpr absl::string_view kUnprepareResourcesOperation = "UnprepareResources";
// The driver_name of dra_resource_claims_in_use that counts every prepared claim once.
inline constexpr absl::string_view kClaimsInUseAnyDriver = "<any>";

class ManagerMetrics {
 public:
  virtual ~ManagerMetrics() = default;
  // OperationDone: one PrepareResources or UnprepareResources call, and whether it failed.
  virtual void OperationDone(absl::string_view operation, bool failed, absl::Duration duration) = 0;
  // DriverCallDone: one gRPC call to a driver, with its full method name and its status code.
  virtual void DriverCallDone(absl::string_view driver, absl::string_view method,
                              absl::StatusCode code, absl::Duration duration) = 0;
};

// GrpcMethod: the full name of `method` of the service a driver registered with ("v1.DRAPlugin"
// gives "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources").
std::string GrpcMethod(absl::string_view service, absl::string_view method);

}  // namespace devmgr::dra
