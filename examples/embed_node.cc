// embed_node: a host that embeds the whole node (node/node.h), not only the device manager. It
// runs everything `devmgr serve` runs under ROOT, waits until RESOURCE has a healthy device,
// admits the Pod manifest FILE, prints each container's devices, and stops.
//   embed_node ROOT RESOURCE FILE   (docs/EMBEDDING.md)
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/time/clock.h"
#include "node/node.h"
#include "node/pod_manifest.h"

int Fail(const char* step, const absl::Status& status) {
  std::cerr << "embed_node: " << step << ": " << status << "\n";
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: embed_node ROOT RESOURCE FILE\n";
    return 2;
  }
  std::stringstream text;
  text << std::ifstream(argv[3]).rdbuf();
  devmgr::node::NodeOptions options;
  options.root_dir = argv[1];  // device-plugins/, plugins_registry/, pod-resources/, devmgr.sock
  // The manifest's claims are checked as the node's DRA features allow (their CEL selectors).
  auto manifest = devmgr::node::ParsePodManifest(text.str(), options.dra_features);
  if (!manifest.ok()) return Fail("read manifest", manifest.status());

  auto node = devmgr::node::Node::Start(options);
  if (!node.ok()) return Fail("start", node.status());

  // Plugins register on ROOT/device-plugins/kubelet.sock or in ROOT/plugins_registry/. Wait (30 s
  // at most) until the resource has a healthy device, as a node status loop would see it.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while ((*node)->manager().GetCapacity().allocatable[argv[2]] == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
  }

  // All or nothing, durable before it returns: the pod record and the checkpoint are written, and
  // the ResourceClaims that came with the pod are prepared by their DRA drivers.
  auto admitted = (*node)->admission().Admit(manifest->pod, manifest->claims);
  if (!admitted.ok()) return Fail("admit", admitted.status());
  for (const devmgr::node::ContainerOptions& container : *admitted) {
    for (const auto& device : container.options.devices) {
      std::cout << container.container_name << " " << device.host_path << "\n";
    }
    for (const auto& [key, value] : container.options.envs) {
      std::cout << container.container_name << " " << key << "=" << value << "\n";
    }
    for (const auto& cdi : container.options.cdi_devices) {
      std::cout << container.container_name << " " << cdi << "\n";
    }
  }
  (*node)->Stop();  // the pod stays recorded: a node started again on ROOT keeps its devices
  return 0;
}
