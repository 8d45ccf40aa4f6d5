#include "kubeclient/exec_credential.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <poll.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "kubeapi/json_text.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeclient {
namespace {

// More than any credential needs (a token, or a certificate chain and its key).
constexpr size_t kMaxOutput = 1 << 20;

// What client-go adds to "executable ... not found", with the kubeconfig's installHint after it,
// for at most kNotFoundHelpTimes of the failures of each kNotFoundHelpWindow.
constexpr char kNotFoundHelp[] =
    "\n\nIt looks like you are trying to use a client-go credential plugin that is not "
    "installed.\n\nTo learn more about this feature, consult the documentation available at:\n"
    "      https://kubernetes.io/docs/reference/access-authn-authz/authentication/"
    "#client-go-credential-plugins";
constexpr int kNotFoundHelpTimes = 10;
constexpr absl::Duration kNotFoundHelpWindow = absl::Hours(1);

// What the program printed, and how it ended.
struct Ran {
  std::string out;
  // Its exit code; -1 when a signal ended it (Go's ExitCode).
  int exit_code = 0;
};

// Environment: the process's, then `extra` over it (a name given again keeps its last value, as
// Go's os/exec keeps it).
std::vector<std::string> Environment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    entries.emplace_back(*entry);
  }
  for (const auto& [name, value] : extra) entries.push_back(absl::StrCat(name, "=", value));
  // Where each name is given last.
  absl::flat_hash_map<std::string, size_t> last;
  for (size_t i = 0; i < entries.size(); ++i) {
    last[entries[i].substr(0, entries[i].find('='))] = i;
  }
  std::vector<std::string> kept;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (last[entries[i].substr(0, entries[i].find('='))] == i)
      kept.push_back(std::move(entries[i]));
  }
  return kept;
}

// Executable: Go's exec.LookPath would take the file at `path`: no folder, and one the process
// may execute.
bool Executable(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || S_ISDIR(info.st_mode)) return false;
  if (::faccessat(AT_FDCWD, path.c_str(), X_OK, AT_EACCESS) == 0) return true;
  // Where the kernel cannot say (a seccomp profile refusing the call), the mode's bits decide.
  return (errno == ENOSYS || errno == EPERM) && (info.st_mode & 0111) != 0;
}

// LookPath: the file a bare program name runs, as Go's exec.LookPath finds it in the process's
// PATH (an empty entry is the current folder): the first that Executable takes, its path
// cleaned as Go's filepath.Join cleans it. NotFound, in client-go's words, when there is none
// and when the first is found through a relative entry (Go's ErrDot, which client-go reports
// as not found too).
absl::StatusOr<std::string> LookPath(const std::string& name) {
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): read-only here
  // Go splits an unset or empty PATH into no entry at all.
  if (path != nullptr && *path != '\0') {
    for (absl::string_view entry : absl::StrSplit(path, ':')) {
      const std::filesystem::path file =
          (std::filesystem::path(entry.empty() ? "." : std::string(entry)) / name)
              .lexically_normal();
      if (!Executable(file.string())) continue;
      if (file.is_absolute()) return file.string();
      break;
    }
  }
  return absl::NotFoundError(absl::StrCat("exec: executable ", name, " not found"));
}

// RunProgram runs `argv` (argv[0] found by LookPath unless it has a slash) with `env`, its
// standard output read whole, standard input the process's when `interactive` and /dev/null
// otherwise, standard error the process's, and no other descriptor. Once `stop_fd` is readable it
// kills the program and stops reading (a child of the program may still hold its output open).
// NotFound as LookPath's; FailedPrecondition for a start that fails (naming the file that was
// run, as Go's); Cancelled once stopped; InvalidArgument for output past kMaxOutput; Internal
// when a pipe or the wait fails.
absl::StatusOr<Ran> RunProgram(const std::vector<std::string>& argv,
                               const std::vector<std::string>& env, bool interactive, int stop_fd) {
  std::string file = argv[0];
  if (file.find('/') == std::string::npos) {
    absl::StatusOr<std::string> found = LookPath(file);
    if (!found.ok()) return found.status();
    file = *std::move(found);
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("exec: pipe: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  if (!interactive) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  // Only the three standard streams, as Go's os/exec passes: a host's descriptor opened without
  // O_CLOEXEC (a socket, a lock file) does not reach the plugin.
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& entry : env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  // The program starts as from a shell: no signal blocked (the calling thread may block some)
  // and none ignored (gRPC ignores SIGPIPE, and an ignored signal stays ignored across exec).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int spawned =
      ::posix_spawn(&pid, file.c_str(), &actions, &attributes, args.data(), envp.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    // As Go's os/exec: the failed fork/exec of the file found, with the system's error in Go's
    // words (glibc's texts, lower-cased).
    std::string error = std::strerror(spawned);
    if (!error.empty()) error[0] = absl::ascii_tolower(static_cast<unsigned char>(error[0]));
    return absl::FailedPreconditionError(absl::StrCat("exec: fork/exec ", file, ": ", error));
  }
  Ran ran;
  bool too_long = false;
  bool stopped = false;
  char buffer[16384];
  for (;;) {
    pollfd fds[2] = {{.fd = pipe_fds[0], .events = POLLIN, .revents = 0},
                     {.fd = stop_fd, .events = POLLIN, .revents = 0}};
    if (::poll(fds, stop_fd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents != 0) {
      stopped = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const ssize_t got = ::read(pipe_fds[0], buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (ran.out.size() + static_cast<size_t>(got) > kMaxOutput) {
      too_long = true;
      ::kill(pid, SIGKILL);
      break;
    }
    ran.out.append(buffer, static_cast<size_t>(got));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  pid_t reaped = 0;
  while ((reaped = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (reaped != pid) {
    return absl::InternalError(
        absl::StrCat("exec: cannot wait for ", argv[0], ": ", std::strerror(errno)));
  }
  if (stopped) {
    return absl::CancelledError(absl::StrCat("exec: executable ", argv[0], " was killed"));
  }
  if (too_long) {
    return absl::InvalidArgumentError(
        absl::StrCat("exec: executable ", argv[0], " printed more than ", kMaxOutput, " bytes"));
  }
  ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return ran;
}

// CountRun tells `metrics` how a run ended, sorted as client-go's exec authenticator sorts the
// ends of its command (its exit codes: 0 for success, 1 when the program did not run or its end
// is unknown); a run the destructor ended is not counted.
void CountRun(ClientMetrics& metrics, const absl::StatusOr<Ran>& ran) {
  if (ran.ok()) {
    if (ran->exit_code == 0) {
      metrics.ExecPluginCalled(0, kExecPluginNoError);
    } else {
      metrics.ExecPluginCalled(ran->exit_code, kExecPluginExecutionError);
    }
    return;
  }
  switch (ran.status().code()) {
    case absl::StatusCode::kCancelled:
      return;
    // Not found in PATH, or not started (Go's exec.Error and fs.PathError).
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
      metrics.ExecPluginCalled(1, kExecPluginNotFoundError);
      return;
    default:
      metrics.ExecPluginCalled(1, kExecPluginInternalError);
      return;
  }
}

// PemError: OpenSSL's last error, for a message.
std::string PemError() {
  const unsigned long code = ERR_get_error();  // NOLINT(google-runtime-int): OpenSSL's
  ERR_clear_error();
  if (code == 0) return "no PEM block";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

// CheckKeyPair: `cert_pem` holds a certificate and `key_pem` its private key, as Go's
// tls.X509KeyPair checks them; "" when they do.
std::string CheckKeyPair(const std::string& cert_pem, const std::string& key_pem) {
  ERR_clear_error();
  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert =
      cert_bio != nullptr ? PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr) : nullptr;
  std::string problem;
  if (cert == nullptr) problem = absl::StrCat("the certificate: ", PemError());
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = nullptr;
  if (problem.empty()) {
    key =
        key_bio != nullptr ? PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr) : nullptr;
    if (key == nullptr) problem = absl::StrCat("the key: ", PemError());
  }
  if (problem.empty() && X509_check_private_key(cert, key) != 1) {
    ERR_clear_error();
    problem = "private key does not match public key";
  }
  EVP_PKEY_free(key);
  X509_free(cert);
  BIO_free(key_bio);
  BIO_free(cert_bio);
  return problem;
}

// String: the string field `key` of `object`, "" when absent; false when it is not a string.
bool String(const nlohmann::json& object, const char* key, std::string& out) {
  auto found = object.find(key);
  if (found == object.end() || found->is_null()) return true;
  if (!found->is_string()) return false;
  out = found->get<std::string>();
  return true;
}

// Decode: the ExecCredential the program printed, checked as client-go checks it (its texts).
absl::StatusOr<ExecCredential> Decode(const std::string& out, const std::string& api_version) {
  const nlohmann::json json = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return absl::InvalidArgumentError(json.is_discarded()
                                          ? "decoding stdout: the output is not JSON"
                                          : "decoding stdout: the output is not a JSON object");
  }
  std::string kind;
  std::string version;
  if (!String(json, "kind", kind) || !String(json, "apiVersion", version)) {
    return absl::InvalidArgumentError("decoding stdout: kind and apiVersion must be strings");
  }
  // apimachinery's decoder into a typed ExecCredential takes a missing kind, and a missing
  // apiVersion, from that type (the latter as its internal version, which is no plugin's).
  if (kind.empty()) kind = "ExecCredential";
  if (version.empty()) version = "client.authentication.k8s.io/__internal";
  // client-go's scheme knows the kind in the group's v1, v1beta1 and internal versions alone:
  // any other (another group's, a group-less "v1") fails the decode, before the version is
  // compared with the configured one. The text is apimachinery's without its `in scheme "..."`,
  // which names a file and line of client-go's build.
  const bool registered = version == "client.authentication.k8s.io/v1" ||
                          version == "client.authentication.k8s.io/v1beta1" ||
                          version == "client.authentication.k8s.io/__internal";
  if (kind != "ExecCredential" || !registered) {
    return absl::InvalidArgumentError(absl::StrCat(
        "decoding stdout: no kind \"", kind, "\" is registered for version \"", version, "\""));
  }
  if (version != api_version) {
    return absl::InvalidArgumentError(absl::StrCat("exec plugin is configured to use API version ",
                                                   api_version, ", plugin returned version ",
                                                   version));
  }
  auto status = json.find("status");
  if (status == json.end() || status->is_null()) {
    return absl::InvalidArgumentError("exec plugin didn't return a status field");
  }
  ExecCredential credential;
  std::string expiration;
  if (!status->is_object() || !String(*status, "token", credential.token) ||
      !String(*status, "clientCertificateData", credential.client_certificate_pem) ||
      !String(*status, "clientKeyData", credential.client_key_pem) ||
      !String(*status, "expirationTimestamp", expiration)) {
    return absl::InvalidArgumentError(
        "decoding stdout: status must be an object whose fields are strings");
  }
  // Present, even empty, it must be a time: Go's metav1.Time refuses "" (null is none),
  // while it decodes, before the status is checked.
  if (auto given = status->find("expirationTimestamp");
      given != status->end() && !given->is_null()) {
    std::string error;
    if (!absl::ParseTime(absl::RFC3339_full, expiration, &credential.expiry, &error)) {
      return absl::InvalidArgumentError(absl::StrCat("decoding stdout: expirationTimestamp \"",
                                                     expiration, "\" is not RFC 3339: ", error));
    }
  }
  if (credential.token.empty() && credential.client_certificate_pem.empty() &&
      credential.client_key_pem.empty()) {
    return absl::InvalidArgumentError("exec plugin didn't return a token or cert/key pair");
  }
  if (credential.client_certificate_pem.empty() != credential.client_key_pem.empty()) {
    return absl::InvalidArgumentError("exec plugin returned only certificate or key, not both");
  }
  if (!credential.client_certificate_pem.empty()) {
    if (std::string problem =
            CheckKeyPair(credential.client_certificate_pem, credential.client_key_pem);
        !problem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("failed parsing client key/certificate: ", problem));
    }
  }
  return credential;
}

}  // namespace

ExecCredentialPlugin::ExecCredentialPlugin(ExecCredentialConfig config,
                                           std::function<bool()> stdin_is_terminal,
                                           const Clock& clock, ClientMetrics* metrics)
    : config_(std::move(config)),
      stdin_is_terminal_(std::move(stdin_is_terminal)),
      clock_(clock),
      metrics_(metrics),
      stop_fd_(::eventfd(0, EFD_CLOEXEC)) {}

ExecCredentialPlugin::~ExecCredentialPlugin() {
  if (stop_fd_ >= 0) {
    const uint64_t one = 1;
    static_cast<void>(::write(stop_fd_, &one, sizeof(one)));
  }
  std::thread runner;
  {
    absl::MutexLock lock(&mu_);
    runner = std::move(runner_);
  }
  if (runner.joinable()) runner.join();
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

absl::StatusOr<std::shared_ptr<const ExecCredential>> ExecCredentialPlugin::Get(
    const Cancellation* cancel, absl::Duration timeout) {
  // Set, under mu_, when `cancel` is: the wait below then ends.
  bool cancelled = false;
  Cancellation::Waker waker(cancel, [this, &cancelled] {
    absl::MutexLock lock(&mu_);
    cancelled = true;
  });
  if (waker.too_late()) return absl::CancelledError("getting credentials: cancelled");
  const absl::Time deadline = absl::Now() + timeout;

  absl::MutexLock lock(&mu_);
  // A run in progress replaces what is in hand (a refresh after a refusal): it is awaited.
  if (ended_ == runs_ && Valid()) return credential_;
  if (cancelled) return absl::CancelledError("getting credentials: cancelled");
  absl::Status waited = Await(&cancelled, deadline, timeout);
  if (!waited.ok()) {
    return absl::Status(waited.code(), absl::StrCat("getting credentials: ", waited.message()));
  }
  if (last_.ok()) return last_;
  // A refresh that failed leaves the refused credentials in hand, as client-go's.
  if (Valid()) return credential_;
  return absl::Status(last_.status().code(),
                      absl::StrCat("getting credentials: ", last_.status().message()));
}

absl::Status ExecCredentialPlugin::Refresh(const ExecCredential* used, const Cancellation* cancel,
                                           absl::Duration timeout) {
  bool cancelled = false;
  Cancellation::Waker waker(cancel, [this, &cancelled] {
    absl::MutexLock lock(&mu_);
    cancelled = true;
  });
  if (waker.too_late()) return absl::CancelledError("cancelled");
  const absl::Time deadline = absl::Now() + timeout;

  absl::MutexLock lock(&mu_);
  if (used == nullptr || credential_.get() != used) return absl::OkStatus();
  if (cancelled) return absl::CancelledError("cancelled");
  absl::Status waited = Await(&cancelled, deadline, timeout);
  if (!waited.ok()) return waited;
  return last_.status();
}

absl::Status ExecCredentialPlugin::Await(const bool* cancelled, absl::Time deadline,
                                         absl::Duration timeout) {
  if (ended_ == runs_) {
    // None in progress: one starts. The thread of the last has ended, or is about to.
    if (runner_.joinable()) runner_.join();
    try {
      runner_ = std::thread(&ExecCredentialPlugin::Finish, this);
    } catch (const std::system_error& error) {
      return absl::ResourceExhaustedError(absl::StrCat("cannot start a thread: ", error.what()));
    }
    ++runs_;
  }
  const int awaited = runs_;
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ended_ >= awaited || *cancelled; };
  mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
  if (ended_ >= awaited) return absl::OkStatus();
  if (*cancelled) {
    return absl::CancelledError(absl::StrCat("cancelled while ", config_.command, " runs"));
  }
  return absl::DeadlineExceededError(
      absl::StrCat(config_.command, " has not finished within ", absl::FormatDuration(timeout)));
}

bool ExecCredentialPlugin::Valid() const {
  // client-go keeps credentials up to their expiry, itself included.
  return credential_ != nullptr && clock_.Now() <= credential_->expiry;
}

void ExecCredentialPlugin::Finish() {
  absl::StatusOr<std::shared_ptr<const ExecCredential>> ran = Run();
  absl::MutexLock lock(&mu_);
  ++ended_;
  if (ran.ok()) {
    credential_ = *ran;
    last_ = *std::move(ran);
    return;
  }
  std::string message(ran.status().message());
  if (absl::IsNotFound(ran.status())) {
    // client-go's rate limit on its help: kNotFoundHelpTimes in each window, the window
    // starting again at the first failure after it has passed.
    const absl::Time now = clock_.Now();
    if (now - help_window_ >= kNotFoundHelpWindow) {
      help_window_ = now;
      help_given_ = 0;
    }
    if (help_given_ < kNotFoundHelpTimes) {
      ++help_given_;
      absl::StrAppend(&message, kNotFoundHelp);
      if (!config_.install_hint.empty()) absl::StrAppend(&message, "\n\n", config_.install_hint);
    }
  }
  last_ = absl::UnauthenticatedError(message);
}

int ExecCredentialPlugin::runs() const {
  absl::MutexLock lock(&mu_);
  return runs_;
}

absl::StatusOr<std::shared_ptr<const ExecCredential>> ExecCredentialPlugin::Run() const {
  bool interactive = false;
  if (config_.interactive_mode == "IfAvailable") {
    interactive = stdin_is_terminal_();
  } else if (config_.interactive_mode == "Always") {
    if (!stdin_is_terminal_()) {
      return absl::FailedPreconditionError(
          "exec plugin cannot support interactive mode: standard input is not a terminal");
    }
    interactive = true;
  }
  // The ExecCredential the program is given: TypeMeta's fields, then the spec's, in Go's order.
  nlohmann::ordered_json info;
  info["kind"] = "ExecCredential";
  info["apiVersion"] = config_.api_version;
  info["spec"] = nlohmann::ordered_json::object();
  if (!config_.cluster_json.empty()) {
    info["spec"]["cluster"] =
        nlohmann::ordered_json::parse(config_.cluster_json, nullptr, /*allow_exceptions=*/false);
  }
  info["spec"]["interactive"] = interactive;
  std::vector<std::pair<std::string, std::string>> extra = config_.env;
  // As Go's json.Encoder writes it: <, >, &, U+2028 and U+2029 escaped (found in strings
  // only), and a newline after.
  std::string info_text =
      absl::StrReplaceAll(kubeapi::JsonText(info), {{"<", "\\u003c"},
                                                    {">", "\\u003e"},
                                                    {"&", "\\u0026"},
                                                    {"\xE2\x80\xA8", "\\u2028"},
                                                    {"\xE2\x80\xA9", "\\u2029"}});
  info_text.push_back('\n');
  extra.emplace_back(kExecInfoEnv, std::move(info_text));

  std::vector<std::string> argv = {config_.command};
  argv.insert(argv.end(), config_.args.begin(), config_.args.end());
  absl::StatusOr<Ran> ran = RunProgram(argv, Environment(extra), interactive, stop_fd_);
  if (metrics_ != nullptr) CountRun(*metrics_, ran);
  if (!ran.ok()) return ran.status();
  if (ran->exit_code != 0) {
    return absl::FailedPreconditionError(absl::StrCat("exec: executable ", config_.command,
                                                      " failed with exit code ", ran->exit_code));
  }
  absl::StatusOr<ExecCredential> credential = Decode(ran->out, config_.api_version);
  if (!credential.ok()) return credential.status();
  return std::make_shared<const ExecCredential>(*std::move(credential));
}

}  // namespace devmgr::kubeclient
