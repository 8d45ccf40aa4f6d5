#include "plugins/generic/generic_plugin.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "plugins/generic/nvidia_gpus.h"
#include "plugins/generic/sysfs_numa.h"

namespace devmgr::plugins {
namespace {

using deviceplugin::DeviceInfo;
using deviceplugin::DeviceNode;
using deviceplugin::DeviceTree;
using deviceplugin::Health;

std::string DeviceIdOf(const std::string& path) {
  std::string id = path;
  if (absl::StartsWith(id, "/dev/")) id = id.substr(5);
  while (absl::StartsWith(id, "/")) id = id.substr(1);
  return absl::StrReplaceAll(id, {{"/", "_"}});
}

// IndexOf is {index}: the digits `path` ends with, or else `position`.
std::string IndexOf(const std::string& path, size_t position) {
  size_t start = path.size();
  while (start > 0 && absl::ascii_isdigit(static_cast<unsigned char>(path[start - 1]))) --start;
  return start < path.size() ? path.substr(start) : absl::StrCat(position);
}

std::string PrefixOf(const std::filesystem::path& root) {
  std::string prefix = root.string();
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  return prefix;
}

// EscapeGlob makes `text` match itself only, for the root folder in front of a pattern.
std::string EscapeGlob(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') escaped.push_back('\\');
    escaped.push_back(c);
  }
  return escaped;
}

DeviceNode NodeOf(const NodeSpec& spec, std::string host_path, const GenericGroup& group,
                  const DeviceValues& values) {
  return DeviceNode{std::move(host_path), Expand(spec.container_path, values),
                    spec.permissions.empty() ? group.permissions : spec.permissions};
}

std::map<std::string, std::string> ExpandAll(const std::map<std::string, std::string>& templates,
                                             const DeviceValues& values) {
  std::map<std::string, std::string> expanded;
  for (const auto& [key, value] : templates) expanded[key] = Expand(value, values);
  return expanded;
}

// Who holds a device node, for the error that names both claimants of one.
std::string DeviceOwner(const GenericGroup& group, const std::string& device_path) {
  return absl::StrCat("device ", device_path, " of group \"", group.name, "\"");
}

absl::Status Overlap(const std::string& path, const std::string& first, const std::string& second) {
  return absl::InvalidArgumentError(absl::StrCat(
      "groups overlap: ", path, " is claimed by ", first, " and by ", second,
      "; change the globs so that every node belongs to one device or is a shared path"));
}

}  // namespace

GenericScanner::GenericScanner(GenericConfig config, GenericScannerOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      dev_prefix_(PrefixOf(options_.dev_root)) {}

std::string GenericScanner::UnderRoot(const std::string& host_path) const {
  return dev_prefix_ + host_path;
}

bool GenericScanner::Exists(const std::string& host_path) const {
  struct stat st {};
  return ::stat(UnderRoot(host_path).c_str(), &st) == 0;
}

std::vector<std::string> GenericScanner::Glob(const std::string& pattern) const {
  glob_t result{};
  std::vector<std::string> paths;
  const std::string rooted = EscapeGlob(dev_prefix_) + pattern;
  // glob(3) is MT-unsafe only against concurrent changes of the locale and the environment,
  // which this program never makes after start. GLOB_MARK ends a folder's name with '/': a
  // folder (/dev/dri/by-path beside /dev/dri/renderD128) is no device, and a runtime given one
  // takes every device node under it.
  // NOLINTNEXTLINE(concurrency-mt-unsafe)
  if (::glob(rooted.c_str(), GLOB_MARK, nullptr, &result) == 0) {
    for (size_t i = 0; i < result.gl_pathc; ++i) {
      const absl::string_view match = result.gl_pathv[i];
      if (absl::EndsWith(match, "/")) continue;
      paths.emplace_back(match.substr(dev_prefix_.size()));
    }
  }
  ::globfree(&result);
  return paths;
}

std::vector<DeviceNode> GenericScanner::OwnNodes(const GenericGroup& group,
                                                 const SeenDevice& device,
                                                 const DeviceValues& values) const {
  std::vector<DeviceNode> nodes = {NodeOf(group.paths[device.entry], device.path, group, values)};
  for (const NodeSpec& extra : group.extra_paths) {
    std::string host_path = Expand(extra.path, values);
    if (extra.optional && !Exists(host_path)) continue;
    nodes.push_back(NodeOf(extra, std::move(host_path), group, values));
  }
  return nodes;
}

std::optional<std::string> GenericScanner::GpuFault(const GenericGroup& group,
                                                    const std::string& host_path) const {
  struct stat st {};
  if (::stat(UnderRoot(host_path).c_str(), &st) != 0) return std::nullopt;
  const std::optional<unsigned int> minor =
      S_ISCHR(st.st_mode) ? NvidiaGpuMinor(st.st_rdev, options_.proc_root) : std::nullopt;
  if (!minor.has_value()) return "not a device node of the NVIDIA driver";
  if (options_.gpu_health == nullptr) return "no NVML to ask";
  return options_.gpu_health->Fault(*minor, group.nvml->ignored_xids);
}

absl::StatusOr<DeviceTree> GenericScanner::ScanOnce() {
  // Shared nodes may be shared by several groups, but never be one device's own.
  std::map<std::string, std::string> shared_by;  // host path -> the first group sharing it
  for (const GenericGroup& group : config_.groups) {
    for (const NodeSpec& spec : group.shared_paths) {
      shared_by.emplace(spec.path, absl::StrCat("the sharedPaths of group \"", group.name, "\""));
    }
  }
  std::vector<Found> found;
  std::map<std::string, std::string> gpu_faults;  // device -> fault
  for (const GenericGroup& group : config_.groups) {
    std::vector<SeenDevice>& seen = seen_[group.name];
    for (size_t entry = 0; entry < group.paths.size(); ++entry) {
      for (std::string& path : Glob(group.paths[entry].path)) {
        auto same = [&](const SeenDevice& device) { return device.path == path; };
        if (std::none_of(seen.begin(), seen.end(), same)) seen.push_back({std::move(path), entry});
      }
    }
    std::vector<DeviceNode> shared;
    bool shared_present = true;
    for (const NodeSpec& spec : group.shared_paths) {
      const bool exists = Exists(spec.path);
      if (spec.optional && !exists) continue;
      shared.push_back(NodeOf(spec, spec.path, group, DeviceValues{}));
      shared_present = shared_present && exists;
    }

    for (size_t position = 0; position < seen.size(); ++position) {
      const SeenDevice& device = seen[position];
      Found& device_found = found.emplace_back();
      device_found.type = group.name;
      device_found.owner = DeviceOwner(group, device.path);
      const std::string id = DeviceIdOf(device.path);
      for (int replica = 0; replica < group.count; ++replica) {
        const DeviceValues values{
            .id = group.count == 1 ? id : absl::StrCat(id, "-", replica),
            .index = IndexOf(device.path, position),
            .path = device.path,
        };
        DeviceInfo info;
        info.nodes = OwnNodes(group, device, values);
        bool present = shared_present;
        for (const DeviceNode& node : info.nodes) {
          device_found.own_paths.push_back(node.host_path);
          const bool exists = Exists(node.host_path);
          if (exists) device_found.present_paths.insert(node.host_path);
          present = present && exists;
        }
        info.health = present ? Health::kHealthy : Health::kUnhealthy;
        info.mounts = group.mounts;
        info.envs = ExpandAll(group.env, values);
        info.annotations = ExpandAll(group.annotations, values);
        device_found.replicas.emplace_back(values.id, std::move(info));
      }
      if (group.nvml.has_value()) {
        if (std::optional<std::string> fault = GpuFault(group, device.path); fault.has_value()) {
          for (auto& replica : device_found.replicas) replica.second.health = Health::kUnhealthy;
          gpu_faults.emplace(device_found.owner, *std::move(fault));
        }
      }
      device_found.shared = shared;
    }
  }

  // Two matched paths can make one ID ("/dev/a/b" and "/dev/a_b" are both "a_b"). A group serves
  // an ID once: the device seen first keeps it, so that one that appears later never takes the
  // ID a pod may hold, and the other is left out before it claims any node. Both stay seen, so
  // a collision lasts as long as the plugin runs, and is logged once.
  std::set<std::string> collisions;
  {
    std::map<std::pair<std::string, std::string>, std::string> id_holder;  // (group, ID) -> owner
    std::vector<Found> kept;
    for (Found& device : found) {
      std::optional<std::string> collision;
      for (const auto& [id, info] : device.replicas) {
        if (auto it = id_holder.find({device.type, id}); it != id_holder.end()) {
          collision =
              absl::StrCat("ID \"", id, "\" is ", it->second, "'s: ", device.owner, " is left out");
          break;
        }
      }
      if (collision.has_value()) {
        collisions.insert(*std::move(collision));
        continue;
      }
      for (const auto& [id, info] : device.replicas) {
        id_holder.emplace(std::pair{device.type, id}, device.owner);
      }
      kept.push_back(std::move(device));
    }
    found = std::move(kept);
  }
  // The NUMA nodes of the devices served, each node's read once per scan however many devices
  // (count) it makes. A device left out reads none, so that a bad numa_node file of its fails
  // no scan.
  std::map<std::string, std::optional<int64_t>> numa_of;
  auto numa_node = [&](const std::string& host_path) -> absl::StatusOr<std::optional<int64_t>> {
    if (auto it = numa_of.find(host_path); it != numa_of.end()) return it->second;
    absl::StatusOr<std::optional<int64_t>> numa =
        NumaNodeOf(UnderRoot(host_path), options_.sys_root, options_.proc_root);
    if (numa.ok()) numa_of.emplace(host_path, *numa);
    return numa;
  };
  for (Found& device : found) {
    for (auto& [id, info] : device.replicas) {
      for (const DeviceNode& node : info.nodes) {
        absl::StatusOr<std::optional<int64_t>> numa = numa_node(node.host_path);
        if (!numa.ok()) return numa.status();
        if (numa->has_value() && std::find(info.numa_nodes.begin(), info.numa_nodes.end(),
                                           **numa) == info.numa_nodes.end()) {
          info.numa_nodes.push_back(**numa);
        }
      }
      std::sort(info.numa_nodes.begin(), info.numa_nodes.end());
      info.nodes.insert(info.nodes.end(), device.shared.begin(), device.shared.end());
    }
  }

  // A node's holder when it was last there keeps it, if it still claims it: a device that
  // appears later (hot-plugged, or an optional extra node that came), or one matched earlier
  // whose node was away, never takes a node from one that may be in use. A node that is away
  // keeps its holder until it is back. The other nodes go in the order of the config.
  std::map<std::string, std::string> owned_by;  // host path -> the device that holds it
  for (const Found& device : found) {
    for (const std::string& path : device.own_paths) {
      if (auto it = holders_.find(path); it != holders_.end() && it->second == device.owner) {
        owned_by.emplace(path, device.owner);
      }
    }
  }
  std::set<std::string> overlaps;
  for (Found& device : found) {
    std::optional<absl::Status> overlap;
    for (const std::string& path : device.own_paths) {
      if (auto it = shared_by.find(path); it != shared_by.end()) {
        overlap = Overlap(path, device.owner, it->second);
      } else if (auto owner = owned_by.find(path);
                 owner != owned_by.end() && owner->second != device.owner) {
        overlap = Overlap(path, owner->second, device.owner);
      }
      if (overlap.has_value()) break;
    }
    if (!overlap.has_value()) {
      for (const std::string& path : device.own_paths) owned_by.emplace(path, device.owner);
      continue;
    }
    // Before anything was served it is the config's mistake, refused; once serving, one
    // device's node must not make every other device unusable.
    if (!served_) return *std::move(overlap);
    for (auto& [id, info] : device.replicas) info.health = Health::kUnhealthy;
    overlaps.insert(std::string(overlap->message()));
  }
  for (const std::string& overlap : overlaps) {
    if (overlaps_.count(overlap) == 0) {
      DEVMGR_LOG(options_.logger, warn,
                 "A device is served unhealthy: a node of it is another device's or shared", "err",
                 overlap);
    }
  }
  for (const std::string& overlap : overlaps_) {
    if (overlaps.count(overlap) == 0) {
      DEVMGR_LOG(options_.logger, info, "Groups no longer overlap", "was", overlap);
    }
  }
  for (const auto& [device, fault] : gpu_faults) {
    if (auto was = gpu_faults_.find(device); was == gpu_faults_.end() || was->second != fault) {
      DEVMGR_LOG(options_.logger, warn, "A GPU is served unhealthy", "device", device, "err",
                 fault);
    }
  }
  for (const auto& [device, fault] : gpu_faults_) {
    if (gpu_faults.count(device) == 0) {
      DEVMGR_LOG(options_.logger, info, "A GPU no longer has a fault", "device", device, "was",
                 fault);
    }
  }
  for (const std::string& collision : collisions) {
    if (collisions_.insert(collision).second) {
      DEVMGR_LOG(options_.logger, warn, "A device is not served: its ID is another device's", "err",
                 collision);
    }
  }

  DeviceTree tree;
  for (Found& device : found) {
    for (const std::string& path : device.present_paths) {
      if (auto it = owned_by.find(path); it != owned_by.end() && it->second == device.owner) {
        holders_[path] = device.owner;
      }
    }
    for (auto& [id, info] : device.replicas) tree.AddDevice(device.type, id, std::move(info));
  }
  served_ = true;
  overlaps_ = std::move(overlaps);
  gpu_faults_ = std::move(gpu_faults);
  return tree;
}

absl::Status GenericScanner::Scan(deviceplugin::Notifier& notifier,
                                  const deviceplugin::StopToken& stop) {
  if (options_.gpu_health != nullptr) options_.gpu_health->OnChange([&stop] { stop.Wake(); });
  // The last good scan's tree, until a failed scan has served it unhealthy.
  std::optional<DeviceTree> last_good;
  do {
    absl::StatusOr<DeviceTree> tree = ScanOnce();
    if (tree.ok()) {
      last_good = *tree;
      notifier.Notify(*std::move(tree));
      continue;
    }
    DEVMGR_LOG(options_.logger, err,
               "Device scan failed; the devices are served unhealthy until a scan succeeds", "err",
               tree.status());
    if (!last_good.has_value()) continue;
    DeviceTree unhealthy;
    for (const auto& [type, devices] : last_good->types()) {
      for (const auto& [id, info] : devices) {
        DeviceInfo copy = info;
        copy.health = Health::kUnhealthy;
        unhealthy.AddDevice(type, id, std::move(copy));
      }
    }
    last_good.reset();
    notifier.Notify(std::move(unhealthy));
  } while (!stop.WaitForStop(options_.rescan_interval));
  if (options_.gpu_health != nullptr) options_.gpu_health->OnChange(nullptr);
  return absl::OkStatus();
}

}  // namespace devmgr::plugins
