#include "cmd/devmgr/cluster.h"

#include <cstdlib>
#include <map>

namespace devmgr::cli {

absl::StatusOr<kubeclient::RestConfig> LoadCluster(const std::string& kubeconfig,
                                                   const std::string& context) {
  return kubeclient::LoadKubeconfig(kubeclient::KubeconfigFiles(kubeconfig), context);
}

absl::StatusOr<std::optional<kubeclient::RestConfig>> FindCluster(const std::string& kubeconfig,
                                                                  const std::string& context) {
  std::string files = kubeconfig;
  if (files.empty()) {
    const char* env = std::getenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe): no setenv here
    if (env != nullptr) files = env;
  }
  if (!files.empty()) {
    absl::StatusOr<kubeclient::RestConfig> config = LoadCluster(files, context);
    if (!config.ok()) return config.status();
    return std::optional<kubeclient::RestConfig>(*std::move(config));
  }
  std::map<std::string, std::string> env;
  for (const char* name : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
    const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): no setenv here
    if (value != nullptr) env[name] = value;
  }
  if (!env.contains("KUBERNETES_SERVICE_HOST")) return std::optional<kubeclient::RestConfig>();
  absl::StatusOr<kubeclient::RestConfig> config = kubeclient::InClusterConfig(env);
  if (!config.ok()) return config.status();
  return std::optional<kubeclient::RestConfig>(*std::move(config));
}

}  // namespace devmgr::cli
