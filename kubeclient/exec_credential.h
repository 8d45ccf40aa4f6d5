// ExecCredentialPlugin: credentials from the program a kubeconfig's user names (its `exec`),
// in client-go's protocol (client.authentication.k8s.io v1 and v1beta1): the program gets the
// process's environment, the user's `env` over it and KUBERNETES_EXEC_INFO (an ExecCredential
// whose spec says whether it may talk to the user, and with provideClusterInfo the cluster), and
// prints an ExecCredential whose status holds a token, a client certificate and key, or both,
// and when they expire.
//
// As client-go's exec authenticator: the program runs at the first request and again once its
// credentials have expired, or inside a request the server refused (401), whose credentials are
// kept if that run fails; one run at a time, and requests wait for it. Its standard error is the
// process's; its standard input is the process's only when it may be interactive (interactiveMode
// IfAvailable or Always, and standard input a terminal at that run), /dev/null otherwise. A
// command without a slash is found in PATH as Go's exec.LookPath finds it.
//
// Like client-go, no time limit is put on a run. Unlike client-go, a program that hangs holds no
// request beyond the request's own timeout or its cancellation: a run goes on, on a thread of its
// own, and the requests that gave up waiting leave it behind; the next one waits for the same run.
// Destroying the ExecCredentialPlugin kills a run in progress (SIGKILL) and waits for it to end,
// even where a child of the program keeps its output open.
//
// Thread-safety: every method may be called from any thread at once.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "kubeclient/cancellation.h"
#include "kubeclient/metrics.h"
#include "kubeclient/rest_config.h"

namespace devmgr::kubeclient {

// What a run of the program gave.
struct ExecCredential {
  // Sent as the bearer token; empty: none.
  std::string token;
  // Presented in TLS (PEM); both empty or both set.
  std::string client_certificate_pem;
  std::string client_key_pem;
  // When the program said they expire; InfiniteFuture when it did not say.
  absl::Time expiry = absl::InfiniteFuture();
};

// KUBERNETES_EXEC_INFO's name.
inline constexpr char kExecInfoEnv[] = "KUBERNETES_EXEC_INFO";

class ExecCredentialPlugin {
 public:
  // `stdin_is_terminal`, asked at each run, decides interactiveMode IfAvailable and Always, as
  // client-go's look at the process's standard input; `clock` tells when credentials have
  // expired; `metrics`, when set, is told of each run (rest_client_exec_plugin_call_total).
  ExecCredentialPlugin(ExecCredentialConfig config, std::function<bool()> stdin_is_terminal,
                       const Clock& clock = RealClock(), ClientMetrics* metrics = nullptr);
  ~ExecCredentialPlugin();
  ExecCredentialPlugin(const ExecCredentialPlugin&) = delete;
  ExecCredentialPlugin& operator=(const ExecCredentialPlugin&) = delete;

  // Get: the credentials in hand until they expire, else those of a run: the one in progress,
  // or one it starts. Unauthenticated "getting credentials: ..." with client-go's words when the
  // program cannot run, fails, or prints no usable ExecCredential (the next Get runs it again;
  // `clock` paces client-go's help for a program not found in PATH);
  // DeadlineExceeded when the run has not ended within `timeout`, and Cancelled once `cancel` is
  // set (the run goes on).
  absl::StatusOr<std::shared_ptr<const ExecCredential>> Get(
      const Cancellation* cancel = nullptr, absl::Duration timeout = absl::InfiniteDuration())
      ABSL_LOCKS_EXCLUDED(mu_);

  // Refresh: the server answered 401 to a request made with `used` (credentials Get gave; null:
  // nothing to do). Unless a run has replaced them since, the program runs again now (or the
  // run in progress is awaited), as client-go's round tripper runs it before it returns the
  // refused answer; until it ends Get waits for it. A run that fails leaves `used` in hand (the
  // next refusal runs it again). Requests refused together share one run and its result, where
  // client-go's would each run the program again after a failure. OK when new credentials came
  // or none were needed; else the run's error without Get's "getting credentials: " (client-go
  // logs it), or DeadlineExceeded and Cancelled as Get's (the run goes on).
  absl::Status Refresh(const ExecCredential* used, const Cancellation* cancel = nullptr,
                       absl::Duration timeout = absl::InfiniteDuration()) ABSL_LOCKS_EXCLUDED(mu_);

  // How many times the program has been started.
  int runs() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Run: one run of the program, from start to its ExecCredential; ended early once stop_fd_ is
  // readable.
  absl::StatusOr<std::shared_ptr<const ExecCredential>> Run() const;
  // Finish: the run's thread, which records what Run gave.
  void Finish() ABSL_LOCKS_EXCLUDED(mu_);
  // Await waits for the run in progress, or one it starts, to end: OK then; Cancelled once
  // `*cancelled` is set, DeadlineExceeded at `deadline` (the error names `timeout`),
  // ResourceExhausted when no thread can start. The run goes on after an error.
  absl::Status Await(const bool* cancelled, absl::Time deadline, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Valid: credentials in hand that have not expired.
  bool Valid() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ExecCredentialConfig config_;
  const std::function<bool()> stdin_is_terminal_;
  const Clock& clock_;
  ClientMetrics* const metrics_;
  // An eventfd that the destructor makes readable, to end a run in progress; -1 when none could
  // be made (a run then ends only when its program does).
  const int stop_fd_;

  mutable absl::Mutex mu_;
  std::shared_ptr<const ExecCredential> credential_ ABSL_GUARDED_BY(mu_);
  // Runs started, and ended; the last ended run's result (an error without Get's "getting
  // credentials: ").
  int runs_ ABSL_GUARDED_BY(mu_) = 0;
  int ended_ ABSL_GUARDED_BY(mu_) = 0;
  absl::StatusOr<std::shared_ptr<const ExecCredential>> last_ ABSL_GUARDED_BY(mu_);
  // The thread of the last run started; joined before the next starts, and by the destructor.
  std::thread runner_ ABSL_GUARDED_BY(mu_);
  // When a program that is not found was last explained with client-go's help and the
  // installHint: the window's start, and how many times in it.
  absl::Time help_window_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int help_given_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace devmgr::kubeclient
