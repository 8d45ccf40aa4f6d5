#include "dra/metrics.h"

#include "absl/strings/str_cat.h"

namespace devmgr::dra {

std::string GrpcMethod(absl::string_view service, absl::string_view method) {
  return absl::StrCat("/k8s.io.kubelet.pkg.apis.dra.", service, "/", method);
}

}  // namespace devmgr::dra
