// Credentials from a kubeconfig user's exec plugin, in client-go's protocol: what the program is
// given (its arguments, the user's env over the process's, KUBERNETES_EXEC_INFO), what it may
// print and what each mistake reads as (client-go's texts), and when it runs again (expiry, a
// refusal by the server). The plugins are shell scripts written into the test's folder.
#include "kubeclient/exec_credential.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/testlib/fake_clock.h"
#include "tests/testlib/recording_client_metrics.h"
#include "tests/testlib/temp_dir.h"
#include "tests/testlib/test_pki.h"
#include "tests/testlib/wait_for.h"

namespace devmgr::kubeclient {
namespace {

using ::devmgr::testing::FakeClock;
using ::devmgr::testing::TempDir;
using ::devmgr::testing::WaitFor;
using ::testing::HasSubstr;

constexpr char kV1[] = "client.authentication.k8s.io/v1";
constexpr char kV1beta1[] = "client.authentication.k8s.io/v1beta1";

// Script: an executable /bin/sh script `name` in `dir` running `body`.
std::string Script(const TempDir& dir, const std::string& name, const std::string& body) {
  const std::filesystem::path path = dir.Sub(name);
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path.string();
}

// Printing: a plugin that prints `output` (kept in a file beside it) and counts its runs in
// the file "runs".
std::string Printing(const TempDir& dir, const std::string& output) {
  std::ofstream(dir.Sub("output.json")) << output;
  return Script(dir, "plugin",
                absl::StrCat("echo run >> ", dir.Sub("runs").string(), "\ncat ",
                             dir.Sub("output.json").string()));
}

std::string Credential(const std::string& status, const std::string& api_version = kV1) {
  return absl::StrCat(R"({"kind":"ExecCredential","apiVersion":")", api_version, R"(","status":)",
                      status, "}");
}

// Standard input as the plugin finds it at each run.
bool NotATerminal() { return false; }
bool ATerminal() { return true; }

ExecCredentialConfig Config(const std::string& command) {
  ExecCredentialConfig config;
  config.command = command;
  config.api_version = kV1;
  config.interactive_mode = "Never";
  return config;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ExecCredentialTest, RunsTheProgramWithItsArgumentsEnvironmentAndExecInfo) {
  TempDir dir;
  ::setenv("DEVMGR_EXEC_TEST_INHERITED", "from the process", 1);
  ::setenv("DEVMGR_EXEC_TEST_OVERRIDDEN", "the process's", 1);
  const std::string seen = dir.Sub("seen").string();
  ExecCredentialConfig config =
      Config(Script(dir, "plugin",
                    absl::StrCat("printf '%s|' \"$@\" > ", seen, "\n",
                                 "printf '%s\\n%s\\n%s\\n' \"$DEVMGR_EXEC_TEST_INHERITED\" "
                                 "\"$DEVMGR_EXEC_TEST_OVERRIDDEN\" \"$KUBERNETES_EXEC_INFO\" >> ",
                                 seen, "\n", "echo '", Credential(R"({"token":"t0k3n"})"), "'")));
  config.args = {"get-token", "--cluster", "a b"};
  config.env = {{"DEVMGR_EXEC_TEST_OVERRIDDEN", "the user's"}};
  ExecCredentialPlugin plugin(config, NotATerminal);
  absl::StatusOr<std::shared_ptr<const ExecCredential>> got = plugin.Get();
  ::unsetenv("DEVMGR_EXEC_TEST_INHERITED");
  ::unsetenv("DEVMGR_EXEC_TEST_OVERRIDDEN");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->token, "t0k3n");
  EXPECT_TRUE((*got)->client_certificate_pem.empty());
  EXPECT_EQ((*got)->expiry, absl::InfiniteFuture());
  EXPECT_EQ(ReadFile(seen),
            "get-token|--cluster|a b|from the process\nthe user's\n"
            R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",)"
            R"("spec":{"interactive":false}})"
            "\n\n");
}

// The program starts as from a shell, whatever the calling thread blocks and the process
// ignores (gRPC ignores SIGPIPE; an ignored signal would stay ignored across exec).
TEST(ExecCredentialTest, TheProgramStartsWithNoSignalBlockedOrIgnored) {
  TempDir dir;
  const std::string seen = dir.Sub("seen").string();
  ExecCredentialConfig config =
      Config(Script(dir, "plugin",
                    // Shell builtins only: a child the shell forks (grep) may start under the
                    // mask the shell sets around its fork.
                    absl::StrCat("while IFS= read -r line; do case $line in SigBlk*|SigIgn*) "
                                 "printf '%s\\n' \"$line\";; esac; done < /proc/$$/status > ",
                                 seen, "\necho '", Credential(R"({"token":"t"})"), "'")));
  sigset_t blocked;
  sigset_t before;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR1);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &blocked, &before), 0);
  void (*const previous)(int) = ::signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<std::shared_ptr<const ExecCredential>> got =
      ExecCredentialPlugin(config, NotATerminal).Get();
  ::signal(SIGPIPE, previous);
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, &before, nullptr), 0);
  ASSERT_TRUE(got.ok()) << got.status();
  const std::string masks = ReadFile(seen);
  EXPECT_THAT(masks, HasSubstr("SigBlk:\t0000000000000000\n"));
  // glibc's posix_spawn leaves its own two internal signals (32, 33) ignored; none other is.
  const size_t ignored_at = masks.find("SigIgn:\t");
  ASSERT_NE(ignored_at, std::string::npos) << masks;
  const uint64_t ignored = std::stoull(masks.substr(ignored_at + 8, 16), nullptr, 16);
  EXPECT_EQ(ignored & ~uint64_t{0x180000000}, 0u) << masks;
}

// The program gets the three standard streams and no other descriptor, as Go's os/exec gives
// it: one the host opened without O_CLOEXEC stays with the host.
TEST(ExecCredentialTest, TheProgramInheritsOnlyTheStandardStreams) {
  TempDir dir;
  const std::string seen = dir.Sub("seen").string();
  constexpr int kHostFd = 200;
  ExecCredentialConfig config =
      Config(Script(dir, "plugin",
                    absl::StrCat("for fd in 0 1 2 ", kHostFd,
                                 "; do if [ -e /proc/$$/fd/$fd ]; then printf "
                                 "'%s ' $fd; fi; done > ",
                                 seen, "\necho '", Credential(R"({"token":"t"})"), "'")));
  const int opened = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(opened, 0);
  ASSERT_EQ(::dup2(opened, kHostFd), kHostFd);
  ::close(opened);
  absl::StatusOr<std::shared_ptr<const ExecCredential>> got =
      ExecCredentialPlugin(config, NotATerminal).Get();
  ::close(kHostFd);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(ReadFile(seen), "0 1 2 ");
}

// provideClusterInfo: the cluster as the loader rendered it, before `interactive`; IfAvailable
// is interactive only on a terminal, and Always refuses to run without one.
TEST(ExecCredentialTest, TellsTheProgramTheClusterAndWhetherItMayTalkToTheUser) {
  TempDir dir;
  const std::string seen = dir.Sub("seen").string();
  ExecCredentialConfig config =
      Config(Script(dir, "plugin",
                    absl::StrCat("printf '%s\\n' \"$KUBERNETES_EXEC_INFO\" >> ", seen, "\necho '",
                                 Credential(R"({"token":"t"})", kV1beta1), "'")));
  config.api_version = kV1beta1;
  config.cluster_json = R"({"server":"https://lab:6443","config":{"note":"<a&b> \u2028"}})";
  config.interactive_mode = "IfAvailable";
  ASSERT_TRUE(ExecCredentialPlugin(config, NotATerminal).Get().ok());
  // Standard input is looked at for each run, as client-go's: here a terminal from the second.
  int looks = 0;
  ExecCredentialPlugin looking(config, [&looks] { return ++looks > 1; });
  absl::StatusOr<std::shared_ptr<const ExecCredential>> first = looking.Get();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(looking.Refresh(first->get()).ok());
  config.interactive_mode = "Never";
  ASSERT_TRUE(ExecCredentialPlugin(config, ATerminal).Get().ok());
  const std::string info =
      R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1",)"
      R"("spec":{"cluster":{"server":"https://lab:6443","config":)"
      R"({"note":"\u003ca\u0026b\u003e \u2028"}},"interactive":)";
  // Written as Go's json.Encoder writes it: HTML's characters and U+2028 escaped, a newline
  // after.
  EXPECT_EQ(ReadFile(seen), absl::StrCat(info, "false}}\n\n", info, "false}}\n\n", info,
                                         "true}}\n\n", info, "false}}\n\n"));
  EXPECT_EQ(looks, 2);

  config.interactive_mode = "Always";
  absl::StatusOr<std::shared_ptr<const ExecCredential>> no_terminal =
      ExecCredentialPlugin(config, NotATerminal).Get();
  EXPECT_EQ(no_terminal.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(no_terminal.status().message(),
            "getting credentials: exec plugin cannot support interactive mode: standard input "
            "is not a terminal");
  EXPECT_TRUE(ExecCredentialPlugin(config, ATerminal).Get().ok());
}

// Credentials are kept up to their expiry (client-go's: that instant included). A refusal by
// the server runs the program again at once, once for all the requests that carried them; a
// run that fails then keeps them in hand, as client-go's.
TEST(ExecCredentialTest, RunsAgainWhenTheCredentialsExpireOrAreRefused) {
  TempDir dir;
  FakeClock clock(absl::FromUnixSeconds(1'800'000'000));
  ExecCredentialPlugin plugin(
      Config(Printing(dir,
                      Credential(R"({"token":"t","expirationTimestamp":"2027-01-15T08:00:00Z"})"))),
      NotATerminal, clock);
  absl::StatusOr<std::shared_ptr<const ExecCredential>> first = plugin.Get();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->expiry, absl::FromUnixSeconds(1'800'000'000));
  EXPECT_EQ(*plugin.Get(), *first);
  EXPECT_EQ(plugin.runs(), 1);

  clock.Advance(absl::Nanoseconds(1));
  absl::StatusOr<std::shared_ptr<const ExecCredential>> second = plugin.Get();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(*second, *first);
  EXPECT_EQ(plugin.runs(), 2);

  // Without an expiry they are kept until refused.
  ExecCredentialPlugin forever(Config(Printing(dir, Credential(R"({"token":"t"})"))), NotATerminal,
                               clock);
  absl::StatusOr<std::shared_ptr<const ExecCredential>> kept = forever.Get();
  ASSERT_TRUE(kept.ok()) << kept.status();
  clock.Advance(absl::Hours(24 * 365));
  EXPECT_EQ(*forever.Get(), *kept);
  EXPECT_TRUE(forever.Refresh(kept->get()).ok());
  EXPECT_EQ(forever.runs(), 2);
  absl::StatusOr<std::shared_ptr<const ExecCredential>> renewed = forever.Get();
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_NE(*renewed, *kept);
  // A second request refused with the old credentials neither runs it nor throws the new ones
  // away.
  EXPECT_TRUE(forever.Refresh(kept->get()).ok());
  EXPECT_EQ(*forever.Get(), *renewed);
  EXPECT_EQ(forever.runs(), 2);
  EXPECT_EQ(ReadFile(dir.Sub("runs")), "run\nrun\nrun\nrun\n");

  // A run that fails: its error, and the refused credentials stay in hand until it succeeds.
  std::ofstream(dir.Sub("output.json")) << Credential("{}");
  EXPECT_EQ(forever.Refresh(renewed->get()),
            absl::UnauthenticatedError("exec plugin didn't return a token or cert/key pair"));
  EXPECT_EQ(*forever.Get(), *renewed);
  EXPECT_EQ(forever.runs(), 3);
  std::ofstream(dir.Sub("output.json")) << Credential(R"({"token":"t2"})");
  EXPECT_TRUE(forever.Refresh(renewed->get()).ok());
  EXPECT_EQ((*forever.Get())->token, "t2");
  EXPECT_EQ(forever.runs(), 4);
}

TEST(ExecCredentialTest, AClientCertificateAndKeyAreCheckedAsAPair) {
  TempDir dir;
  const testing::TestPki pki = testing::MakeTestPki();
  const auto status = [](const std::string& cert, const std::string& key) {
    return nlohmann::json{{"clientCertificateData", cert}, {"clientKeyData", key}}.dump();
  };
  ExecCredentialPlugin plugin(
      Config(Printing(dir, Credential(status(pki.client_cert_pem, pki.client_key_pem)))),
      NotATerminal);
  absl::StatusOr<std::shared_ptr<const ExecCredential>> got = plugin.Get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->client_certificate_pem, pki.client_cert_pem);
  EXPECT_EQ((*got)->client_key_pem, pki.client_key_pem);
  EXPECT_TRUE((*got)->token.empty());

  TempDir other;
  absl::StatusOr<std::shared_ptr<const ExecCredential>> mismatched =
      ExecCredentialPlugin(
          Config(Printing(other, Credential(status(pki.client_cert_pem, pki.server_key_pem)))),
          NotATerminal)
          .Get();
  EXPECT_EQ(mismatched.status().message(),
            "getting credentials: failed parsing client key/certificate: private key does not "
            "match public key");
  TempDir garbage;
  absl::StatusOr<std::shared_ptr<const ExecCredential>> not_pem =
      ExecCredentialPlugin(Config(Printing(garbage, Credential(status("cert", "key")))),
                           NotATerminal)
          .Get();
  EXPECT_THAT(not_pem.status().message(),
              HasSubstr("getting credentials: failed parsing client key/certificate: the "
                        "certificate: "));
}

// Every way a plugin can fail reads as client-go's words (after "getting credentials: "), is
// Unauthenticated, and leaves nothing kept: the next Get runs it again.
TEST(ExecCredentialTest, EachMistakeIsReportedInClientGosWords) {
  struct Case {
    const char* name;
    std::string body;  // the script's
    std::string message;
  };
  const std::vector<Case> cases = {
      {"exit code", "echo half-way >&2\nexit 3", "exec: executable PLUGIN failed with exit code 3"},
      {"killed", "kill -9 $$", "exec: executable PLUGIN failed with exit code -1"},
      {"no status",
       absl::StrCat("echo '", R"({"kind":"ExecCredential","apiVersion":")", kV1, R"("})", "'"),
       "exec plugin didn't return a status field"},
      {"empty status", absl::StrCat("echo '", Credential("{}"), "'"),
       "exec plugin didn't return a token or cert/key pair"},
      {"only a key", absl::StrCat("echo '", Credential(R"({"clientKeyData":"k"})"), "'"),
       "exec plugin returned only certificate or key, not both"},
      {"other version", absl::StrCat("echo '", Credential(R"({"token":"t"})", kV1beta1), "'"),
       "exec plugin is configured to use API version client.authentication.k8s.io/v1, plugin "
       "returned version client.authentication.k8s.io/v1beta1"},
      {"group-less version", R"(echo '{"kind":"ExecCredential","apiVersion":"v1"}')",
       "decoding stdout: no kind \"ExecCredential\" is registered for version \"v1\""},
      {"unknown version",
       absl::StrCat("echo '", Credential(R"({"token":"t"})", "client.authentication.k8s.io/v2"),
                    "'"),
       "decoding stdout: no kind \"ExecCredential\" is registered for version "
       "\"client.authentication.k8s.io/v2\""},
      {"not JSON", "echo 'token: t'", "decoding stdout: the output is not JSON"},
      {"no apiVersion", R"(echo '{"kind":"ExecCredential","status":{"token":"t"}}')",
       "exec plugin is configured to use API version client.authentication.k8s.io/v1, plugin "
       "returned version client.authentication.k8s.io/__internal"},
      {"empty expiry",
       absl::StrCat("echo '", Credential(R"({"token":"t","expirationTimestamp":""})"), "'"),
       "decoding stdout: expirationTimestamp \"\" is not RFC 3339"},
      {"bad expiry",
       absl::StrCat("echo '", Credential(R"({"token":"t","expirationTimestamp":"soon"})"), "'"),
       "decoding stdout: expirationTimestamp \"soon\" is not RFC 3339"},
      {"too long", "head -c 2000000 /dev/zero | tr '\\0' x",
       "exec: executable PLUGIN printed more than 1048576 bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    const std::string plugin_path = Script(dir, "plugin", c.body);
    ExecCredentialPlugin plugin(Config(plugin_path), NotATerminal);
    for (int attempt = 1; attempt <= 2; ++attempt) {
      absl::StatusOr<std::shared_ptr<const ExecCredential>> got = plugin.Get();
      EXPECT_EQ(got.status().code(), absl::StatusCode::kUnauthenticated) << got.status();
      std::string expected = absl::StrCat("getting credentials: ", c.message);
      if (size_t at = expected.find("PLUGIN"); at != std::string::npos) {
        expected.replace(at, 6, plugin_path);
      }
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(expected));
      EXPECT_EQ(plugin.runs(), attempt);
    }
  }

  // Not a mistake: an ExecCredential without `kind`, which apimachinery's decoder takes from
  // the type it decodes into.
  TempDir kindless;
  absl::StatusOr<std::shared_ptr<const ExecCredential>> without_kind =
      ExecCredentialPlugin(Config(Printing(kindless, absl::StrCat(R"({"apiVersion":")", kV1,
                                                                  R"(","status":{"token":"t"}})"))),
                           NotATerminal)
          .Get();
  ASSERT_TRUE(without_kind.ok()) << without_kind.status();
  EXPECT_EQ((*without_kind)->token, "t");

  // A program given by its path is not looked up: Go's failed fork/exec, without the help.
  TempDir dir_for_paths;
  std::ofstream(dir_for_paths.Sub("not-executable")) << "#!/bin/sh\n";
  for (const auto& [path, error] :
       {std::pair{dir_for_paths.Sub("missing").string(), "no such file or directory"},
        std::pair{dir_for_paths.Sub("not-executable").string(), "permission denied"}}) {
    EXPECT_EQ(ExecCredentialPlugin(Config(path), NotATerminal).Get().status(),
              absl::UnauthenticatedError(
                  absl::StrCat("getting credentials: exec: fork/exec ", path, ": ", error)));
  }
}

// Each run is counted as client-go's exec authenticator counts it
// (rest_client_exec_plugin_call_total): by how the program ended, not by what it printed.
TEST(ExecCredentialTest, EachRunIsCountedAsClientGoCountsIt) {
  TempDir dir;
  std::ofstream(dir.Sub("not-executable")) << "#!/bin/sh\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Script(dir, "ok", absl::StrCat("echo '", Credential(R"({"token":"t"})"), "'")),
       "exec 0 no_error"},
      {Script(dir, "not-json", "echo 'token: t'"), "exec 0 no_error"},
      {Script(dir, "exit", "exit 3"), "exec 3 plugin_execution_error"},
      {Script(dir, "killed", "kill -9 $$"), "exec -1 plugin_execution_error"},
      {"devmgr-no-such-credential-plugin", "exec 1 plugin_not_found_error"},
      {dir.Sub("not-executable").string(), "exec 1 plugin_not_found_error"},
      {Script(dir, "too-long", "head -c 2000000 /dev/zero | tr '\\0' x"),
       "exec 1 client_internal_error"},
  };
  for (const auto& [command, counted] : cases) {
    testing::RecordingClientMetrics metrics;
    ExecCredentialPlugin plugin(Config(command), NotATerminal, RealClock(), &metrics);
    static_cast<void>(plugin.Get());
    EXPECT_THAT(metrics.Lines(), ::testing::ElementsAre(counted)) << command;
  }
}

// A bare name is looked up in PATH as Go's exec.LookPath looks: folders and files that may not
// be executed are passed over, a start that fails then names the file found (no help: the
// plugin is installed), and a file found only through a relative entry is not run.
TEST(ExecCredentialTest, ABareNameIsLookedUpInPathAsGoLooks) {
  TempDir dir;
  for (const char* sub : {"folder", "not-executable", "found", "relative"}) {
    std::filesystem::create_directories(dir.Sub(sub));
  }
  std::filesystem::create_directories(dir.Sub("folder/plugin"));
  std::ofstream(dir.Sub("not-executable/plugin")) << "#!/bin/sh\nexit 9\n";
  const std::string found = dir.Sub("found").string();
  Script(dir, "found/plugin", absl::StrCat("echo '", Credential(R"({"token":"looked-up"})"), "'"));
  // Installed, but its interpreter is not.
  std::ofstream(dir.Sub("found/broken")) << "#!/nonexistent/interpreter\n";
  std::filesystem::permissions(dir.Sub("found/broken"), std::filesystem::perms::owner_all);
  Script(dir, "relative/plugin", "exit 9");
  const char* saved = std::getenv("PATH");
  const bool had_path = saved != nullptr;
  const std::string old_path = had_path ? saved : "";
  // The entries in Go's order; "found/" and ".." are cleaned in the names.
  ::setenv("PATH",
           absl::StrCat(dir.Sub("folder").string(), ":", dir.Sub("not-executable").string(), ":",
                        found, "/../found/")
               .c_str(),
           1);
  absl::StatusOr<std::shared_ptr<const ExecCredential>> got =
      ExecCredentialPlugin(Config("plugin"), NotATerminal).Get();
  const absl::Status broken = ExecCredentialPlugin(Config("broken"), NotATerminal).Get().status();
  // An empty entry is the current folder: relative, so not taken.
  ::setenv("PATH", absl::StrCat(":", found).c_str(), 1);
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.Sub("relative"));
  const absl::Status relative = ExecCredentialPlugin(Config("plugin"), NotATerminal).Get().status();
  std::filesystem::current_path(cwd);
  // No PATH: nowhere to look.
  ::unsetenv("PATH");
  const absl::Status no_path = ExecCredentialPlugin(Config("plugin"), NotATerminal).Get().status();
  if (had_path) ::setenv("PATH", old_path.c_str(), 1);

  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->token, "looked-up");
  EXPECT_EQ(broken,
            absl::UnauthenticatedError(absl::StrCat("getting credentials: exec: fork/exec ", found,
                                                    "/broken: no such file or directory")));
  EXPECT_THAT(std::string(relative.message()),
              ::testing::StartsWith("getting credentials: exec: executable plugin not found\n"));
  EXPECT_THAT(std::string(no_path.message()),
              ::testing::StartsWith("getting credentials: exec: executable plugin not found\n"));
}

// A program not found in PATH is explained with client-go's help and the kubeconfig's
// installHint, for the first ten failures of each hour (client-go's rate limit).
TEST(ExecCredentialTest, AProgramNotFoundIsExplainedTenTimesAnHour) {
  FakeClock clock(absl::FromUnixSeconds(1'800'000'000));
  ExecCredentialConfig missing = Config("devmgr-no-such-credential-plugin");
  missing.install_hint = "Install it with: apt-get install devmgr-no-such-credential-plugin";
  ExecCredentialPlugin plugin(missing, NotATerminal, clock);
  const std::string bare =
      "getting credentials: exec: executable devmgr-no-such-credential-plugin not found";
  const std::string explained = absl::StrCat(
      bare,
      "\n\nIt looks like you are trying to use a client-go credential plugin that is not "
      "installed.\n\nTo learn more about this feature, consult the documentation available "
      "at:\n      https://kubernetes.io/docs/reference/access-authn-authz/authentication/"
      "#client-go-credential-plugins\n\n"
      "Install it with: apt-get install devmgr-no-such-credential-plugin");
  for (int failure = 1; failure <= 10; ++failure) {
    EXPECT_EQ(plugin.Get().status(), absl::UnauthenticatedError(explained)) << failure;
    clock.Advance(absl::Minutes(5));
  }
  EXPECT_EQ(plugin.Get().status(), absl::UnauthenticatedError(bare));
  // The hour began at the first failure; the window starts again at the first failure after it.
  clock.Advance(absl::Minutes(10) - absl::Nanoseconds(1));
  EXPECT_EQ(plugin.Get().status(), absl::UnauthenticatedError(bare));
  clock.Advance(absl::Nanoseconds(1));
  EXPECT_EQ(plugin.Get().status(), absl::UnauthenticatedError(explained));
  EXPECT_EQ(plugin.runs(), 13);
}

// Release: opens the FIFO `path` for writing and closes it, which ends a `read` or `cat` that
// waits on it.
void Release(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(::write(fd, "go\n", 3), 3);
  ::close(fd);
}

// A run that does not end holds a request no longer than its timeout or its cancellation: the
// run goes on, the next request waits for the same run, and its credentials serve them all once
// it ends. client-go has no bound here: a hung plugin there holds every request.
TEST(ExecCredentialTest, ARequestWaitsForARunNoLongerThanItsTimeoutOrItsCancellation) {
  TempDir dir;
  ASSERT_EQ(::mkfifo(dir.Sub("go").c_str(), 0600), 0);
  std::ofstream(dir.Sub("output.json")) << Credential(R"({"token":"late"})");
  const std::string plugin_path = Script(dir, "plugin",
                                         absl::StrCat("read line < ", dir.Sub("go").string(),
                                                      "\ncat ", dir.Sub("output.json").string()));
  ExecCredentialPlugin plugin(Config(plugin_path), NotATerminal);

  absl::StatusOr<std::shared_ptr<const ExecCredential>> timed_out =
      plugin.Get(nullptr, absl::Milliseconds(20));
  EXPECT_EQ(timed_out.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(timed_out.status().message(),
            absl::StrCat("getting credentials: ", plugin_path, " has not finished within 20ms"));

  // Cancelled while it waits; a minute's timeout stands for a wait that Cancel failed to end.
  Cancellation cancel;
  auto cancelled =
      std::async(std::launch::async, [&] { return plugin.Get(&cancel, absl::Minutes(1)); });
  ASSERT_TRUE(WaitFor([&] { return cancel.waiting() == 1; }));
  cancel.Cancel();
  const absl::Status ended = cancelled.get().status();
  EXPECT_EQ(ended.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(ended.message(),
            absl::StrCat("getting credentials: cancelled while ", plugin_path, " runs"));
  // Cancelled before: no wait at all.
  EXPECT_EQ(plugin.Get(&cancel).status().message(), "getting credentials: cancelled");
  EXPECT_EQ(cancel.waiting(), 0);
  EXPECT_EQ(plugin.runs(), 1);

  Release(dir.Sub("go"));
  absl::StatusOr<std::shared_ptr<const ExecCredential>> got = plugin.Get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->token, "late");
  EXPECT_EQ(plugin.runs(), 1);

  // A refresh after a refusal waits as long, and a Get meanwhile waits for its run rather than
  // take the refused credentials (client-go's requests wait on its lock).
  std::ofstream(dir.Sub("output.json")) << Credential(R"({"token":"fresh"})");
  EXPECT_EQ(
      plugin.Refresh(got->get(), nullptr, absl::Milliseconds(20)),
      absl::DeadlineExceededError(absl::StrCat(plugin_path, " has not finished within 20ms")));
  EXPECT_EQ(plugin.Get(nullptr, absl::Milliseconds(20)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  Release(dir.Sub("go"));
  absl::StatusOr<std::shared_ptr<const ExecCredential>> fresh = plugin.Get();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ((*fresh)->token, "fresh");
  EXPECT_EQ(plugin.runs(), 2);

  // A Get that waits for a refresh that fails gets the refused credentials.
  std::ofstream(dir.Sub("output.json")) << Credential("{}");
  EXPECT_EQ(plugin.Refresh(fresh->get(), nullptr, absl::Milliseconds(20)).code(),
            absl::StatusCode::kDeadlineExceeded);
  Cancellation unused;
  auto waiting = std::async(std::launch::async, [&] { return plugin.Get(&unused); });
  ASSERT_TRUE(WaitFor([&] { return unused.waiting() == 1; }));
  Release(dir.Sub("go"));
  absl::StatusOr<std::shared_ptr<const ExecCredential>> kept = waiting.get();
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, *fresh);
  EXPECT_EQ(plugin.runs(), 3);
}

// Destroying the plugin (its transport going away: a reflector's or a controller's Stop) kills
// a run in progress and does not wait for its output to close, which a child of the program may
// keep open.
TEST(ExecCredentialTest, DestroyingThePluginKillsARunInProgress) {
  TempDir dir;
  ASSERT_EQ(::mkfifo(dir.Sub("go").c_str(), 0600), 0);
  // The child `cat` keeps the program's output open until the FIFO is written to.
  auto plugin = std::make_unique<ExecCredentialPlugin>(
      Config(Script(dir, "plugin",
                    absl::StrCat("cat ", dir.Sub("go").string(), " &\necho $$ > ",
                                 dir.Sub("pid").string(), "\nwait"))),
      NotATerminal);
  EXPECT_EQ(plugin->Get(nullptr, absl::Milliseconds(1)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(dir.Sub("pid")).empty(); }));
  const pid_t pid = std::stoi(ReadFile(dir.Sub("pid")));

  auto destroyed = std::async(std::launch::async, [&] { plugin.reset(); });
  const bool ended = destroyed.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  EXPECT_TRUE(ended) << "the destructor waits for the program";
  // The program was killed and reaped; its child still waits on the FIFO, and is let go.
  EXPECT_EQ(::kill(pid, 0), -1);
  Release(dir.Sub("go"));
  destroyed.wait();
}

}  // namespace
}  // namespace devmgr::kubeclient
