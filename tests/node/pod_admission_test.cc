// node::PodAdmission in a started node: a pod admitted again under its UID.
#include "node/pod_admission.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "node/node.h"
#include "tests/testlib/temp_dir.h"

namespace devmgr::node {
namespace {

using ::devmgr::testing::TempDir;

devicemanager::Pod OnePod(const std::string& name, const std::string& container_name) {
  devicemanager::Pod pod;
  pod.uid = "uid-1";
  pod.name = name;
  pod.namespace_name = "default";
  devicemanager::Container container;
  container.name = container_name;
  pod.containers.push_back(container);
  return pod;
}

// The same pod again gets its options; another pod under its UID is refused, the refusal saying
// what differs. Before, every refusal said "with other containers", a pod of another name too.
TEST(PodAdmissionTest, AnotherPodUnderATakenUidIsRefusedSayingWhatDiffers) {
  TempDir dir;
  NodeOptions options;
  options.root_dir = dir.Sub("root");
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Start(options);
  ASSERT_TRUE(node.ok()) << node.status();
  PodAdmission& admission = (*node)->admission();
  ASSERT_TRUE(admission.Admit(OnePod("p", "c")).ok());
  EXPECT_TRUE(admission.Admit(OnePod("p", "c")).ok());

  const absl::Status renamed = admission.Admit(OnePod("q", "c")).status();
  EXPECT_EQ(renamed.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(renamed.message(), "pod uid-1 is already admitted as default/p; remove it first");
  const absl::Status other = admission.Admit(OnePod("p", "d")).status();
  EXPECT_EQ(other.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(other.message(),
            "pod uid-1 is already admitted with other containers; remove it first");
}

}  // namespace
}  // namespace devmgr::node
