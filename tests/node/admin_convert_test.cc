// A structured pod given to the admin API is checked as a manifest's pod is.
#include "node/admin_convert.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"

namespace devmgr::node {
namespace {

namespace admin = devmgr::admin::v1;

admin::Pod GoodPod() {
  admin::Pod pod;
  pod.set_uid("uid-1");
  pod.set_namespace_("default");
  pod.set_name("trainer");
  admin::Container* container = pod.add_containers();
  container->set_name("main");
  container->set_type(admin::Container::REGULAR);
  (*container->mutable_devices())["example.com/gpu"] = 2;
  return pod;
}

// Names a manifest could not carry, resources that are no devices', and types the API does not
// define are refused with the field; before, only the UID, container names' presence and
// uniqueness, types' places and negative counts were checked, and a namespace "../..", a
// resource "../../x" or one with a NUL byte, and a container of type 99 were admitted.
TEST(AdminConvertTest, AStructuredPodIsCheckedAsAManifestsPodIs) {
  ASSERT_TRUE(PodFromProto(GoodPod()).ok());
  admin::Pod unnamed = GoodPod();
  unnamed.clear_name();
  unnamed.clear_namespace_();
  EXPECT_TRUE(PodFromProto(unnamed).ok()) << "as before, a name and a namespace may be left out";

  struct Case {
    const char* what;
    void (*change)(admin::Pod&);
    std::string error;
  };
  const std::vector<Case> cases = {
      {"namespace", [](admin::Pod& pod) { pod.set_namespace_("../.."); },
       "pod.namespace: Invalid value: \"../..\": a lowercase RFC 1123 label must consist of"},
      {"name", [](admin::Pod& pod) { pod.set_name("Trainer"); },
       "pod.name: Invalid value: \"Trainer\": a lowercase RFC 1123 subdomain must consist of"},
      {"container name", [](admin::Pod& pod) { pod.mutable_containers(0)->set_name("a/b"); },
       "pod.containers[0].name: Invalid value: \"a/b\": a lowercase RFC 1123 label"},
      {"resource path",
       [](admin::Pod& pod) { (*pod.mutable_containers(0)->mutable_devices())["../../x"] = 1; },
       "pod.containers[0].devices[\"../../x\"]: Invalid value: \"../../x\": "},
      {"resource with a NUL",
       [](admin::Pod& pod) {
         (*pod.mutable_containers(0)->mutable_devices())[std::string("example.com/g\0", 14)] = 1;
       },
       "pod.containers[0].devices[\"example.com/g"},
      {"standard resource",
       [](admin::Pod& pod) { (*pod.mutable_containers(0)->mutable_devices())["cpu"] = 1; },
       "pod.containers[0].devices[\"cpu\"]: Invalid value: \"cpu\": not an extended resource"},
      {"type",
       [](admin::Pod& pod) {
         pod.mutable_containers(0)->set_type(static_cast<admin::Container::Type>(99));
       },
       "pod.containers[0].type: unknown type 99"},
  };
  for (const Case& test : cases) {
    admin::Pod pod = GoodPod();
    test.change(pod);
    const absl::StatusOr<devicemanager::Pod> converted = PodFromProto(pod);
    EXPECT_EQ(converted.status().code(), absl::StatusCode::kInvalidArgument) << test.what;
    EXPECT_TRUE(absl::StartsWith(converted.status().message(), test.error))
        << test.what << ": " << converted.status().message();
  }
}

}  // namespace
}  // namespace devmgr::node
