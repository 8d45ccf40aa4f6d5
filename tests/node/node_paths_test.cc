// NodePaths: the daemon's files under one spelling of the root, whatever spelling it was given.
#include <gtest/gtest.h>

#include <filesystem>

#include "node/node.h"

namespace devmgr::node {
namespace {

// A relative root is made absolute (the sockets must be), and "." and ".." parts and a trailing
// '/' are dropped (the state journal names its folders, so a restart must spell them as the run
// that wrote it did). Before, a relative root failed the start only after its checkpoint was
// written empty, and "/var/lib/kubelet/" replayed no journal record of "/var/lib/kubelet".
TEST(NodePathsTest, TheRootHasOneSpelling) {
  const std::filesystem::path cwd = std::filesystem::current_path();
  EXPECT_EQ(NodePaths("kubelet").root, cwd / "kubelet");
  EXPECT_EQ(NodePaths("/var/lib/kubelet/").root, "/var/lib/kubelet");
  EXPECT_EQ(NodePaths("/var/lib/./x/../kubelet").root, "/var/lib/kubelet");
  EXPECT_EQ(NodePaths("/var/lib/kubelet/").plugin_dir, "/var/lib/kubelet/device-plugins");
  EXPECT_EQ(NodePaths("/var/lib/kubelet").state_journal, "/var/lib/kubelet/devmgr_state_journal");
  EXPECT_EQ(NodePaths("/").root, "/");
}

}  // namespace
}  // namespace devmgr::node
