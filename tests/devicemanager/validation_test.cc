#include "devicemanager/validation.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "tests/testlib/temp_dir.h"

namespace devmgr::devicemanager {
namespace {

using ::devmgr::testing::TempDir;

// A bound unix socket file at `path` (no one listens; only the file type matters here).
class SocketFile {
 public:
  explicit SocketFile(const std::filesystem::path& path) : fd_(::socket(AF_UNIX, SOCK_STREAM, 0)) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  }
  ~SocketFile() { ::close(fd_); }

 private:
  int fd_;
};

TEST(ValidationTest, RegisterRequestTextsAndOrder) {
  EXPECT_TRUE(CheckRegisterRequest("v1beta1", "example.com/gpu").ok());
  absl::Status version = CheckRegisterRequest("v1alpha", "bad");  // version is checked first
  EXPECT_EQ(version.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(version.message(),
            "requested API version \"v1alpha\" is not supported by kubelet. Supported version is "
            "[\"v1beta1\"]");
  absl::Status name = CheckRegisterRequest("v1beta1", "gpu");
  EXPECT_EQ(name.message(), "the ResourceName \"gpu\" is invalid");
}

TEST(ValidationTest, ProbePluginTexts) {
  EXPECT_TRUE(CheckProbePlugin("example.com/gpu", {"v1alpha1", "v1beta1"}).ok());
  EXPECT_EQ(CheckProbePlugin("example.com/gpu", {"v1", "v2"}).message(),
            "manager version, v1beta1, is not among plugin supported versions [v1 v2]");
  EXPECT_EQ(CheckProbePlugin("gpu", {"v1beta1"}).message(),
            "invalid name of device plugin socket: the ResourceName \"gpu\" is invalid");
}

TEST(ValidationTest, PluginSocketMustStayInFolder) {
  TempDir dir;
  SocketFile socket(dir.Sub("gpu.sock"));
  std::ofstream(dir.Sub("file")) << "x";
  auto resolved = ResolvePluginSocket(dir.path(), "gpu.sock");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(*resolved, dir.Sub("gpu.sock"));

  for (const char* bad : {"", ".", "..", "../gpu.sock", "/tmp/gpu.sock", "sub/gpu.sock",
                          "gpu.sock/", "../../etc/passwd"}) {
    auto result = ResolvePluginSocket(dir.path(), bad);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ResolvePluginSocket(dir.path(), std::string(200, 'a')).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolvePluginSocket(dir.path(), "file").status().code(),
            absl::StatusCode::kFailedPrecondition);
  std::filesystem::create_symlink(dir.Sub("gpu.sock"), dir.Sub("link.sock"));
  EXPECT_EQ(ResolvePluginSocket(dir.path(), "link.sock").status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "a symlink in the plugin folder is not a plugin's socket";
  // Nothing there yet: dialled, and the dial waits for it as upstream's does.
  auto missing = ResolvePluginSocket(dir.path(), "missing.sock");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(*missing, dir.Sub("missing.sock"));
}

TEST(ValidationTest, ProbeSocketIsAnyAbsoluteSocketPath) {
  TempDir dir;
  std::filesystem::create_directory(dir.Sub("plugins"));
  SocketFile inside(dir.Sub("plugins") / "gpu.sock");
  SocketFile elsewhere(dir.Sub("gpu.sock"));

  for (const std::filesystem::path& socket :
       {dir.Sub("plugins") / "gpu.sock", dir.Sub("gpu.sock")}) {
    auto resolved = ResolveProbeSocket(socket.string());
    ASSERT_TRUE(resolved.ok()) << resolved.status();
    EXPECT_EQ(*resolved, socket);
  }
  auto climbing = ResolveProbeSocket((dir.Sub("plugins") / ".." / "gpu.sock").string());
  ASSERT_TRUE(climbing.ok()) << climbing.status();
  EXPECT_EQ(*climbing, dir.Sub("gpu.sock")) << "returned lexically normal";

  EXPECT_EQ(ResolveProbeSocket("plugins/gpu.sock").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveProbeSocket(dir.Sub("plugins").string()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Nothing there yet: dialled, and the dial waits for it as upstream's does.
  auto missing = ResolveProbeSocket(dir.Sub("missing.sock").string());
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_EQ(*missing, dir.Sub("missing.sock"));
  EXPECT_EQ(
      ResolveProbeSocket((dir.Sub("plugins") / "gpu.sock" / "under").string()).status().code(),
      absl::StatusCode::kFailedPrecondition)
      << "ENOTDIR: never a socket there";
  EXPECT_EQ(ResolveProbeSocket("/" + std::string(107, 'a')).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace devmgr::devicemanager
