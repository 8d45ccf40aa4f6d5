// RestConfig: how to reach a Kubernetes API server and prove who we are, read from a kubeconfig
// (its current context: cluster, user, namespace) or from the pod's service account when
// running in a cluster, as client-go's clientcmd and rest.InClusterConfig read them.
//
// A user whose credentials come from an exec plugin gets them from it, as client-go runs one
// (exec_credential.h); auth providers (client-go's deprecated in-tree plugins) are refused with
// a clear error. TLS is always verified against the cluster's CA (or the system's) unless the
// kubeconfig itself sets insecure-skip-tls-verify.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace devmgr::kubeclient {

// client-go's refusal of insecure_skip_tls_verify beside a CA, which LoadKubeconfig and the
// transport make too.
inline constexpr char kInsecureWithCaMessage[] =
    "specifying a root certificates file with the insecure flag is not allowed";

// The exec credential plugin a kubeconfig's user names (clientcmd's ExecConfig): a program whose
// standard output is an ExecCredential of client.authentication.k8s.io.
struct ExecCredentialConfig {
  // The program: a name looked up in PATH, or a path (a relative one with a slash is resolved
  // from the folder of the kubeconfig that names it, as clientcmd resolves it).
  std::string command;
  std::vector<std::string> args;
  // Set in the program's environment, over the process's own.
  std::vector<std::pair<std::string, std::string>> env;
  // client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1.
  std::string api_version;
  // Added to the error when the program is not found (how to install it).
  std::string install_hint;
  // Never, IfAvailable or Always: whether the program gets the process's standard input (it
  // does only while that is a terminal).
  std::string interactive_mode;
  // provideClusterInfo: KUBERNETES_EXEC_INFO's spec.cluster, as JSON text (the cluster's
  // server, TLS settings and CA, and its client.authentication.k8s.io/exec extension); empty
  // when the user does not ask for it.
  std::string cluster_json;

  bool operator==(const ExecCredentialConfig&) const = default;
};

// Whom the requests act as (clientcmd's ImpersonationConfig): sent with every request as
// client-go sends it (Impersonate-User, Impersonate-Uid, one Impersonate-Group per group, one
// Impersonate-Extra-KEY per value, KEY %-escaped where a header name cannot hold it), for the API
// server to check that the credentials may act as them. Nothing is sent while every field is
// empty.
struct Impersonation {
  std::string user;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;

  bool operator==(const Impersonation&) const = default;
};

struct RestConfig {
  // The API server as the cluster names it: a URL (https://host:port, with a path when a proxy
  // in front of the server has moved the API under it), or a host:port that ServerUrl completes.
  std::string server;
  // PEM of the CA to trust; empty: the system's trust store.
  std::string certificate_authority_pem;
  // The file it was read from, when the kubeconfig names a file (not inline data) or in a
  // cluster (the service account's ca.crt). It is read again every
  // certificate_authority_refresh (client-go's CA rotation), and a CA changed on disk is trusted
  // for the connections made after; while it cannot be read, or its certificates do not all
  // parse, the CA in hand is kept.
  std::filesystem::path certificate_authority_file;
  absl::Duration certificate_authority_refresh = absl::Minutes(5);
  // Client certificate and key (PEM), for a user that authenticates with them.
  std::string client_certificate_pem;
  std::string client_key_pem;
  // The files both were read from, when the kubeconfig names files for both (not inline data).
  // They are read again every client_certificate_refresh (client-go's rotating client
  // certificate), so that a certificate renewed on disk is presented without a restart; while
  // they cannot be read, or either is empty, the pair in hand is kept.
  std::filesystem::path client_certificate_file;
  std::filesystem::path client_key_file;
  absl::Duration client_certificate_refresh = absl::Minutes(5);
  // A bearer token, and the file to read one from (a projected token rotates). The file's
  // token, when it can be read, wins; while it cannot, the last one read from it, or else
  // bearer_token, is sent, as client-go does.
  std::string bearer_token;
  std::filesystem::path bearer_token_file;
  // How long a token read from the file is used before the file is read again (client-go's).
  absl::Duration bearer_token_file_refresh = absl::Minutes(1);
  // Credentials from a program, when the user has no token, token file or client certificate
  // (client-go uses an exec plugin only then). Its token and client certificate are used as
  // the ones above would be.
  std::optional<ExecCredentialConfig> exec;
  // The kubeconfig user's `as`, `as-uid`, `as-groups` and `as-user-extra`; clientcmd reads the
  // others only with `as`. Sent to an http:// server too, as client-go sends it.
  Impersonation impersonate;
  // The name the server's certificate must carry, when it is not the server's host.
  std::string tls_server_name;
  bool insecure_skip_tls_verify = false;
  // The cluster's disable-compression: answers are not asked for gzip'd (client-go asks for
  // them, and an API server compresses those of 128 KiB and more).
  bool disable_compression = false;
  // The cluster's proxy-url (http://, https:// or socks5://): every request goes through it,
  // whatever the environment's proxy variables say, as client-go's. Empty: those variables
  // apply (https_proxy, no_proxy, as libcurl and Go's ProxyFromEnvironment read them).
  std::string proxy_url;
  // The default namespace for namespaced calls: the context's, or in a cluster the pod's
  // ("default" when none is named). The client's calls name their namespace themselves.
  std::string namespace_name = "default";

  bool operator==(const RestConfig&) const = default;
};

// CheckProxyUrl: `proxy_url` is a URL of a scheme client-go's proxies take (http, https,
// socks5); InvalidArgument with clientcmd's reason otherwise.
absl::Status CheckProxyUrl(const std::string& proxy_url);

// ServerUrl: the URL requests go to for `server`, as client-go's rest.DefaultServerURL reads it.
// A server without a scheme and host (a host, host:port or [IPv6]:port) gets https:// when
// `default_tls` (client-go: the configuration names a CA, a client certificate or
// insecure-skip-tls-verify) and http:// otherwise, and may have no path then ("host must be a
// URL or a host:port pair"). Both are read as Go's url.Parse reads them (common/go_url.h), whose
// error is the answer for text that is no URL. The scheme is lower-cased; a query or fragment is
// dropped, as client-go's requests replace the one and never send the other.
absl::StatusOr<std::string> ServerUrl(const std::string& server, bool default_tls);

// LoadKubeconfig reads the kubeconfig files (KUBECONFIG's colon-separated list: the first file
// that sets a value wins, as clientcmd merges them; files that do not exist are skipped, unless
// all are missing) and resolves `context` (empty: the files' current-context). Relative file
// paths are taken from the folder of the file that names them.
absl::StatusOr<RestConfig> LoadKubeconfig(const std::vector<std::filesystem::path>& files,
                                          const std::string& context = "");

// KubeconfigFiles splits a KUBECONFIG value into its files (empty entries are skipped).
std::vector<std::filesystem::path> KubeconfigFiles(const std::string& kubeconfig_env);

// The service account's files in a pod.
inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// InClusterConfig: the API server of the cluster the process runs in (KUBERNETES_SERVICE_HOST
// and KUBERNETES_SERVICE_PORT from `env`), the service account's token file, CA and namespace
// under `service_account_dir` (POD_NAMESPACE in `env` wins over the namespace file, as in
// clientcmd). FailedPrecondition when not in a cluster.
absl::StatusOr<RestConfig> InClusterConfig(
    const std::map<std::string, std::string>& env,
    const std::filesystem::path& service_account_dir = kServiceAccountDir);

}  // namespace devmgr::kubeclient
