#include "podresources/client_gate.h"

#include "absl/strings/str_cat.h"

namespace devmgr::podresources {

grpc::Status RateLimitedStatus() {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, kRateLimitedMessage);
}

ClientGate::ClientGate(const RateLimitOptions& rate_limit, int max_watch_streams_per_client,
                       const Clock& clock, const CredentialsListener* listener)
    : listener_(listener),
      max_streams_(max_watch_streams_per_client),
      limiter_(rate_limit, clock) {}

std::string ClientGate::Identify(const grpc::ServerContextBase& context) const {
  std::string peer = context.peer();
  if (listener_ != nullptr) {
    if (std::optional<PeerCredentials> credentials = listener_->Lookup(peer)) {
      return absl::StrCat("uid=", credentials->uid, " pid=", credentials->pid);
    }
  }
  return peer;
}

bool ClientGate::AllowRequest(const std::string& client) { return limiter_.Allow(client); }

bool ClientGate::AcquireStream(const std::string& client) {
  absl::MutexLock lock(&mu_);
  int& count = streams_[client];
  if (count >= max_streams_) {
    if (count == 0) streams_.erase(client);
    return false;
  }
  ++count;
  return true;
}

void ClientGate::ReleaseStream(const std::string& client) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(client);
  if (it == streams_.end()) return;
  if (--it->second <= 0) streams_.erase(it);
}

}  // namespace devmgr::podresources
