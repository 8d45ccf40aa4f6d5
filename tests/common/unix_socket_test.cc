#include "common/unix_socket.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/connection_acceptor.h"
#include "common/placed_socket.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr {
namespace {

using testing::TempDir;

// BindSocket binds a unix socket at `path` and returns its descriptor (-1 on failure).
int BindSocket(const std::filesystem::path& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Binds a unix socket at `path` (left in place when the fd is closed).
void MakeSocket(const std::filesystem::path& path) {
  const int fd = BindSocket(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
}

TEST(UnixSocketTest, ValidatesPaths) {
  EXPECT_TRUE(ValidateSocketPath("/tmp/x.sock").ok());
  EXPECT_EQ(ValidateSocketPath("x.sock").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateSocketPath("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateSocketPath("/" + std::string(106, 'a')).ok());
  EXPECT_EQ(ValidateSocketPath("/" + std::string(107, 'a')).code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status comma = ValidateSocketPath("/run/a.sock,b");
  EXPECT_EQ(comma.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comma.message(),
            "socket path \"/run/a.sock,b\" contains ',', which gRPC reads as a separator between "
            "addresses");
  // Without gRPC a comma is only a character.
  EXPECT_TRUE(ValidateSocketAddress("/run/a.sock,b").ok());
  EXPECT_EQ(ValidateSocketAddress("x.sock").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateSocketAddress("/" + std::string(107, 'a')).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckDialable("run/a.sock").ok());
  EXPECT_EQ(CheckDialable("run,1/a.sock").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(UnixTarget("/run/a.sock"), "unix:/run/a.sock");
  EXPECT_EQ(UnixTarget("/run/%2E?x#y.sock"), "unix:/run/%252E%3Fx%23y.sock");
  // "unix://run" would make "run" a URI's authority, not a part of the path.
  EXPECT_EQ(UnixTarget("//run/a.sock"), "unix:/run/a.sock");
  // A path relative to the working folder, as a DRA driver may name its endpoint.
  EXPECT_EQ(UnixTarget("run/a?.sock"), "unix:run/a%3F.sock");
}

// A server listens, and a client connects, at a path as long as a socket address holds. Through
// "unix:///" + the path, gRPC's server refused to listen at 106 or 107 bytes.
TEST(UnixSocketTest, ServesAndDialsAtTheLongestPath) {
  TempDir dir;
  const std::string folder = dir.path().string() + "/";
  const std::filesystem::path path =
      folder + std::string(kMaxUnixSocketPathBytes - folder.size(), 's');
  ASSERT_TRUE(ValidateSocketPath(path).ok());
  grpc::CallbackGenericService service;
  grpc::ServerBuilder builder;
  builder.RegisterCallbackGenericService(&service);
  builder.AddListeningPort(UnixTarget(path), grpc::InsecureServerCredentials());
  const std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(IsSocket(path));
  const auto channel = grpc::CreateChannel(UnixTarget(path), grpc::InsecureChannelCredentials());
  EXPECT_TRUE(channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(30))));
  server->Shutdown();
}

// A socket for its user alone is 0600 whatever the umask: one that leaves others in (0) or takes
// the user's own bits away (0277, a socket no one could connect to); the umask is not changed.
TEST(UnixSocketTest, AnOwnerOnlyListenerIsTheUsersWhateverTheUmask) {
  TempDir dir;
  for (const mode_t mask : {mode_t{0}, mode_t{0277}}) {
    SCOPED_TRACE(mask);
    const std::filesystem::path path = dir.Sub(absl::StrCat("owner-", mask, ".sock"));
    const mode_t previous = ::umask(mask);
    absl::StatusOr<int> fd = ListenUnix(path, /*owner_only=*/true);
    const mode_t during = ::umask(previous);
    ASSERT_TRUE(fd.ok()) << fd.status();
    EXPECT_EQ(during, mask);
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(ConnectError(path), 0);
    ::close(*fd);
  }
}

// A stopped acceptor refuses a client at once, where its socket open until the acceptor was
// destroyed queued the client (a `devmgr pods list` during a daemon's stop waited for its
// timeout).
TEST(UnixSocketTest, AStoppedAcceptorRefusesClients) {
  TempDir dir;
  const std::filesystem::path path = dir.Sub("accept.sock");
  absl::StatusOr<int> fd = ListenUnix(path);
  ASSERT_TRUE(fd.ok()) << fd.status();
  ConnectionAcceptor::Options options;
  options.name = "test";
  absl::StatusOr<std::unique_ptr<ConnectionAcceptor>> acceptor =
      ConnectionAcceptor::Create(*fd, std::move(options));
  ASSERT_TRUE(acceptor.ok()) << acceptor.status();
  grpc::CallbackGenericService service;
  grpc::ServerBuilder builder;
  builder.RegisterCallbackGenericService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  (*acceptor)->Start(*server);
  EXPECT_EQ(ConnectError(path), 0);
  (*acceptor)->Stop();
  EXPECT_EQ(ConnectError(path), ECONNREFUSED);
  server->Shutdown();
}

TEST(UnixSocketTest, RemovesOnlySockets) {
  TempDir dir;
  MakeSocket(dir.Sub("a.sock"));
  MakeSocket(dir.Sub("b.sock"));
  std::ofstream(dir.Sub("kubelet_internal_checkpoint")) << "{}";
  std::filesystem::create_directory(dir.Sub("sub"));
  MakeSocket(dir.Sub("sub/nested.sock"));
  std::ofstream(dir.Sub("target")) << "x";
  std::filesystem::create_symlink(dir.Sub("target"), dir.Sub("link.sock"));

  EXPECT_TRUE(IsSocket(dir.Sub("a.sock")));
  EXPECT_FALSE(IsSocket(dir.Sub("link.sock")));
  ASSERT_TRUE(RemoveSocketsIn(dir.path()).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("a.sock")));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("b.sock")));
  EXPECT_TRUE(std::filesystem::exists(dir.Sub("kubelet_internal_checkpoint")));
  EXPECT_TRUE(IsSocket(dir.Sub("sub/nested.sock")));
  EXPECT_TRUE(std::filesystem::is_symlink(dir.Sub("link.sock")));
  EXPECT_TRUE(std::filesystem::exists(dir.Sub("target")));
}

TEST(UnixSocketTest, RemoveStaleSocketRefusesOtherFiles) {
  TempDir dir;
  EXPECT_TRUE(RemoveStaleSocket(dir.Sub("missing")).ok());
  std::ofstream(dir.Sub("file")) << "keep";
  EXPECT_EQ(RemoveStaleSocket(dir.Sub("file")).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(std::filesystem::exists(dir.Sub("file")));
  MakeSocket(dir.Sub("s"));
  EXPECT_TRUE(RemoveStaleSocket(dir.Sub("s")).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("s")));
}

// SomeoneListens tells a live listener from a socket file its process left behind; ConnectError
// says what a connection met.
TEST(UnixSocketTest, SomeoneListensOnlyWhereAProcessAccepts) {
  TempDir dir;
  const std::filesystem::path live = dir.Sub("live.sock");
  const int fd = BindSocket(live);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  EXPECT_TRUE(SomeoneListens(live));
  EXPECT_EQ(ConnectError(live), 0);
  ::close(fd);
  EXPECT_FALSE(SomeoneListens(live)) << "the file stays, nobody accepts";
  EXPECT_EQ(ConnectError(live), ECONNREFUSED);

  MakeSocket(dir.Sub("left.sock"));
  EXPECT_FALSE(SomeoneListens(dir.Sub("left.sock")));
  std::ofstream(dir.Sub("file")) << "x";
  EXPECT_FALSE(SomeoneListens(dir.Sub("file")));
  EXPECT_FALSE(SomeoneListens(dir.Sub("absent")));
  EXPECT_EQ(ConnectError(dir.Sub("absent")), ENOENT);
  EXPECT_EQ(ConnectError("relative.sock"), EINVAL);
}

// Whether a process serves a path, told as a status: yes, no, or no one can tell, when the look
// or the connection fails otherwise (a socket this process may not connect to, or one in a
// folder it may not search: EACCES). Those are made in a child that is not root (root's calls
// ignore the modes).
TEST(UnixSocketTest, NobodyServesSaysWhenNoOneCanTell) {
  TempDir dir;
  const std::filesystem::path live = dir.Sub("live.sock");
  const int fd = BindSocket(live);
  ASSERT_GE(fd, 0);
  absl::Cleanup close_fd = [fd] { ::close(fd); };
  ASSERT_EQ(::listen(fd, 1), 0);
  const absl::Status served = NobodyServes(live);
  EXPECT_EQ(served.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(served.message(), absl::StrCat("a process serves ", live.string()));
  MakeSocket(dir.Sub("left.sock"));
  EXPECT_TRUE(NobodyServes(dir.Sub("left.sock")).ok());
  std::ofstream(dir.Sub("file")) << "x";
  EXPECT_TRUE(NobodyServes(dir.Sub("file")).ok());
  EXPECT_TRUE(NobodyServes(dir.Sub("file") / "below").ok());
  EXPECT_TRUE(NobodyServes(dir.Sub("absent")).ok());
  // A datagram socket, bound by a live process: no stream connection is accepted there.
  const std::filesystem::path datagram = dir.Sub("datagram.sock");
  const int dgram = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(dgram, 0);
  absl::Cleanup close_dgram = [dgram] { ::close(dgram); };
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  datagram.string().copy(address.sun_path, sizeof(address.sun_path) - 1);
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API takes sockaddr*
  ASSERT_EQ(::bind(dgram, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(ConnectError(datagram), EPROTOTYPE);
  EXPECT_TRUE(NobodyServes(datagram).ok());

  const std::filesystem::path closed = dir.Sub("closed");
  std::filesystem::create_directory(closed);
  MakeSocket(closed / "kubelet.sock");
  ASSERT_EQ(::chmod(closed.c_str(), 0), 0);
  absl::Cleanup reopen = [&] { ::chmod(closed.c_str(), 0755); };
  ASSERT_EQ(::chmod(live.c_str(), 0), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::geteuid() == 0 && ::setuid(65534) != 0) ::_exit(10);
    int failed = 0;
    for (const std::filesystem::path& path : {live, closed / "kubelet.sock"}) {
      const absl::Status unknown = NobodyServes(path);
      const bool named = unknown.message() == absl::StrCat("cannot tell whether a process serves ",
                                                           path.string(), ": Permission denied");
      failed = failed * 4 + (unknown.code() != absl::StatusCode::kPermissionDenied ? 1 : 0) +
               (named ? 0 : 2);
    }
    ::_exit(failed == 0 ? 0 : 20 + failed);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 10) GTEST_SKIP() << "root here cannot become an unprivileged user";
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "20 + 4 x (the connection's) + (the look's): 1 another status than PermissionDenied, "
         "2 another message";
}

// A socket bound under a temporary name and moved into place is reached at the path, and the
// one it replaced is gone; nothing that is not a socket is ever replaced.
TEST(UnixSocketTest, MovesAListeningSocketIntoPlace) {
  TempDir dir;
  const std::filesystem::path path = dir.Sub("plugin.sock");
  const std::filesystem::path bound = TemporarySocketPath(path);
  EXPECT_EQ(bound.parent_path(), dir.path());
  EXPECT_EQ(bound.filename().string().front(), '.') << "watchers skip it";
  EXPECT_NE(TemporarySocketPath(path), bound);
  MakeSocket(path);
  const int fd = BindSocket(bound);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_TRUE(MoveSocketInto(bound, path).ok());
  EXPECT_FALSE(std::filesystem::exists(bound));
  EXPECT_TRUE(SomeoneListens(path));
  ::close(fd);

  const std::filesystem::path file = dir.Sub("file");
  std::ofstream(file) << "keep";
  MakeSocket(bound);
  EXPECT_EQ(MoveSocketInto(bound, file).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(IsSocket(bound));
  std::ifstream in(file);
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "keep");
  EXPECT_EQ(MoveSocketInto(dir.Sub("absent"), dir.Sub("to")).code(), absl::StatusCode::kNotFound);
}

// Temporary names are hidden, beside the path, and never the same twice: random, so that
// processes that share a pid (each pid 1 in its container) do not bind one another's.
TEST(UnixSocketTest, TemporarySocketPathsAreHiddenBesideThePathAndDistinct) {
  std::set<std::string> names;
  for (int i = 0; i < 1000; ++i) {
    const std::filesystem::path temporary = TemporarySocketPath("/run/p/dra.sock");
    EXPECT_EQ(temporary.parent_path(), "/run/p");
    const std::string name = temporary.filename().string();
    ASSERT_EQ(name.size(), 13u) << name;
    EXPECT_EQ(name.front(), '.');
    EXPECT_EQ(name.find_first_not_of("0123456789abcdef", 1), std::string::npos) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 1000u);
}

// A folder that leaves less room under the limit gets a shorter temporary name, so that any
// path that fits binds (unless its own name is shorter than the shortest temporary one), still
// hidden and still apart; a path that cannot is refused with a reason, before anything is bound.
TEST(PlacedSocketTest, AFolderNearTheLimitGetsAShorterTemporaryName) {
  // A folder of `length` bytes.
  const auto folder = [](size_t length) {
    return std::filesystem::path("/" + std::string(length - 1, 'f'));
  };
  // "/fff.../dra.sock": 107 bytes, the longest path there is.
  const std::filesystem::path longest = folder(kMaxUnixSocketPathBytes - 9) / "dra.sock";
  ASSERT_EQ(longest.native().size(), kMaxUnixSocketPathBytes);
  std::set<std::string> names;
  for (int i = 0; i < 1000; ++i) {
    const PlacedSocket placed(longest);
    EXPECT_TRUE(placed.Check().ok()) << placed.Check();
    const std::string name = placed.bind_path().filename().string();
    EXPECT_EQ(placed.bind_path().native().size(), kMaxUnixSocketPathBytes) << name;
    EXPECT_EQ(name.front(), '.');
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 1000u);

  const PlacedSocket tight(folder(kMaxUnixSocketPathBytes - 5) / "a.s");
  ASSERT_TRUE(ValidateSocketPath(tight.path()).ok());
  const absl::Status refused = tight.Check();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("leaves no room to bind first"), absl::string_view::npos)
      << refused;
  EXPECT_EQ(PlacedSocket(folder(kMaxUnixSocketPathBytes - 3) / "abcdef.sock").Check().code(),
            absl::StatusCode::kInvalidArgument)
      << "over the limit itself";
}

// Two processes' sockets placed at one path in turn (a plugin's old and new instance): each
// replaces the one before, and only the socket still at the path is removed by its owner.
TEST(PlacedSocketTest, RemovesOnlyTheSocketItPlaced) {
  TempDir dir;
  const std::filesystem::path path = dir.Sub("p.sock");
  PlacedSocket old_one(path);
  PlacedSocket new_one(path);
  EXPECT_NE(old_one.bind_path(), new_one.bind_path());
  EXPECT_EQ(old_one.bind_path().parent_path(), dir.path());
  EXPECT_EQ(old_one.bind_path().filename().string().front(), '.');
  MakeSocket(old_one.bind_path());
  ASSERT_TRUE(old_one.Place().ok());
  EXPECT_TRUE(old_one.id().has_value());
  EXPECT_FALSE(std::filesystem::exists(old_one.bind_path()));
  MakeSocket(new_one.bind_path());
  ASSERT_TRUE(new_one.Place().ok());

  EXPECT_TRUE(old_one.Remove().ok());
  EXPECT_TRUE(IsSocket(path)) << "the newer socket was removed";
  EXPECT_FALSE(old_one.id().has_value());
  // Changed since it was placed (its time with it), still the same socket.
  std::filesystem::permissions(path, std::filesystem::perms(0600));
  EXPECT_TRUE(new_one.Remove().ok());
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(PlacedSocketTest, NeverReplacesWhatIsNotASocket) {
  TempDir dir;
  const std::filesystem::path path = dir.Sub("p.sock");
  std::ofstream(path) << "checkpoint";
  PlacedSocket placed(path);
  MakeSocket(placed.bind_path());
  EXPECT_EQ(placed.Place().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(placed.id().has_value());
  EXPECT_TRUE(IsSocket(placed.bind_path()));
  EXPECT_TRUE(placed.Remove().ok());
  std::string content;
  std::getline(std::ifstream(path), content);
  EXPECT_EQ(content, "checkpoint");
}

}  // namespace
}  // namespace devmgr
