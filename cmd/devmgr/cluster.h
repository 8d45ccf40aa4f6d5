// Which Kubernetes cluster a command talks to, found as the issue of each command says:
// `--kubeconfig FILE` (a colon-separated list as KUBECONFIG's), with `--context NAME` choosing
// a context other than the current one; for the commands that look further, then the
// KUBECONFIG variable, then the pod's service account when running in a cluster.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "kubeclient/rest_config.h"

namespace devmgr::cli {

// LoadCluster reads the kubeconfig files `kubeconfig` names. Errors say which file and why.
absl::StatusOr<kubeclient::RestConfig> LoadCluster(const std::string& kubeconfig,
                                                   const std::string& context);

// InCluster: the cluster of the pod the process runs in (its service account).
// FailedPrecondition when not in a pod.
absl::StatusOr<kubeclient::RestConfig> InCluster();

// ChooseCluster: `kubeconfig` when given, the service account when `in_cluster`, else none.
absl::StatusOr<std::optional<kubeclient::RestConfig>> ChooseCluster(const std::string& kubeconfig,
                                                                    const std::string& context,
                                                                    bool in_cluster);

// FindCluster: `kubeconfig` when given, else $KUBECONFIG when set, else the in-cluster service
// account when KUBERNETES_SERVICE_HOST is set; std::nullopt when none applies.
absl::StatusOr<std::optional<kubeclient::RestConfig>> FindCluster(const std::string& kubeconfig,
                                                                  const std::string& context);

}  // namespace devmgr::cli
