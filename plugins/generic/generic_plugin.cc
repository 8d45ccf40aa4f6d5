#include "plugins/generic/generic_plugin.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <exception>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace devmgr::plugins {
namespace {

using deviceplugin::DeviceInfo;
using deviceplugin::DeviceTree;
using deviceplugin::Health;

std::vector<std::string> Glob(const std::string& pattern) {
  glob_t result{};
  std::vector<std::string> paths;
  if (::glob(pattern.c_str(), 0, nullptr, &result) == 0) {
    for (size_t i = 0; i < result.gl_pathc; ++i) paths.emplace_back(result.gl_pathv[i]);
  }
  ::globfree(&result);
  return paths;
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string DeviceIdOf(const std::string& path) {
  std::string id = path;
  if (absl::StartsWith(id, "/dev/")) id = id.substr(5);
  while (absl::StartsWith(id, "/")) id = id.substr(1);
  return absl::StrReplaceAll(id, {{"/", "_"}});
}

// Both front ends fill the same plain structure, then one validator checks it.
absl::Status Validate(const GenericConfig& config) {
  if (config.groups.empty()) return absl::InvalidArgumentError("config has no groups");
  for (const GenericGroup& group : config.groups) {
    if (group.name.empty()) return absl::InvalidArgumentError("a group has no name");
    if (group.paths.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("group ", group.name, " has no paths"));
    }
    if (group.count < 1) {
      return absl::InvalidArgumentError(absl::StrCat("group ", group.name, ": count must be >= 1"));
    }
    if (group.permissions.empty() ||
        group.permissions.find_first_not_of("rwm") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("group ", group.name, ": permissions must be made of r, w and m, not \"",
                       group.permissions, "\""));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<GenericConfig> FromJson(const std::string& text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("config is not a JSON object");
  }
  GenericConfig config;
  // nlohmann's typed getters throw on a type mismatch; turn that into a status here.
  try {
    config.resource_namespace = doc.value("namespace", config.resource_namespace);
    for (const auto& g : doc.value("groups", nlohmann::json::array())) {
      GenericGroup group;
      group.name = g.value("name", "");
      group.paths = g.value("paths", std::vector<std::string>{});
      group.count = g.value("count", 1);
      group.permissions = g.value("permissions", "rw");
      for (const auto& m : g.value("mounts", nlohmann::json::array())) {
        group.mounts.push_back(
            {m.value("hostPath", ""), m.value("containerPath", ""), m.value("readOnly", false)});
      }
      config.groups.push_back(std::move(group));
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad config: ", e.what()));
  }
  return config;
}

absl::StatusOr<GenericConfig> FromYaml(const std::string& text) {
  GenericConfig config;
  // yaml-cpp reports every problem by throwing.
  try {
    const YAML::Node doc = YAML::Load(text);
    if (!doc.IsMap()) return absl::InvalidArgumentError("config is not a YAML mapping");
    if (doc["namespace"]) config.resource_namespace = doc["namespace"].as<std::string>();
    for (const YAML::Node& g : doc["groups"]) {
      GenericGroup group;
      if (g["name"]) group.name = g["name"].as<std::string>();
      if (g["paths"]) group.paths = g["paths"].as<std::vector<std::string>>();
      if (g["count"]) group.count = g["count"].as<int>();
      if (g["permissions"]) group.permissions = g["permissions"].as<std::string>();
      for (const YAML::Node& m : g["mounts"]) {
        group.mounts.push_back({m["hostPath"].as<std::string>(""),
                                m["containerPath"].as<std::string>(""),
                                m["readOnly"].as<bool>(false)});
      }
      config.groups.push_back(std::move(group));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad config: ", e.what()));
  }
  return config;
}

}  // namespace

absl::StatusOr<GenericConfig> ParseGenericConfig(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  absl::StatusOr<GenericConfig> config =
      first != std::string::npos && text[first] == '{' ? FromJson(text) : FromYaml(text);
  if (!config.ok()) return config.status();
  absl::Status valid = Validate(*config);
  if (!valid.ok()) return valid;
  return config;
}

DeviceTree GenericScanner::ScanOnce() {
  DeviceTree tree;
  for (const GenericGroup& group : config_.groups) {
    std::vector<std::string>& seen = seen_paths_[group.name];
    for (const std::string& pattern : group.paths) {
      for (std::string& path : Glob(pattern)) {
        if (std::find(seen.begin(), seen.end(), path) == seen.end()) seen.push_back(path);
      }
    }
    for (const std::string& path : seen) {
      DeviceInfo info;
      info.health = Exists(path) ? Health::kHealthy : Health::kUnhealthy;
      info.nodes = {{path, path, group.permissions}};
      info.mounts = group.mounts;
      const std::string id = DeviceIdOf(path);
      if (group.count == 1) {
        tree.AddDevice(group.name, id, info);
        continue;
      }
      for (int i = 0; i < group.count; ++i)
        tree.AddDevice(group.name, absl::StrCat(id, "-", i), info);
    }
  }
  return tree;
}

absl::Status GenericScanner::Scan(deviceplugin::Notifier& notifier,
                                  const deviceplugin::StopToken& stop) {
  do {
    notifier.Notify(ScanOnce());
  } while (!stop.WaitForStop(rescan_interval_));
  return absl::OkStatus();
}

}  // namespace devmgr::plugins
