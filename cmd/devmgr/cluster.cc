#include "cmd/devmgr/cluster.h"

#include <cstdlib>
#include <map>

namespace devmgr::cli {

absl::StatusOr<kubeclient::RestConfig> LoadCluster(const std::string& kubeconfig,
                                                   const std::string& context) {
  return kubeclient::LoadKubeconfig(kubeclient::KubeconfigFiles(kubeconfig), context);
}

absl::StatusOr<kubeclient::RestConfig> InCluster() {
  std::map<std::string, std::string> env;
  for (const char* name : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
    const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): no setenv here
    if (value != nullptr) env[name] = value;
  }
  return kubeclient::InClusterConfig(env);
}

absl::StatusOr<std::optional<kubeclient::RestConfig>> ChooseCluster(const std::string& kubeconfig,
                                                                    const std::string& context,
                                                                    bool in_cluster) {
  absl::StatusOr<kubeclient::RestConfig> config = absl::NotFoundError("no cluster");
  if (!kubeconfig.empty()) {
    config = LoadCluster(kubeconfig, context);
  } else if (in_cluster) {
    config = InCluster();
  } else {
    return std::optional<kubeclient::RestConfig>();
  }
  if (!config.ok()) return config.status();
  return std::optional<kubeclient::RestConfig>(*std::move(config));
}

absl::StatusOr<std::optional<kubeclient::RestConfig>> FindCluster(const std::string& kubeconfig,
                                                                  const std::string& context) {
  std::string files = kubeconfig;
  if (files.empty()) {
    const char* env = std::getenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe): no setenv here
    if (env != nullptr) files = env;
  }
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");  // NOLINT(concurrency-mt-unsafe)
  return ChooseCluster(files, context, host != nullptr);
}

}  // namespace devmgr::cli
