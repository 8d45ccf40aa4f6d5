// ExecCredentialPlugin: credentials from the program a kubeconfig's user names (its `exec`),
// in client-go's protocol (client.authentication.k8s.io v1 and v1beta1): the program gets the
// process's environment, the user's `env` over it and KUBERNETES_EXEC_INFO (an ExecCredential
// whose spec says whether it may talk to the user, and with provideClusterInfo the cluster), and
// prints an ExecCredential whose status holds a token, a client certificate and key, or both,
// and when they expire.
//
// As client-go's exec authenticator: the program runs at the first request and again once its
// credentials have expired, or after the server refused them (401); one run at a time, and
// requests wait for it. Its standard error is the process's; its standard input is the
// process's only when it may be interactive (interactiveMode IfAvailable or Always, and standard
// input a terminal), /dev/null otherwise. Like client-go, no time limit is put on a run: a
// program that hangs holds every request that needs credentials.
//
// Thread-safety: every method may be called from any thread at once.
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
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
  // `stdin_is_terminal` decides interactiveMode IfAvailable and Always, as client-go's look at
  // the process's standard input; `clock` tells when credentials have expired.
  ExecCredentialPlugin(ExecCredentialConfig config, bool stdin_is_terminal,
                       const Clock& clock = RealClock());
  ExecCredentialPlugin(const ExecCredentialPlugin&) = delete;
  ExecCredentialPlugin& operator=(const ExecCredentialPlugin&) = delete;

  // Get: the credentials in hand until they expire, else those of a new run. Unauthenticated
  // "getting credentials: ..." with client-go's words when the program cannot run, fails, or
  // prints no usable ExecCredential; the next Get runs it again.
  absl::StatusOr<std::shared_ptr<const ExecCredential>> Get() ABSL_LOCKS_EXCLUDED(mu_);

  // Refused: the server answered 401 to a request made with `used`. Unless a run has replaced
  // them since, the next Get runs the program again.
  void Refused(const ExecCredential* used) ABSL_LOCKS_EXCLUDED(mu_);

  // How many times the program has been started.
  int runs() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::StatusOr<std::shared_ptr<const ExecCredential>> Run() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ExecCredentialConfig config_;
  const bool stdin_is_terminal_;
  const Clock& clock_;

  mutable absl::Mutex mu_;
  std::shared_ptr<const ExecCredential> credential_ ABSL_GUARDED_BY(mu_);
  int runs_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace devmgr::kubeclient
