#include "cmd/devmgr/cluster.h"

#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "cmd/devmgr/command_tree.h"

namespace devmgr::cli {

absl::StatusOr<kubeclient::RestConfig> LoadCluster(const std::string& kubeconfig,
                                                   const std::string& context) {
  return kubeclient::LoadKubeconfig(kubeclient::KubeconfigFiles(kubeconfig), context);
}

namespace {

// InCluster: the cluster of the pod the process runs in (its service account).
absl::StatusOr<kubeclient::RestConfig> InCluster() {
  std::map<std::string, std::string> env;
  for (const char* name : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "POD_NAMESPACE"}) {
    const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): no setenv here
    if (value != nullptr) env[name] = value;
  }
  return kubeclient::InClusterConfig(env);
}

absl::StatusOr<std::optional<kubeclient::RestConfig>> Wrap(
    absl::StatusOr<kubeclient::RestConfig> config) {
  if (!config.ok()) return config.status();
  return std::optional<kubeclient::RestConfig>(*std::move(config));
}

}  // namespace

void AddClusterFlags(CLI::App& command, ClusterFlags& flags, const std::string& use) {
  CLI::Option* kubeconfig =
      command
          .add_option("--kubeconfig", flags.kubeconfig,
                      absl::StrCat("The cluster (a kubeconfig, its current context): ", use))
          ->type_name("FILE");
  command.add_option("--context", flags.context, "The kubeconfig context to use")
      ->type_name("NAME")
      ->needs(kubeconfig);
  command
      .add_flag("--in-cluster", flags.in_cluster,
                "The cluster of the pod devmgr runs in (its service account), as --kubeconfig")
      ->excludes(kubeconfig);
  command
      .add_option("--kube-api-qps", flags.kube_api_qps,
                  "Requests a second to the API server, as the kubelet's (0: client-go's 5)")
      ->type_name("QPS")
      ->capture_default_str()
      ->transform(DecimalInteger<int>());
  command
      .add_option("--kube-api-burst", flags.kube_api_burst,
                  "Requests to the API server at once before --kube-api-qps holds them, as the "
                  "kubelet's (0: client-go's 10)")
      ->type_name("N")
      ->capture_default_str()
      ->transform(DecimalInteger<int>());
}

absl::StatusOr<kubeclient::ClientOptions> ClusterClientOptions(const ClusterFlags& flags) {
  if (flags.kube_api_qps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration: kubeAPIQPS (--kube-api-qps) ", flags.kube_api_qps,
                     " must not be a negative number"));
  }
  if (flags.kube_api_burst < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid configuration: kubeAPIBurst (--kube-api-burst) ",
                     flags.kube_api_burst, " must not be a negative number"));
  }
  kubeclient::ClientOptions options;
  options.qps = flags.kube_api_qps;
  options.burst = flags.kube_api_burst;
  return options;
}

absl::StatusOr<std::optional<kubeclient::RestConfig>> ChooseCluster(const ClusterFlags& flags) {
  if (!flags.kubeconfig.empty()) return Wrap(LoadCluster(flags.kubeconfig, flags.context));
  if (flags.in_cluster) return Wrap(InCluster());
  return std::optional<kubeclient::RestConfig>();
}

absl::StatusOr<std::optional<kubeclient::RestConfig>> FindCluster(const std::string& kubeconfig,
                                                                  const std::string& context) {
  std::string files = kubeconfig;
  if (files.empty()) {
    const char* env = std::getenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe): no setenv here
    if (env != nullptr) files = env;
  }
  if (!files.empty()) return Wrap(LoadCluster(files, context));
  if (!context.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("context \"", context,
                     "\" is not in a kubeconfig: none is given (--kubeconfig or KUBECONFIG)"));
  }
  if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {  // NOLINT(concurrency-mt-unsafe)
    return Wrap(InCluster());
  }
  return std::optional<kubeclient::RestConfig>();
}

}  // namespace devmgr::cli
