#include "common/metrics_scrape.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/unix_socket.h"

namespace devmgr {

absl::StatusOr<std::string> ScrapeMetrics(const std::filesystem::path& socket) {
  if (absl::Status valid = ValidateSocketPath(socket); !valid.ok()) return valid;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, socket.c_str(), socket.native().size());
  std::string response;
  absl::Status status;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    status = absl::UnavailableError(
        absl::StrCat("connect ", socket.string(), ": ", std::strerror(errno)));
  } else {
    const std::string request =
        "GET /metrics HTTP/1.1\r\nHost: devmgr\r\nConnection: close\r\n\r\n";
    if (::write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
      status = absl::UnavailableError(absl::StrCat("write: ", std::strerror(errno)));
    }
    char buffer[16384];
    for (ssize_t n; status.ok() && (n = ::read(fd, buffer, sizeof(buffer))) > 0;) {
      response.append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  const size_t body = response.find("\r\n\r\n");
  if (!absl::StartsWith(response, "HTTP/1.1 200") || body == std::string::npos) {
    return absl::UnavailableError(
        absl::StrCat("GET /metrics: not a 200 answer: ", response.substr(0, 64)));
  }
  return response.substr(body + 4);
}

}  // namespace devmgr
