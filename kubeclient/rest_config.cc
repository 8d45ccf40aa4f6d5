#include "kubeclient/rest_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <system_error>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_store.h"
#include "common/go_quote.h"
#include "common/go_url.h"
#include "kubeapi/json_text.h"
#include "kubeapi/yaml_objects.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeclient {
namespace {

// A named entry of a kubeconfig list (a cluster, a user, a context) and the folder of the file
// it came from, against which its relative paths resolve.
struct Entry {
  YAML::Node node;
  std::filesystem::path dir;
};

// Resolve: `file` as clientcmd resolves a path of `entry`'s: an absolute one as it is, a
// relative one joined to the entry's folder and cleaned (Go's filepath.Join).
std::filesystem::path Resolve(const Entry& entry, const std::string& file) {
  const std::filesystem::path path(file);
  return path.is_absolute() ? path : (entry.dir / path).lexically_normal();
}

// The merged kubeconfig: for each name, the first file's entry wins.
struct Merged {
  std::string current_context;
  std::map<std::string, Entry> clusters;
  std::map<std::string, Entry> users;
  std::map<std::string, Entry> contexts;
};

// IsMap: `node` exists and is a map (yaml-cpp throws on asking a missing node its type).
bool IsMap(const YAML::Node& node) { return node.IsDefined() && node.IsMap(); }

// String: a scalar field of `node`, or "".
std::string String(const YAML::Node& node, const char* key) {
  if (!IsMap(node)) return "";
  const YAML::Node value = node[key];
  return value.IsDefined() && value.IsScalar() ? value.as<std::string>() : "";
}

// Set: a field of `node` with something in it, as clientcmd reads a field it uses only when not
// empty: a non-empty scalar, list or map (null, "", [] and {} are as absent).
bool Set(const YAML::Node& node, const char* key) {
  if (!IsMap(node)) return false;
  const YAML::Node value = node[key];
  if (!value.IsDefined() || value.IsNull()) return false;
  if (value.IsScalar()) return !value.Scalar().empty();
  return value.size() > 0;
}

absl::Status ReadList(const YAML::Node& list, const char* key, const char* item_key,
                      const std::filesystem::path& file, std::map<std::string, Entry>& out) {
  if (!list.IsDefined() || list.IsNull()) return absl::OkStatus();
  if (!list.IsSequence()) {
    return absl::InvalidArgumentError(absl::StrCat(file.string(), ": ", key, " must be a list"));
  }
  // Absolute, as clientcmd makes it: a file named relative to the working directory
  // ("--kubeconfig config") keeps its paths to the folder it is in.
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(file, error);
  const std::filesystem::path folder = (error ? file : absolute.lexically_normal()).parent_path();
  for (const YAML::Node& item : list) {
    if (!IsMap(item) || !item["name"].IsDefined() || !item["name"].IsScalar()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file.string(), ": every entry of ", key, " needs a name"));
    }
    out.emplace(item["name"].as<std::string>(), Entry{item[item_key], folder});
  }
  return absl::OkStatus();
}

// Bool: a boolean field of `node` (false when absent), read as clientcmd reads one: YAML 1.1's
// words for true and false, unquoted or tagged !!bool. Anything else, a quoted "true"
// included, is refused, as clientcmd refuses a string where a boolean goes.
absl::StatusOr<bool> Bool(const YAML::Node& node, const char* key, const std::string& owner) {
  constexpr absl::string_view kTrue[] = {"y",  "Y",  "yes",  "Yes",  "YES", "on",
                                         "On", "ON", "true", "True", "TRUE"};
  constexpr absl::string_view kFalse[] = {"n",   "N",   "no",    "No",    "NO",   "off",
                                          "Off", "OFF", "false", "False", "FALSE"};
  if (!IsMap(node)) return false;
  const YAML::Node value = node[key];
  if (!value.IsDefined() || value.IsNull()) return false;
  if (value.IsScalar() && (value.Tag() == "?" || value.Tag() == "tag:yaml.org,2002:bool")) {
    const std::string word = value.as<std::string>();
    if (absl::c_linear_search(kTrue, word)) return true;
    if (absl::c_linear_search(kFalse, word)) return false;
  }
  return absl::InvalidArgumentError(absl::StrCat(owner, ": ", key, " is not a boolean"));
}

// MaterialFile: the file `file_key` names (relative to the kubeconfig's folder), unless inline
// base64 data (`data_key`), which wins, is given; empty when there is no such file.
std::filesystem::path MaterialFile(const Entry& entry, const char* data_key, const char* file_key) {
  if (!String(entry.node, data_key).empty()) return {};
  const std::string file = String(entry.node, file_key);
  if (file.empty()) return {};
  return Resolve(entry, file);
}

// Material: inline base64 data (`data_key`), else the content of the file `file_key` names.
absl::StatusOr<std::string> Material(const Entry& entry, const char* data_key, const char* file_key,
                                     const std::string& owner) {
  if (const std::string data = String(entry.node, data_key); !data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(absl::StrCat(owner, ": ", data_key, " is not base64"));
    }
    return decoded;
  }
  const std::filesystem::path path = MaterialFile(entry, data_key, file_key);
  if (path.empty()) return std::string();
  absl::StatusOr<std::string> content = ReadWholeFile(path);
  if (!content.ok()) {
    return absl::Status(content.status().code(),
                        absl::StrCat(owner, ": cannot read ", file_key, " ", path.string(), ": ",
                                     content.status().message()));
  }
  return content;
}

// The exec credential API versions client-go accepts.
constexpr absl::string_view kExecApiVersions[] = {"client.authentication.k8s.io/v1",
                                                  "client.authentication.k8s.io/v1beta1"};
// The cluster extension whose object an exec plugin gets as spec.cluster.config.
constexpr char kExecClusterExtension[] = "client.authentication.k8s.io/exec";

// ExecClusterJson: KUBERNETES_EXEC_INFO's spec.cluster for `cluster` (client-go's
// clientauthentication Cluster, its fields in their order; empty ones left out but config,
// which is null then), with the CA's bytes as certificate-authority-data.
absl::StatusOr<std::string> ExecClusterJson(const Entry& cluster, const std::string& owner,
                                            const RestConfig& server_config) {
  nlohmann::ordered_json json;
  json["server"] = String(cluster.node, "server");
  if (const std::string name = String(cluster.node, "tls-server-name"); !name.empty()) {
    json["tls-server-name"] = name;
  }
  if (server_config.insecure_skip_tls_verify) json["insecure-skip-tls-verify"] = true;
  if (!server_config.certificate_authority_pem.empty()) {
    json["certificate-authority-data"] =
        absl::Base64Escape(server_config.certificate_authority_pem);
  }
  if (!server_config.proxy_url.empty()) json["proxy-url"] = server_config.proxy_url;
  if (server_config.disable_compression) json["disable-compression"] = true;
  json["config"] = nullptr;
  const YAML::Node extensions = IsMap(cluster.node) ? cluster.node["extensions"] : YAML::Node();
  if (extensions.IsDefined() && extensions.IsSequence()) {
    for (const YAML::Node& extension : extensions) {
      if (String(extension, "name") != kExecClusterExtension) continue;
      // An entry without its object leaves config null (yaml-cpp throws on a missing node).
      const YAML::Node given = extension["extension"];
      if (!given.IsDefined() || given.IsNull()) break;
      absl::StatusOr<nlohmann::json> object = kubeapi::YamlToJson(given);
      if (!object.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(owner, ": extension ", kExecClusterExtension,
                                                       ": ", object.status().message()));
      }
      json["config"] = *std::move(object);
      break;
    }
  }
  // Bytes that are not UTF-8 are replaced, as Go's encoder replaces them, never thrown on.
  return kubeapi::JsonText(json);
}

// Strings: the list of strings `node` holds (none when absent or null; a null item is "", as
// Go decodes JSON's null into a string); false when it is something else.
bool Strings(const YAML::Node& node, std::vector<std::string>& out) {
  if (!node.IsDefined() || node.IsNull()) return true;
  if (!node.IsSequence()) return false;
  for (const YAML::Node& item : node) {
    if (item.IsNull()) {
      out.emplace_back();
    } else if (item.IsScalar()) {
      out.push_back(item.Scalar());
    } else {
      return false;
    }
  }
  return true;
}

// ReadImpersonation: the user's `as`, `as-uid`, `as-groups` and `as-user-extra`.
absl::StatusOr<Impersonation> ReadImpersonation(const YAML::Node& user, const std::string& owner) {
  Impersonation as;
  if (!user["as"].IsScalar() ||
      (user["as-uid"].IsDefined() && !user["as-uid"].IsNull() && !user["as-uid"].IsScalar())) {
    return absl::InvalidArgumentError(absl::StrCat(owner, ": as and as-uid must be strings"));
  }
  as.user = user["as"].Scalar();
  as.uid = String(user, "as-uid");
  if (!Strings(user["as-groups"], as.groups)) {
    return absl::InvalidArgumentError(absl::StrCat(owner, ": as-groups must be a list of strings"));
  }
  const YAML::Node extra = user["as-user-extra"];
  if (extra.IsDefined() && !extra.IsNull()) {
    bool strings = extra.IsMap();
    for (auto entry = extra.begin(); strings && entry != extra.end(); ++entry) {
      strings = entry->first.IsScalar() && Strings(entry->second, as.extra[entry->first.Scalar()]);
    }
    if (!strings) {
      return absl::InvalidArgumentError(
          absl::StrCat(owner, ": as-user-extra must map names to lists of strings"));
    }
  }
  return as;
}

// ReadExec: the user's exec plugin, checked as clientcmd checks one (its texts), with
// clientcmd's defaults: interactiveMode IfAvailable for v1beta1, which v1 must name. With
// provideClusterInfo, `cluster` (read into `server_config`) as the plugin gets it.
absl::StatusOr<ExecCredentialConfig> ReadExec(const Entry& user, const std::string& user_name,
                                              const Entry& cluster,
                                              const std::string& cluster_owner,
                                              const RestConfig& server_config) {
  const YAML::Node exec = user.node["exec"];
  const std::string owner = absl::StrCat("user \"", user_name, "\"");
  if (!exec.IsMap()) return absl::InvalidArgumentError(absl::StrCat(owner, ": exec is not a map"));
  ExecCredentialConfig config;
  config.command = String(exec, "command");
  if (config.command.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("command must be specified for ", user_name,
                                                   " to use exec authentication plugin"));
  }
  if (absl::StrContains(config.command, '/'))
    config.command = Resolve(user, config.command).string();
  config.api_version = String(exec, "apiVersion");
  if (config.api_version.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("apiVersion must be specified for ", user_name,
                                                   " to use exec authentication plugin"));
  }
  if (!absl::c_linear_search(kExecApiVersions, config.api_version)) {
    return absl::InvalidArgumentError(
        absl::StrCat("exec plugin: invalid apiVersion ", GoQuote(config.api_version)));
  }
  if (const YAML::Node args = exec["args"]; !Strings(args, config.args)) {
    return absl::InvalidArgumentError(absl::StrCat(
        owner, args.IsSequence() ? ": exec args must be strings" : ": exec args must be a list"));
  }
  if (const YAML::Node env = exec["env"]; env.IsDefined() && !env.IsNull()) {
    if (!env.IsSequence()) {
      return absl::InvalidArgumentError(absl::StrCat(owner, ": exec env must be a list"));
    }
    for (const YAML::Node& variable : env) {
      const std::string name = String(variable, "name");
      if (name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("env variable name must be specified for ",
                                                       user_name,
                                                       " to use exec authentication plugin"));
      }
      config.env.emplace_back(name, String(variable, "value"));
    }
  }
  config.install_hint = String(exec, "installHint");
  config.interactive_mode = String(exec, "interactiveMode");
  if (config.interactive_mode.empty() &&
      config.api_version == "client.authentication.k8s.io/v1beta1") {
    config.interactive_mode = "IfAvailable";
  }
  if (config.interactive_mode.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "interactiveMode must be specified for ", user_name, " to use exec authentication plugin"));
  }
  if (config.interactive_mode != "Never" && config.interactive_mode != "IfAvailable" &&
      config.interactive_mode != "Always") {
    return absl::InvalidArgumentError(absl::StrCat("invalid interactiveMode for ", user_name, ": ",
                                                   GoQuote(config.interactive_mode)));
  }
  absl::StatusOr<bool> provide_cluster_info = Bool(exec, "provideClusterInfo", owner);
  if (!provide_cluster_info.ok()) return provide_cluster_info.status();
  if (*provide_cluster_info) {
    absl::StatusOr<std::string> cluster_json =
        ExecClusterJson(cluster, cluster_owner, server_config);
    if (!cluster_json.ok()) return cluster_json.status();
    config.cluster_json = *std::move(cluster_json);
  }
  return config;
}

}  // namespace

std::vector<std::filesystem::path> KubeconfigFiles(const std::string& kubeconfig_env) {
  std::vector<std::filesystem::path> files;
  for (absl::string_view file : absl::StrSplit(kubeconfig_env, ':', absl::SkipEmpty())) {
    files.emplace_back(std::string(file));
  }
  return files;
}

absl::StatusOr<RestConfig> LoadKubeconfig(const std::vector<std::filesystem::path>& files,
                                          const std::string& context) {
  if (files.empty()) return absl::InvalidArgumentError("no kubeconfig file was given");
  Merged merged;
  size_t missing = 0;
  for (const std::filesystem::path& file : files) {
    absl::StatusOr<std::string> text = ReadWholeFile(file);
    // As clientcmd: a file of the list that does not exist is skipped, unless all are missing.
    if (absl::IsNotFound(text.status()) && ++missing < files.size()) continue;
    if (!text.ok()) {
      return absl::Status(
          text.status().code(),
          absl::StrCat("cannot read kubeconfig ", file.string(), ": ", text.status().message()));
    }
    YAML::Node root;
    try {
      root = YAML::Load(*text);
    } catch (const YAML::Exception& error) {
      return absl::InvalidArgumentError(
          absl::StrCat(file.string(), ": not a kubeconfig: ", kubeapi::YamlErrorText(error)));
    }
    if (root.IsNull()) continue;  // an empty file, as kubectl allows
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(file.string(), ": not a kubeconfig"));
    }
    if (merged.current_context.empty()) merged.current_context = String(root, "current-context");
    for (auto [key, item, target] : {std::tuple{"clusters", "cluster", &merged.clusters},
                                     std::tuple{"users", "user", &merged.users},
                                     std::tuple{"contexts", "context", &merged.contexts}}) {
      if (absl::Status read = ReadList(root[key], key, item, file, *target); !read.ok()) {
        return read;
      }
    }
  }

  const std::string name = context.empty() ? merged.current_context : context;
  if (name.empty()) {
    return absl::FailedPreconditionError(
        "the kubeconfig sets no current-context (name one with --context)");
  }
  auto found_context = merged.contexts.find(name);
  if (found_context == merged.contexts.end()) {
    return absl::NotFoundError(absl::StrCat("context \"", name, "\" is not in the kubeconfig"));
  }
  const Entry& ctx = found_context->second;
  RestConfig config;
  if (const std::string ns = String(ctx.node, "namespace"); !ns.empty()) config.namespace_name = ns;

  const std::string cluster_name = String(ctx.node, "cluster");
  auto cluster = merged.clusters.find(cluster_name);
  if (cluster == merged.clusters.end()) {
    return absl::NotFoundError(absl::StrCat("context \"", name, "\" names cluster \"", cluster_name,
                                            "\", which is not in the kubeconfig"));
  }
  const std::string cluster_owner = absl::StrCat("cluster \"", cluster_name, "\"");
  const std::string server = String(cluster->second.node, "server");
  if (server.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(cluster_owner, " has no server"));
  }
  // clientcmd chooses TLS from the server alone, before it reads any TLS setting: a server
  // named without a scheme is reached over plain http, and so without credentials (see
  // HttpTransport::Create).
  absl::StatusOr<std::string> url = ServerUrl(server, /*default_tls=*/false);
  if (!url.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(cluster_owner, ": ", url.status().message()));
  }
  config.server = *std::move(url);
  absl::StatusOr<std::string> ca = Material(cluster->second, "certificate-authority-data",
                                            "certificate-authority", cluster_owner);
  if (!ca.ok()) return ca.status();
  config.certificate_authority_pem = *std::move(ca);
  config.certificate_authority_file =
      MaterialFile(cluster->second, "certificate-authority-data", "certificate-authority");
  config.proxy_url = String(cluster->second.node, "proxy-url");
  if (!config.proxy_url.empty()) {
    if (absl::Status proxy = CheckProxyUrl(config.proxy_url); !proxy.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("invalid 'proxy-url' ",
                                                     GoQuote(config.proxy_url), " for cluster ",
                                                     GoQuote(cluster_name), ": ", proxy.message()));
    }
  }
  config.tls_server_name = String(cluster->second.node, "tls-server-name");
  absl::StatusOr<bool> insecure =
      Bool(cluster->second.node, "insecure-skip-tls-verify", cluster_owner);
  if (!insecure.ok()) return insecure.status();
  // A CA named is refused beside the flag even when its file is empty, as clientcmd's check
  // looks at the fields, not at what they hold.
  const bool names_ca = !String(cluster->second.node, "certificate-authority-data").empty() ||
                        !String(cluster->second.node, "certificate-authority").empty();
  if (*insecure && names_ca) {
    return absl::InvalidArgumentError(absl::StrCat(cluster_owner, ": ", kInsecureWithCaMessage));
  }
  config.insecure_skip_tls_verify = *insecure;
  absl::StatusOr<bool> no_compression =
      Bool(cluster->second.node, "disable-compression", cluster_owner);
  if (!no_compression.ok()) return no_compression.status();
  config.disable_compression = *no_compression;

  const std::string user_name = String(ctx.node, "user");
  if (user_name.empty()) return config;  // anonymous
  auto user = merged.users.find(user_name);
  if (user == merged.users.end()) {
    return absl::NotFoundError(absl::StrCat("context \"", name, "\" names user \"", user_name,
                                            "\", which is not in the kubeconfig"));
  }
  const std::string user_owner = absl::StrCat("user \"", user_name, "\"");
  const YAML::Node& credentials = user->second.node;
  // Present, even empty, as clientcmd reads a field that decodes to a pointer.
  const auto present = [&credentials](const char* key) {
    return IsMap(credentials) && credentials[key].IsDefined() && !credentials[key].IsNull();
  };
  if (present("auth-provider")) {
    return absl::UnimplementedError(absl::StrCat(
        user_owner,
        " gets its credentials from an auth-provider, which client-go no longer has (its gcp "
        "and azure providers became exec plugins): use the provider's exec plugin, a token, a "
        "token file or a client certificate"));
  }
  std::optional<ExecCredentialConfig> exec;
  if (present("exec")) {
    absl::StatusOr<ExecCredentialConfig> read =
        ReadExec(user->second, user_name, cluster->second, cluster_owner, config);
    if (!read.ok()) return read.status();
    exec = *std::move(read);
  }
  // Acting as another user: clientcmd reads the other fields only with `as`.
  if (Set(credentials, "as")) {
    absl::StatusOr<Impersonation> as = ReadImpersonation(credentials, user_owner);
    if (!as.ok()) return as.status();
    config.impersonate = *std::move(as);
  }
  if (!String(credentials, "username").empty()) {
    return absl::UnimplementedError(absl::StrCat(
        user_owner, " uses a username and password, which Kubernetes no longer accepts"));
  }
  absl::StatusOr<std::string> cert =
      Material(user->second, "client-certificate-data", "client-certificate", user_owner);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key =
      Material(user->second, "client-key-data", "client-key", user_owner);
  if (!key.ok()) return key.status();
  if (cert->empty() != key->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(user_owner,
                     " has a client certificate without its key, or a key without "
                     "its certificate"));
  }
  config.client_certificate_pem = *std::move(cert);
  config.client_key_pem = *std::move(key);
  // As client-go: only a pair read from files both is read again.
  const std::filesystem::path cert_file =
      MaterialFile(user->second, "client-certificate-data", "client-certificate");
  const std::filesystem::path key_file =
      MaterialFile(user->second, "client-key-data", "client-key");
  if (!cert_file.empty() && !key_file.empty()) {
    config.client_certificate_file = cert_file;
    config.client_key_file = key_file;
  }
  config.bearer_token = String(credentials, "token");
  if (const std::string file = String(credentials, "tokenFile"); !file.empty()) {
    config.bearer_token_file = Resolve(user->second, file);
    // As clientcmd: without a token beside it, the file is read now, and one that cannot be
    // read fails the load rather than every request after it; only for a server reached over
    // TLS, the only kind credentials go to.
    if (config.bearer_token.empty() && absl::StartsWith(config.server, "https://")) {
      absl::StatusOr<std::string> token = ReadWholeFile(config.bearer_token_file);
      if (!token.ok()) {
        return absl::Status(
            token.status().code(),
            absl::StrCat(user_owner, ": cannot read tokenFile ", config.bearer_token_file.string(),
                         ": ", token.status().message()));
      }
      config.bearer_token = std::string(absl::StripAsciiWhitespace(*token));
    }
  }
  // As client-go: the plugin is used only by a user without a token or a client certificate.
  if (exec.has_value() && config.bearer_token.empty() && config.bearer_token_file.empty() &&
      config.client_certificate_pem.empty()) {
    config.exec = std::move(exec);
  }
  return config;
}

absl::Status CheckProxyUrl(const std::string& proxy_url) {
  absl::StatusOr<GoURL> url = GoURL::Parse(proxy_url);
  if (!url.ok()) return absl::InvalidArgumentError(absl::StrCat("could not parse: ", proxy_url));
  if (url->scheme != "http" && url->scheme != "https" && url->scheme != "socks5") {
    return absl::InvalidArgumentError(absl::StrCat("unsupported scheme ", GoQuote(url->scheme),
                                                   ", must be http, https, or socks5"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ServerUrl(const std::string& server, bool default_tls) {
  constexpr char kNotAUrl[] = "host must be a URL or a host:port pair";
  if (server.empty()) return absl::InvalidArgumentError(kNotAUrl);
  absl::StatusOr<GoURL> url = GoURL::Parse(server);
  if (!url.ok() || url->scheme.empty() || url->host.empty()) {
    // Without a scheme and a host, the whole of `server` is the host and port.
    url = GoURL::Parse(absl::StrCat(default_tls ? "https://" : "http://", server));
    if (!url.ok()) return url.status();
    if (!url->path.empty() && url->path != "/") {
      return absl::InvalidArgumentError(absl::StrCat(kNotAUrl, ": ", GoQuote(server)));
    }
  }
  url->force_query = false;
  url->raw_query.clear();
  url->fragment.clear();
  url->raw_fragment.clear();
  return url->String();
}

absl::StatusOr<RestConfig> InClusterConfig(const std::map<std::string, std::string>& env,
                                           const std::filesystem::path& service_account_dir) {
  auto host = env.find("KUBERNETES_SERVICE_HOST");
  auto port = env.find("KUBERNETES_SERVICE_PORT");
  if (host == env.end() || host->second.empty() || port == env.end() || port->second.empty()) {
    return absl::FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not "
        "set");
  }
  RestConfig config;
  // An IPv6 address needs brackets in a URL.
  const bool ipv6 = host->second.find(':') != std::string::npos;
  config.server =
      absl::StrCat("https://", ipv6 ? "[" : "", host->second, ipv6 ? "]" : "", ":", port->second);
  config.bearer_token_file = service_account_dir / "token";
  // The error_code form: a folder it may not search (EACCES) is an answer, not an exception.
  std::error_code error;
  if (!std::filesystem::exists(config.bearer_token_file, error)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "not running in a cluster: no service account token at ", config.bearer_token_file.string(),
        error ? absl::StrCat(" (", error.message(), ")") : ""));
  }
  absl::StatusOr<std::string> ca = ReadWholeFile(service_account_dir / "ca.crt");
  if (!ca.ok()) {
    return absl::Status(ca.status().code(), absl::StrCat("cannot read the service account's CA: ",
                                                         ca.status().message()));
  }
  config.certificate_authority_pem = *std::move(ca);
  config.certificate_authority_file = service_account_dir / "ca.crt";
  // POD_NAMESPACE (the downward API) wins over the service account's file, as in clientcmd.
  if (auto pod_namespace = env.find("POD_NAMESPACE");
      pod_namespace != env.end() && !pod_namespace->second.empty()) {
    config.namespace_name = pod_namespace->second;
  } else if (absl::StatusOr<std::string> ns = ReadWholeFile(service_account_dir / "namespace");
             ns.ok() && !absl::StripAsciiWhitespace(*ns).empty()) {
    config.namespace_name = std::string(absl::StripAsciiWhitespace(*ns));
  }
  return config;
}

}  // namespace devmgr::kubeclient
