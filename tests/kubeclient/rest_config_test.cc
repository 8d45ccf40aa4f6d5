// Reading where the API server is and how to authenticate: a kubeconfig's current context with
// inline and file credentials (relative paths from the file's folder), KUBECONFIG lists merged
// first-wins, an explicit context, the errors a user meets (a missing file, an unknown context,
// an auth provider), exec plugins as clientcmd reads them, and the in-cluster service account.
#include "kubeclient/rest_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::kubeclient {
namespace {

using ::devmgr::testing::TempDir;

void Write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

constexpr char kCa[] = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";

std::string Kubeconfig(const std::string& extra_user = "") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: edge\n"
         "clusters:\n"
         "- name: lab\n  cluster:\n    server: https://10.0.0.1:6443\n"
         "    certificate-authority-data: " +
         absl::Base64Escape(kCa) +
         "\n"
         "- name: files\n  cluster:\n    server: https://files:6443\n"
         "    certificate-authority: certs/ca.crt\n    tls-server-name: api.internal\n"
         "contexts:\n"
         "- name: edge\n  context: {cluster: lab, user: token-user, namespace: dra}\n"
         "- name: certs\n  context: {cluster: files, user: cert-user}\n"
         "- name: anonymous\n  context: {cluster: lab}\n"
         "users:\n"
         "- name: token-user\n  user: {token: abc123}\n"
         "- name: cert-user\n  user: {client-certificate: certs/client.crt, client-key: "
         "certs/client.key, tokenFile: token}\n" +
         extra_user;
}

TEST(RestConfigTest, TheCurrentContextWithAnInlineCaAndAToken) {
  TempDir dir;
  Write(dir.Sub("config"), Kubeconfig());
  absl::StatusOr<RestConfig> config = LoadKubeconfig({dir.Sub("config")});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:6443");
  EXPECT_EQ(config->certificate_authority_pem, kCa);
  EXPECT_TRUE(config->certificate_authority_file.empty()) << "inline: nothing to read again";
  EXPECT_EQ(config->bearer_token, "abc123");
  EXPECT_EQ(config->namespace_name, "dra");
  EXPECT_FALSE(config->insecure_skip_tls_verify);
}

// The server as client-go's rest.DefaultServerURL completes it: without a scheme, https:// only
// when TLS is configured, and no path then; a query or fragment never reaches a request.
TEST(RestConfigTest, AServerWithoutASchemeIsCompletedAsClientGoDoes) {
  struct Case {
    const char* server;
    bool default_tls;
    const char* url;  // nullptr: refused
  };
  for (const Case& c : std::vector<Case>{
           {"10.0.0.1:6443", false, "http://10.0.0.1:6443"},
           {"10.0.0.1:6443", true, "https://10.0.0.1:6443"},
           {"api.example.com:6443", true, "https://api.example.com:6443"},
           {"localhost", false, "http://localhost"},
           {"[fd00::1]:6443", true, "https://[fd00::1]:6443"},
           {"10.0.0.1:6443/", true, "https://10.0.0.1:6443/"},
           {"HTTPS://Api:6443", false, "https://Api:6443"},
           {"http://10.0.0.1:8001", true, "http://10.0.0.1:8001"},
           {"https://h:6443/k8s/clusters/c-1?x=1#top", false, "https://h:6443/k8s/clusters/c-1"},
           {"https://user@h:6443", false, "https://user@h:6443"},
           {"10.0.0.1:6443/k8s", true, nullptr},
           {"", true, nullptr},
       }) {
    absl::StatusOr<std::string> url = ServerUrl(c.server, c.default_tls);
    if (c.url == nullptr) {
      EXPECT_FALSE(url.ok()) << c.server;
      EXPECT_TRUE(
          absl::StartsWith(url.status().message(), "host must be a URL or a host:port pair"))
          << url.status();
    } else {
      EXPECT_EQ(url.value_or("refused"), c.url) << c.server << " " << url.status();
    }
  }
  EXPECT_EQ(ServerUrl("10.0.0.1:6443/k8s", true).status().message(),
            "host must be a URL or a host:port pair: \"10.0.0.1:6443/k8s\"");
  // A URL Go's url.Parse refuses is read as a host and port, which it may refuse in turn, with
  // its text.
  EXPECT_EQ(ServerUrl("https://h:6443:1", true).status().message(),
            "host must be a URL or a host:port pair: \"https://h:6443:1\"");
  EXPECT_EQ(ServerUrl("10.0.0.1 :6443", false).status().message(),
            "parse \"http://10.0.0.1 :6443\": invalid character \" \" in host name");

  // clientcmd chooses TLS from the server alone, before the cluster's CA is read: a kubeconfig's
  // server without a scheme is plain http (kubectl's way to a `kubectl proxy`).
  TempDir dir;
  std::string kubeconfig = Kubeconfig();
  absl::StrReplaceAll({{"server: https://10.0.0.1:6443", "server: 127.0.0.1:8001"}}, &kubeconfig);
  Write(dir.Sub("config"), kubeconfig);
  absl::StatusOr<RestConfig> config = LoadKubeconfig({dir.Sub("config")});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "http://127.0.0.1:8001");
  absl::StrReplaceAll({{"server: 127.0.0.1:8001", "server: 127.0.0.1:8001/api"}}, &kubeconfig);
  Write(dir.Sub("config"), kubeconfig);
  EXPECT_EQ(LoadKubeconfig({dir.Sub("config")}).status().message(),
            "cluster \"lab\": host must be a URL or a host:port pair: \"127.0.0.1:8001/api\"");
}

// A kubeconfig named relative to the working directory ("--kubeconfig config") keeps its paths
// to its own folder, made absolute at load as clientcmd makes them: a later change of
// directory does not move the CA read again, or the exec plugin.
TEST(RestConfigTest, AKubeconfigNamedFromTheWorkingDirectoryKeepsItsPathsAbsolute) {
  TempDir dir;
  Write(dir.Sub("kube/config"),
        "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://k:6443\n"
        "    certificate-authority: certs/../ca.crt\n"
        "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
        "users:\n- name: u\n  user:\n    exec:\n"
        "      apiVersion: client.authentication.k8s.io/v1\n      command: ./get-token\n"
        "      interactiveMode: Never\n");
  Write(dir.Sub("kube/ca.crt"), kCa);
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  const absl::Cleanup back = [&before] { std::filesystem::current_path(before); };
  absl::StatusOr<RestConfig> config = LoadKubeconfig({"kube/config"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->certificate_authority_file, dir.Sub("kube/ca.crt"));
  ASSERT_TRUE(config->exec.has_value());
  EXPECT_EQ(config->exec->command, dir.Sub("kube/get-token").string());
}

// An exec extension entry without its object leaves the plugin's cluster config null (it
// ended the process: yaml-cpp threw on the missing node; found by the kubeconfig fuzzer).
TEST(RestConfigTest, AnExecExtensionWithoutItsObjectLeavesConfigNull) {
  TempDir dir;
  Write(dir.Sub("config"),
        "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://k:6443\n"
        "    extensions:\n    - name: client.authentication.k8s.io/exec\n      other: {a: b}\n"
        "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
        "users:\n- name: u\n  user:\n    exec:\n"
        "      apiVersion: client.authentication.k8s.io/v1\n      command: get-token\n"
        "      interactiveMode: Never\n      provideClusterInfo: true\n");
  absl::StatusOr<RestConfig> config = LoadKubeconfig({dir.Sub("config")});
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->exec.has_value());
  EXPECT_TRUE(absl::StrContains(config->exec->cluster_json, R"("config":null)"))
      << config->exec->cluster_json;
}

TEST(RestConfigTest, FilesAreReadFromTheKubeconfigsFolder) {
  TempDir dir;
  Write(dir.Sub("kube/config"), Kubeconfig());
  Write(dir.Sub("kube/certs/ca.crt"), kCa);
  Write(dir.Sub("kube/certs/client.crt"), "CERT");
  Write(dir.Sub("kube/certs/client.key"), "KEY");
  // Without a token file that can be read the kubeconfig is refused, as clientcmd refuses it.
  absl::StatusOr<RestConfig> config = LoadKubeconfig({dir.Sub("kube/config")}, "certs");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound) << config.status();
  EXPECT_TRUE(absl::StrContains(
      config.status().message(),
      absl::StrCat("cannot read tokenFile ", dir.Sub("kube/token").string(), ": ")))
      << config.status();
  // A server reached over plain http gets no credentials, so its token file is not read.
  std::string plain = Kubeconfig();
  absl::StrReplaceAll({{"server: https://files:6443", "server: http://files:8001"}}, &plain);
  Write(dir.Sub("kube/plain"), plain);
  EXPECT_TRUE(LoadKubeconfig({dir.Sub("kube/plain")}, "certs").ok());
  Write(dir.Sub("kube/token"), "tok\n");
  config = LoadKubeconfig({dir.Sub("kube/config")}, "certs");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->bearer_token, "tok");
  EXPECT_EQ(config->server, "https://files:6443");
  EXPECT_EQ(config->certificate_authority_pem, kCa);
  // A CA named as a file is read again as it rotates.
  EXPECT_EQ(config->certificate_authority_file, dir.Sub("kube/certs/ca.crt"));
  EXPECT_EQ(config->client_certificate_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY");
  // Named as files both, they are read again as they rotate.
  EXPECT_EQ(config->client_certificate_file, dir.Sub("kube/certs/client.crt"));
  EXPECT_EQ(config->client_key_file, dir.Sub("kube/certs/client.key"));
  EXPECT_EQ(config->bearer_token_file, dir.Sub("kube/token"));
  EXPECT_EQ(config->tls_server_name, "api.internal");
  EXPECT_EQ(config->namespace_name, "default");

  absl::StatusOr<RestConfig> anonymous = LoadKubeconfig({dir.Sub("kube/config")}, "anonymous");
  ASSERT_TRUE(anonymous.ok()) << anonymous.status();
  EXPECT_TRUE(anonymous->bearer_token.empty());
  EXPECT_TRUE(anonymous->client_certificate_pem.empty());
}

// A certificate or key given inline cannot change: the pair is not read again, as client-go
// reloads only a pair it read from files both.
TEST(RestConfigTest, AClientCertificatePairIsReadAgainOnlyWhenBothAreFiles) {
  TempDir dir;
  Write(dir.Sub("kube/config"),
        "clusters:\n- name: lab\n  cluster: {server: https://10.0.0.1:6443}\n"
        "contexts:\n- name: mixed\n  context: {cluster: lab, user: mixed}\n"
        "users:\n- name: mixed\n  user: {client-certificate: client.crt, client-key-data: " +
            absl::Base64Escape("KEY") + "}\n");
  Write(dir.Sub("kube/client.crt"), "CERT");
  absl::StatusOr<RestConfig> config = LoadKubeconfig({dir.Sub("kube/config")}, "mixed");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->client_certificate_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY");
  EXPECT_TRUE(config->client_certificate_file.empty());
  EXPECT_TRUE(config->client_key_file.empty());
}

// KUBECONFIG=a:b: the first file that sets a value wins, as clientcmd merges them.
TEST(RestConfigTest, AKubeconfigListIsMergedFirstWins) {
  TempDir dir;
  Write(dir.Sub("a"),
        "current-context: mine\ncontexts:\n- name: mine\n  context: {cluster: lab, user: me}\n"
        "users:\n- name: me\n  user: {token: first}\n");
  Write(dir.Sub("b"), Kubeconfig("- name: me\n  user: {token: second}\n"));
  const std::vector<std::filesystem::path> files =
      KubeconfigFiles(dir.Sub("a").string() + "::" + dir.Sub("b").string());
  ASSERT_EQ(files.size(), 2u);
  absl::StatusOr<RestConfig> config = LoadKubeconfig(files);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.0.0.1:6443") << "the cluster comes from the second file";
  EXPECT_EQ(config->bearer_token, "first");

  // Files of the list that do not exist are skipped, as clientcmd does; all missing is an error.
  absl::StatusOr<RestConfig> with_missing = LoadKubeconfig(KubeconfigFiles(
      dir.Sub("gone").string() + ":" + dir.Sub("a").string() + ":" + dir.Sub("b").string()));
  ASSERT_TRUE(with_missing.ok()) << with_missing.status();
  EXPECT_EQ(*with_missing, *config);
  absl::StatusOr<RestConfig> all_missing = LoadKubeconfig({dir.Sub("gone"), dir.Sub("also-gone")});
  EXPECT_EQ(all_missing.status().code(), absl::StatusCode::kNotFound) << all_missing.status();
}

TEST(RestConfigTest, MistakesGetClearErrors) {
  TempDir dir;
  Write(dir.Sub("config"), Kubeconfig());
  Write(dir.Sub("garbage"), "[not, a, kubeconfig");
  struct Case {
    std::vector<std::filesystem::path> files;
    std::string context;
    absl::StatusCode code;
    std::string message;  // a substring
  };
  for (const Case& test : std::vector<Case>{
           {{dir.Sub("missing")},
            "",
            absl::StatusCode::kNotFound,
            "cannot read kubeconfig " + dir.Sub("missing").string()},
           {{dir.Sub("config")},
            "nope",
            absl::StatusCode::kNotFound,
            "context \"nope\" is not in the kubeconfig"},
           {{dir.Sub("garbage")}, "", absl::StatusCode::kInvalidArgument, "not a kubeconfig"},
           {{}, "", absl::StatusCode::kInvalidArgument, "no kubeconfig file was given"},
       }) {
    absl::StatusOr<RestConfig> config = LoadKubeconfig(test.files, test.context);
    EXPECT_EQ(config.status().code(), test.code) << config.status();
    EXPECT_TRUE(absl::StrContains(config.status().message(), test.message)) << config.status();
  }
}

TEST(RestConfigTest, AnAuthProviderAndHalfACertificatePairAreRefused) {
  TempDir dir;
  Write(dir.Sub("config"),
        "current-context: c\nclusters:\n- name: lab\n  cluster: {server: https://lab}\n"
        "contexts:\n- name: c\n  context: {cluster: lab, user: u}\n"
        "- name: half\n  context: {cluster: lab, user: half}\n"
        "- name: lost\n  context: {cluster: nowhere}\n"
        "users:\n- name: u\n  user:\n    auth-provider: {name: oidc}\n"
        "- name: half\n  user: {client-key-data: " +
            absl::Base64Escape("KEY") + "}\n");
  absl::StatusOr<RestConfig> provider = LoadKubeconfig({dir.Sub("config")});
  EXPECT_EQ(provider.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(provider.status().message(),
                                "user \"u\" gets its credentials from an auth-provider"))
      << provider.status();
  absl::StatusOr<RestConfig> half = LoadKubeconfig({dir.Sub("config")}, "half");
  EXPECT_EQ(half.status().code(), absl::StatusCode::kInvalidArgument) << half.status();
  absl::StatusOr<RestConfig> lost = LoadKubeconfig({dir.Sub("config")}, "lost");
  EXPECT_EQ(lost.status().message(),
            "context \"lost\" names cluster \"nowhere\", which is not in the kubeconfig");
}

// An exec plugin as clientcmd reads it: a command with a slash taken from the kubeconfig's
// folder (one without, from PATH when it runs), its arguments and environment, v1beta1's
// default interactiveMode, and with provideClusterInfo the cluster as KUBERNETES_EXEC_INFO
// gives it (client-go's field names and order; the CA's bytes, the exec extension's object).
TEST(RestConfigTest, AnExecPluginIsReadAsClientcmdReadsIt) {
  TempDir dir;
  const std::string clusters =
      "clusters:\n"
      "- name: lab\n  cluster:\n    server: https://lab:6443\n"
      "    certificate-authority-data: " +
      absl::Base64Escape(kCa) +
      "\n    tls-server-name: api.lab\n"
      "    extensions:\n"
      "    - name: other\n      extension: {x: 1}\n"
      "    - name: client.authentication.k8s.io/exec\n"
      "      extension: {audience: lab, 'retries': 3}\n"
      "- name: open\n  cluster: {server: 'https://open', insecure-skip-tls-verify: true, "
      "proxy-url: 'http://proxy:3128', disable-compression: true}\n";
  Write(dir.Sub("kube/config"),
        "current-context: v1\n" + clusters +
            "contexts:\n"
            "- name: v1\n  context: {cluster: lab, user: v1}\n"
            "- name: beta\n  context: {cluster: open, user: beta}\n"
            "- name: token\n  context: {cluster: lab, user: token}\n"
            "- name: cert\n  context: {cluster: lab, user: cert}\n"
            "users:\n"
            "- name: v1\n  user:\n    exec:\n"
            "      apiVersion: client.authentication.k8s.io/v1\n"
            "      command: ./bin/get-token\n      args: [token, --cluster, lab, ~]\n"
            "      env: [{name: REGION, value: eu-1}, {name: EMPTY}]\n"
            "      installHint: install get-token\n      interactiveMode: Never\n"
            "      provideClusterInfo: true\n"
            "- name: beta\n  user:\n    exec:\n"
            "      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\n"
            "      provideClusterInfo: true\n"
            "- name: token\n  user:\n    token: static\n    exec: {apiVersion: "
            "client.authentication.k8s.io/v1, command: aws, interactiveMode: Never}\n"
            "- name: cert\n  user:\n    client-certificate-data: " +
            absl::Base64Escape("CERT") + "\n    client-key-data: " + absl::Base64Escape("KEY") +
            "\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws, "
            "interactiveMode: Never}\n");
  absl::StatusOr<RestConfig> v1 = LoadKubeconfig({dir.Sub("kube/config")});
  ASSERT_TRUE(v1.ok()) << v1.status();
  ASSERT_TRUE(v1->exec.has_value());
  EXPECT_EQ(v1->exec->command, (dir.path() / "kube/bin/get-token").string());
  // A null item is "", as Go decodes JSON's null into a string.
  EXPECT_EQ(v1->exec->args, (std::vector<std::string>{"token", "--cluster", "lab", ""}));
  EXPECT_EQ(v1->exec->env,
            (std::vector<std::pair<std::string, std::string>>{{"REGION", "eu-1"}, {"EMPTY", ""}}));
  EXPECT_EQ(v1->exec->api_version, "client.authentication.k8s.io/v1");
  EXPECT_EQ(v1->exec->install_hint, "install get-token");
  EXPECT_EQ(v1->exec->interactive_mode, "Never");
  EXPECT_EQ(v1->exec->cluster_json, R"({"server":"https://lab:6443","tls-server-name":"api.lab",)"
                                    R"("certificate-authority-data":")" +
                                        absl::Base64Escape(kCa) +
                                        R"(","config":{"audience":"lab","retries":3}})");
  EXPECT_TRUE(v1->bearer_token.empty());

  absl::StatusOr<RestConfig> beta = LoadKubeconfig({dir.Sub("kube/config")}, "beta");
  ASSERT_TRUE(beta.ok()) << beta.status();
  ASSERT_TRUE(beta->exec.has_value());
  EXPECT_EQ(beta->exec->command, "aws");
  EXPECT_EQ(beta->exec->interactive_mode, "IfAvailable");
  EXPECT_EQ(beta->exec->cluster_json,
            R"({"server":"https://open","insecure-skip-tls-verify":true,)"
            R"("proxy-url":"http://proxy:3128","disable-compression":true,"config":null})");

  // As client-go: a user with a token or a client certificate does not run its plugin.
  for (const char* context : {"token", "cert"}) {
    absl::StatusOr<RestConfig> config = LoadKubeconfig({dir.Sub("kube/config")}, context);
    ASSERT_TRUE(config.ok()) << context << ": " << config.status();
    EXPECT_FALSE(config->exec.has_value()) << context;
  }
}

// A server name that is not UTF-8 reaches the plugin's cluster info replaced, as Go's encoder
// replaces it; before, rendering it threw and ended the process.
TEST(RestConfigTest, ClusterInfoOfBytesThatAreNotUtf8IsNoCrash) {
  TempDir dir;
  Write(dir.Sub("config"),
        "current-context: c\nclusters:\n- name: lab\n  cluster: {server: \"https://l\xff"
        "ab\"}\n"
        "contexts:\n- name: c\n  context: {cluster: lab, user: u}\n"
        "users:\n- name: u\n  user:\n    exec: {command: aws, apiVersion: "
        "client.authentication.k8s.io/v1, interactiveMode: Never, provideClusterInfo: true}\n");
  absl::StatusOr<RestConfig> config = LoadKubeconfig({dir.Sub("config")});
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->exec.has_value());
  EXPECT_TRUE(absl::StrContains(config->exec->cluster_json,
                                "https://l\xef\xbf\xbd"
                                "ab"))
      << config->exec->cluster_json;
}

// A plugin clientcmd would refuse is refused at load, in its words.
TEST(RestConfigTest, AnExecPluginClientcmdRefusesIsRefused) {
  struct Case {
    const char* exec;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"{apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}",
            "command must be specified for u to use exec authentication plugin"},
           {"{}", "command must be specified for u to use exec authentication plugin"},
           {"{command: aws, interactiveMode: Never}",
            "apiVersion must be specified for u to use exec authentication plugin"},
           {"{command: aws, apiVersion: client.authentication.k8s.io/v1alpha1}",
            "exec plugin: invalid apiVersion \"client.authentication.k8s.io/v1alpha1\""},
           {"{command: aws, apiVersion: client.authentication.k8s.io/v1}",
            "interactiveMode must be specified for u to use exec authentication plugin"},
           {"{command: aws, apiVersion: client.authentication.k8s.io/v1, interactiveMode: "
            "Sometimes}",
            "invalid interactiveMode for u: \"Sometimes\""},
           {"{command: aws, apiVersion: client.authentication.k8s.io/v1, interactiveMode: "
            "Never, env: [{value: x}]}",
            "env variable name must be specified for u to use exec authentication plugin"},
           {"{command: aws, apiVersion: client.authentication.k8s.io/v1, interactiveMode: "
            "Never, args: token}",
            "user \"u\": exec args must be a list"},
           {"{command: aws, apiVersion: client.authentication.k8s.io/v1, interactiveMode: "
            "Never, args: [token, [lab]]}",
            "user \"u\": exec args must be strings"},
           {"{command: aws, apiVersion: client.authentication.k8s.io/v1, interactiveMode: "
            "Never, provideClusterInfo: 'yes'}",
            "user \"u\": provideClusterInfo is not a boolean"},
       }) {
    TempDir dir;
    Write(dir.Sub("config"),
          absl::StrCat("current-context: c\nclusters:\n- name: lab\n  cluster: {server: "
                       "https://lab}\ncontexts:\n- name: c\n  context: {cluster: lab, user: u}\n"
                       "users:\n- name: u\n  user:\n    exec: ",
                       c.exec, "\n"));
    absl::StatusOr<RestConfig> config = LoadKubeconfig({dir.Sub("config")});
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << c.exec;
    EXPECT_EQ(config.status().message(), c.message) << c.exec;
  }
}

// Impersonation is read as clientcmd reads it: the other fields only with `as`. A proxy-url is
// read, and one of a scheme client-go does not take is refused in clientcmd's words.
TEST(RestConfigTest, ImpersonationAndAProxyAreRead) {
  TempDir dir;
  Write(dir.Sub("config"),
        "current-context: as\nclusters:\n- name: lab\n  cluster: {server: https://lab}\n"
        "- name: far\n  cluster: {server: https://far, proxy-url: 'socks5://127.0.0.1:1080'}\n"
        "- name: ftp\n  cluster: {server: https://far, proxy-url: 'ftp://proxy:21'}\n"
        "- name: bad\n  cluster: {server: https://far, proxy-url: 'http://[::1'}\n"
        "contexts:\n- name: as\n  context: {cluster: lab, user: admin}\n"
        "- name: groups\n  context: {cluster: lab, user: grouped}\n"
        "- name: wrong\n  context: {cluster: lab, user: wrong}\n"
        "- name: far\n  context: {cluster: far, user: plain}\n"
        "- name: ftp\n  context: {cluster: ftp, user: plain}\n"
        "- name: bad\n  context: {cluster: bad, user: plain}\n"
        "- name: plain\n  context: {cluster: lab, user: plain}\n"
        "- name: empty\n  context: {cluster: lab, user: empty}\n"
        "users:\n- name: admin\n  user: {token: t, as: 'system:serviceaccount:dra:driver', "
        "as-uid: '42', as-groups: [viewers, auditors, null], "
        "as-user-extra: {acme.com/project: [a, b], scopes: []}}\n"
        "- name: grouped\n  user: {token: t, as-groups: [viewers]}\n"
        "- name: wrong\n  user: {token: t, as: driver, as-groups: viewers}\n"
        "- name: plain\n  user: {token: t}\n"
        "- name: empty\n  user: {token: t, as: '', as-uid: '', as-groups: [], "
        "as-user-extra: {}}\n");
  absl::StatusOr<RestConfig> as = LoadKubeconfig({dir.Sub("config")}, "as");
  ASSERT_TRUE(as.ok()) << as.status();
  EXPECT_EQ(as->impersonate,
            (Impersonation{.user = "system:serviceaccount:dra:driver",
                           .uid = "42",
                           .groups = {"viewers", "auditors", ""},
                           .extra = {{"acme.com/project", {"a", "b"}}, {"scopes", {}}}}));
  EXPECT_EQ(as->bearer_token, "t");
  // Groups without `as` impersonate nobody, as clientcmd reads them.
  absl::StatusOr<RestConfig> groups = LoadKubeconfig({dir.Sub("config")}, "groups");
  ASSERT_TRUE(groups.ok()) << groups.status();
  EXPECT_EQ(groups->impersonate, Impersonation{});
  absl::StatusOr<RestConfig> wrong = LoadKubeconfig({dir.Sub("config")}, "wrong");
  EXPECT_EQ(wrong.status(),
            absl::InvalidArgumentError("user \"wrong\": as-groups must be a list of strings"));
  absl::StatusOr<RestConfig> far = LoadKubeconfig({dir.Sub("config")}, "far");
  ASSERT_TRUE(far.ok()) << far.status();
  EXPECT_EQ(far->proxy_url, "socks5://127.0.0.1:1080");
  absl::StatusOr<RestConfig> ftp = LoadKubeconfig({dir.Sub("config")}, "ftp");
  EXPECT_EQ(ftp.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ftp.status().message(),
            "invalid 'proxy-url' \"ftp://proxy:21\" for cluster \"ftp\": unsupported scheme "
            "\"ftp\", must be http, https, or socks5");
  absl::StatusOr<RestConfig> bad = LoadKubeconfig({dir.Sub("config")}, "bad");
  EXPECT_EQ(
      bad.status().message(),
      "invalid 'proxy-url' \"http://[::1\" for cluster \"bad\": could not parse: http://[::1");
  absl::StatusOr<RestConfig> plain = LoadKubeconfig({dir.Sub("config")}, "plain");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->bearer_token, "t");
  EXPECT_TRUE(plain->proxy_url.empty());
  // Empty fields impersonate nobody, as clientcmd reads them.
  absl::StatusOr<RestConfig> empty = LoadKubeconfig({dir.Sub("config")}, "empty");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->bearer_token, "t");
  EXPECT_EQ(empty->impersonate, Impersonation{});
}

// insecure-skip-tls-verify is a boolean as clientcmd reads one (YAML 1.1's words, unquoted);
// a string is refused rather than read as false, and with a CA it is refused with client-go's
// text, as its transport refuses the two together.
TEST(RestConfigTest, InsecureSkipTlsVerifyIsABooleanAndExcludesACa) {
  TempDir dir;
  const auto load = [&](const std::string& cluster_fields) {
    Write(dir.Sub("config"),
          "clusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n" + cluster_fields +
              "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n");
    return LoadKubeconfig({dir.Sub("config")});
  };
  for (const char* yes : {"true", "True", "TRUE", "yes", "on", "Y", "!!bool true"}) {
    absl::StatusOr<RestConfig> config =
        load(absl::StrCat("    insecure-skip-tls-verify: ", yes, "\n"));
    ASSERT_TRUE(config.ok()) << yes << ": " << config.status();
    EXPECT_TRUE(config->insecure_skip_tls_verify) << yes;
  }
  for (const char* no : {"false", "no", "Off", "N", "~"}) {
    absl::StatusOr<RestConfig> config =
        load(absl::StrCat("    insecure-skip-tls-verify: ", no, "\n"));
    ASSERT_TRUE(config.ok()) << no << ": " << config.status();
    EXPECT_FALSE(config->insecure_skip_tls_verify) << no;
  }
  for (const char* not_a_boolean : {"\"true\"", "'yes'", "1", "enabled", "[true]"}) {
    absl::StatusOr<RestConfig> config =
        load(absl::StrCat("    insecure-skip-tls-verify: ", not_a_boolean, "\n"));
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << not_a_boolean;
    EXPECT_EQ(config.status().message(), "cluster \"c\": insecure-skip-tls-verify is not a boolean")
        << not_a_boolean;
  }
  absl::StatusOr<RestConfig> with_ca =
      load("    insecure-skip-tls-verify: true\n    certificate-authority-data: " +
           absl::Base64Escape(kCa) + "\n");
  EXPECT_EQ(with_ca.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(with_ca.status().message(),
            "cluster \"c\": specifying a root certificates file with the insecure flag is not "
            "allowed");
  // A CA file named is refused too when it is empty.
  Write(dir.Sub("empty-ca.crt"), "");
  absl::StatusOr<RestConfig> with_empty_ca_file =
      load("    insecure-skip-tls-verify: true\n    certificate-authority: empty-ca.crt\n");
  EXPECT_EQ(with_empty_ca_file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(with_empty_ca_file.status().message(), with_ca.status().message());
}

TEST(RestConfigTest, InClusterUsesTheServiceAccount) {
  TempDir dir;
  Write(dir.Sub("sa/token"), "projected-token");
  Write(dir.Sub("sa/ca.crt"), kCa);
  Write(dir.Sub("sa/namespace"), "dra-system\n");
  absl::StatusOr<RestConfig> config = InClusterConfig(
      {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
      dir.Sub("sa"));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server, "https://10.96.0.1:443");
  EXPECT_EQ(config->bearer_token_file, dir.Sub("sa/token"));
  EXPECT_EQ(config->certificate_authority_pem, kCa);
  EXPECT_EQ(config->certificate_authority_file, dir.Sub("sa/ca.crt"));
  EXPECT_EQ(config->namespace_name, "dra-system");
  // POD_NAMESPACE wins over the service account's file, as in clientcmd.
  absl::StatusOr<RestConfig> downward = InClusterConfig({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                                         {"KUBERNETES_SERVICE_PORT", "443"},
                                                         {"POD_NAMESPACE", "from-downward-api"}},
                                                        dir.Sub("sa"));
  ASSERT_TRUE(downward.ok()) << downward.status();
  EXPECT_EQ(downward->namespace_name, "from-downward-api");

  absl::StatusOr<RestConfig> ipv6 = InClusterConfig(
      {{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, dir.Sub("sa"));
  ASSERT_TRUE(ipv6.ok()) << ipv6.status();
  EXPECT_EQ(ipv6->server, "https://[fd00::1]:443");

  EXPECT_EQ(InClusterConfig({}, dir.Sub("sa")).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(InClusterConfig(
                {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}},
                dir.Sub("nothing"))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  // A token path the kernel cannot resolve (ELOOP here; EACCES for a process that may not search
  // the folder) is an answer, not an exception that ends the process.
  std::filesystem::create_directory_symlink(dir.Sub("loop"), dir.Sub("loop"));
  const absl::Status loop = InClusterConfig({{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                             {"KUBERNETES_SERVICE_PORT", "443"}},
                                            dir.Sub("loop"))
                                .status();
  EXPECT_EQ(loop.code(), absl::StatusCode::kFailedPrecondition) << loop;
  EXPECT_TRUE(absl::StrContains(loop.message(), "symbolic links")) << loop;
}

}  // namespace
}  // namespace devmgr::kubeclient
