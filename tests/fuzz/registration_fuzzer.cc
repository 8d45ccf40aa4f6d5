// libFuzzer target for the checks a device plugin's registration passes, on both paths, with
// the messages a plugin controls. The input is parsed as a RegisterRequest (kubelet.sock:
// CheckRegisterRequest, then ResolvePluginSocket) and as a PluginInfo (probe mode through
// plugins_registry: the watcher's CheckPluginInfo, then the handler's CheckProbePlugin and
// ResolveProbeSocket). The folders are laid out as a hostile plugin could leave them: beside
// real sockets, a regular file, a folder, a symlink to a socket outside and a symlinked folder
// leading outside. A PluginInfo endpoint that starts with '@' has it replaced by the fixture's
// folder, so that mutations can reach paths inside it.
//
// Invariants: the resource-name check agrees with Kubernetes' grammar read independently (as
// regular expressions, from the wire contract); refusals carry upstream's texts; the watcher
// refuses only over-long names and endpoints with a NUL byte (as upstream, where the endpoint
// points is the handler's business); and probe mode dials exactly the paths that, lexically
// normalised, are absolute, short enough for a socket address, and where stat (following
// symlinks, as the dial does) finds a socket.
#include <google/protobuf/stubs/logging.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/go_quote.h"
#include "devicemanager/validation.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "pluginregistration/v1/api.pb.h"
#include "pluginwatcher/plugin_info_check.h"
#include "tests/fuzz/invariant.h"
#include "tests/testlib/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using devmgr::fuzz::Invariant;

// WatcherOptions' default.
constexpr size_t kMaxNameBytes = 317;

void MakeSocket(const fs::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  // The socket file stays after close: a stale socket is still a socket.
  Invariant(fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0,
            "fixture: bind a socket");
  ::close(fd);
}

// The plugin folder (kubelet.sock's), the registry folder (probe mode) and a folder outside
// both, each with what a hostile plugin could plant.
struct Fixture {
  devmgr::testing::TempDir dir;
  fs::path plugin_dir = dir.Sub("dp");
  fs::path registry = dir.Sub("reg");

  Fixture() {
    const fs::path outside = dir.Sub("out");
    for (const fs::path& folder : {plugin_dir, registry, outside, registry / "sub"}) {
      fs::create_directory(folder);
    }
    MakeSocket(outside / "out.sock");
    for (const fs::path& folder : {plugin_dir, registry}) {
      MakeSocket(folder / "gpu.sock");
      std::ofstream(folder / "file") << "not a socket";
      fs::create_directory(folder / "dir");
      fs::create_symlink(outside / "out.sock", folder / "link.sock");
      fs::create_symlink(outside, folder / "dirlink");
    }
    MakeSocket(registry / "sub" / "dev.sock");
  }
};

const Fixture& GetFixture() {
  static const Fixture fixture;
  return fixture;
}

// Kubernetes' IsExtendedResourceName as the wire contract states it: contains '/', no
// "kubernetes.io/", does not start with "requests.", and "requests." + name is a qualified
// name (a DNS-1123 subdomain prefix of at most 253 characters, '/', and a name part of at most
// 63 characters).
bool DocumentedExtendedResourceName(const std::string& name) {
  static const std::regex kSubdomain(
      "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  static const std::regex kNamePart("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]");
  if (!absl::StrContains(name, '/') || absl::StrContains(name, "kubernetes.io/") ||
      absl::StartsWith(name, "requests.")) {
    return false;
  }
  const std::vector<std::string> parts = absl::StrSplit(absl::StrCat("requests.", name), '/');
  if (parts.size() != 2) return false;
  // Lengths first: they bound the regular expressions' work (std::regex recurses per character).
  return parts[0].size() <= 253 && parts[1].size() <= 63 &&
         std::regex_match(parts[0], kSubdomain) && std::regex_match(parts[1], kNamePart);
}

// ResolveProbeSocket's contract: no NUL byte, and the path, lexically normalised, absolute, at
// most 107 bytes (a socket address), without a comma (gRPC splits there), and where stat finds
// a socket or nothing (the dial waits for one).
bool DocumentedDialableSocket(const std::string& endpoint) {
  if (absl::StrContains(endpoint, '\0')) return false;
  const std::string normal = fs::path(endpoint).lexically_normal().string();
  if (!absl::StartsWith(normal, "/") || normal.size() > 107 || absl::StrContains(normal, ',')) {
    return false;
  }
  struct stat info {};
  if (::stat(normal.c_str(), &info) != 0) return errno == ENOENT;
  return S_ISSOCK(info.st_mode);
}

// A kubelet.sock endpoint as documented: a plain file name (not empty, ".", "..", no '/' or NUL)
// whose path in the plugin folder a socket address holds with no ',', and where a socket (not a
// symlink) is or nothing yet.
bool DocumentedPluginSocketName(const fs::path& plugin_dir, const std::string& endpoint) {
  if (endpoint.empty() || endpoint == "." || endpoint == ".." ||
      endpoint.find_first_of(std::string("/\0", 2)) != std::string::npos) {
    return false;
  }
  const std::string path = (plugin_dir / endpoint).string();
  if (path.size() > 107 || absl::StrContains(path, ',')) return false;
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return errno == ENOENT;
  return S_ISSOCK(info.st_mode);
}

void CheckKubeletSocketRegistration(const v1beta1::RegisterRequest& request) {
  const absl::Status status =
      devmgr::devicemanager::CheckRegisterRequest(request.version(), request.resource_name());
  const bool version_ok = request.version() == "v1beta1";
  const bool name_ok = DocumentedExtendedResourceName(request.resource_name());
  Invariant(status.ok() == (version_ok && name_ok),
            "Register accepts exactly v1beta1 with an extended resource name");
  if (!status.ok()) {
    Invariant(status.code() == absl::StatusCode::kInvalidArgument, "refusal is InvalidArgument");
    Invariant(status.message() ==
                  (!version_ok
                       ? absl::StrCat("requested API version ", devmgr::GoQuote(request.version()),
                                      " is not supported by kubelet. Supported version "
                                      "is [\"v1beta1\"]")
                       : absl::StrCat("the ResourceName ", devmgr::GoQuote(request.resource_name()),
                                      " is invalid")),
              "Register refuses in upstream's words, version first");
  }

  const fs::path& plugin_dir = GetFixture().plugin_dir;
  const absl::StatusOr<fs::path> socket =
      devmgr::devicemanager::ResolvePluginSocket(plugin_dir, request.endpoint());
  Invariant(socket.ok() == DocumentedPluginSocketName(plugin_dir, request.endpoint()),
            "Register's endpoint: a plain file name in the plugin folder where a socket is or "
            "nothing yet (the fixture's file, folder and symlinks refused)");
  if (socket.ok()) {
    Invariant(*socket == plugin_dir / request.endpoint(), "the socket resolved is the one named");
  } else {
    Invariant(socket.status().code() == absl::StatusCode::kInvalidArgument ||
                  socket.status().code() == absl::StatusCode::kFailedPrecondition,
              "a bad endpoint is InvalidArgument, something not a socket FailedPrecondition");
  }
}

void CheckProbeRegistration(pluginregistration::PluginInfo info) {
  const Fixture& fixture = GetFixture();
  std::string endpoint = info.endpoint();
  if (absl::StartsWith(endpoint, "@")) {
    endpoint = absl::StrCat(fixture.dir.path().string(), endpoint.substr(1));
  }
  // The watcher's default for an empty endpoint: the registration socket itself.
  if (endpoint.empty()) endpoint = (fixture.registry / "gpu.sock").string();
  info.set_endpoint(endpoint);

  const absl::Status watcher = devmgr::pluginwatcher::CheckPluginInfo(info, kMaxNameBytes);
  Invariant(
      watcher.ok() == (info.name().size() <= kMaxNameBytes && !absl::StrContains(endpoint, '\0')),
      "the watcher refuses exactly an over-long name or an endpoint with a NUL byte");
  if (!watcher.ok()) {
    Invariant(watcher.code() == absl::StatusCode::kInvalidArgument,
              "the watcher refuses with InvalidArgument");
  }

  const std::vector<std::string> versions(info.supported_versions().begin(),
                                          info.supported_versions().end());
  const absl::Status valid = devmgr::devicemanager::CheckProbePlugin(info.name(), versions);
  const bool version_ok = std::find(versions.begin(), versions.end(), "v1beta1") != versions.end();
  const bool name_ok = DocumentedExtendedResourceName(info.name());
  Invariant(valid.ok() == (version_ok && name_ok),
            "ValidatePlugin accepts exactly v1beta1 among the versions and an extended resource "
            "name");
  if (!valid.ok()) {
    Invariant(valid.message() ==
                  (!version_ok ? absl::StrCat("manager version, v1beta1, is not among plugin "
                                              "supported versions [",
                                              absl::StrJoin(versions, " "), "]")
                               : absl::StrCat("invalid name of device plugin socket: the "
                                              "ResourceName ",
                                              devmgr::GoQuote(info.name()), " is invalid")),
              "ValidatePlugin refuses in upstream's words, versions first");
  }

  const absl::StatusOr<fs::path> socket = devmgr::devicemanager::ResolveProbeSocket(endpoint);
  Invariant(socket.ok() == DocumentedDialableSocket(endpoint),
            "probe mode dials exactly the absolute, socket-sized paths where a socket is");
  if (socket.ok()) {
    Invariant(*socket == fs::path(endpoint).lexically_normal(),
              "the socket dialled is the one checked");
  }
}

void IgnoreProtobufLog(google::protobuf::LogLevel /*level*/, const char* /*filename*/, int /*line*/,
                       const std::string& /*message*/) {}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // Protobuf logs every string field with invalid UTF-8; the refusal itself is what counts.
  google::protobuf::SetLogHandler(&IgnoreProtobufLog);
  GetFixture();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // gRPC parses the same way; what does not parse (invalid UTF-8 in a string field among it)
  // is refused before any handler runs.
  v1beta1::RegisterRequest request;
  if (request.ParseFromArray(data, static_cast<int>(size))) CheckKubeletSocketRegistration(request);
  pluginregistration::PluginInfo info;
  if (info.ParseFromArray(data, static_cast<int>(size))) CheckProbeRegistration(std::move(info));
  return 0;
}
