// Which Kubernetes cluster a command talks to, found as the issue of each command says:
// `--kubeconfig FILE` (a colon-separated list as KUBECONFIG's), with `--context NAME` choosing
// a context other than the current one; for the commands that look further, then the
// KUBECONFIG variable, then the pod's service account when running in a cluster.
#pragma once

#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "kubeclient/client.h"
#include "kubeclient/rest_config.h"

namespace devmgr::cli {

// LoadCluster reads the kubeconfig files `kubeconfig` names. Errors say which file and why.
absl::StatusOr<kubeclient::RestConfig> LoadCluster(const std::string& kubeconfig,
                                                   const std::string& context);

// The flags of a command that may work in a cluster (serve, plugin fake-dra).
struct ClusterFlags {
  std::string kubeconfig;
  std::string context;
  bool in_cluster = false;
  // The client's throttling, as the kubelet's flags and defaults (ClientOptions::qps, burst).
  int kube_api_qps = 50;
  int kube_api_burst = 100;
};

// AddClusterFlags adds --kubeconfig, --context, --in-cluster (which excludes --kubeconfig),
// --kube-api-qps and --kube-api-burst to `command`; `use` says what the cluster is for, in the
// help.
void AddClusterFlags(CLI::App& command, ClusterFlags& flags, const std::string& use);

// ChooseCluster: the kubeconfig when one is given, the pod's service account with
// --in-cluster, else none.
absl::StatusOr<std::optional<kubeclient::RestConfig>> ChooseCluster(const ClusterFlags& flags);

// ClusterClientOptions: the client's options the flags give; InvalidArgument in the kubelet's
// words for a negative rate or burst.
absl::StatusOr<kubeclient::ClientOptions> ClusterClientOptions(const ClusterFlags& flags);

// FindCluster: `kubeconfig` when given, else $KUBECONFIG when set, else the in-cluster service
// account when KUBERNETES_SERVICE_HOST is set; std::nullopt when none applies. A `context`
// without a kubeconfig is InvalidArgument: it would otherwise be ignored.
absl::StatusOr<std::optional<kubeclient::RestConfig>> FindCluster(const std::string& kubeconfig,
                                                                  const std::string& context);

}  // namespace devmgr::cli
