#include "plugins/generic/generic_config.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "deviceplugin/cdi.h"
#include "deviceplugin/plugin.h"
#include "nlohmann/json.hpp"
#include "plugins/generic/substitution.h"
#include "yaml-cpp/depthguard.h"
#include "yaml-cpp/yaml.h"

namespace devmgr::plugins {
namespace {

using deviceplugin::Mount;

// The deepest JSON config read: a config nests a few levels; converting it to YAML recurses once
// per level.
constexpr int kMaxConfigDepth = 64;

// The CDI spec file the group `name` of CDI kind `kind` is written to.
std::string SpecFileOf(const std::string& name, const std::string& kind) {
  return deviceplugin::CdiSpecFileName(deviceplugin::CdiOptions{.kinds = {{name, kind}}}, name);
}

// Where a value sits in the document, for error messages: "groups[1].env.FOO".
std::string Key(const std::string& parent, absl::string_view child) {
  return parent.empty() ? std::string(child) : absl::StrCat(parent, ".", child);
}

std::string Item(const std::string& parent, size_t index) {
  return absl::StrCat(parent, "[", index, "]");
}

bool IsValidPermissions(const std::string& permissions) {
  return !permissions.empty() && permissions.find_first_not_of("rwm") == std::string::npos;
}

// What an entry of each node list may hold.
enum class NodeList { kPaths, kExtraPaths, kSharedPaths };

// JSON goes through the YAML reader too, so that both front ends accept and refuse the same
// things. Numbers and booleans become their JSON text, which YAML converts back.
YAML::Node ToYaml(const nlohmann::json& json) {
  switch (json.type()) {
    case nlohmann::json::value_t::object: {
      YAML::Node map(YAML::NodeType::Map);
      for (const auto& [key, value] : json.items()) map[key] = ToYaml(value);
      return map;
    }
    case nlohmann::json::value_t::array: {
      YAML::Node list(YAML::NodeType::Sequence);
      for (const auto& value : json) list.push_back(ToYaml(value));
      return list;
    }
    case nlohmann::json::value_t::string:
      return YAML::Node(json.get<std::string>());
    case nlohmann::json::value_t::null:
      return YAML::Node(YAML::NodeType::Null);
    default:
      return YAML::Node(json.dump());
  }
}

// Reader turns the document into a GenericConfig and checks it. Each step records the first
// problem, naming where it is, and goes on with a default, so the code reads as the schema.
class Reader {
 public:
  GenericConfig Config(const YAML::Node& doc) {
    GenericConfig config;
    if (!doc.IsMap()) {
      Fail("", "the config is not a mapping of keys to values");
      return config;
    }
    for (const auto& entry : doc) {
      const std::string key = entry.first.as<std::string>();
      if (key == "namespace") {
        config.resource_namespace = String(entry.second, key);
      } else if (key == "groups") {
        if (!entry.second.IsSequence()) {
          Fail(key, "want a list of groups");
          continue;
        }
        for (size_t i = 0; i < entry.second.size(); ++i) {
          config.groups.push_back(Group(entry.second[i], Item(key, i)));
        }
      } else {
        Unknown("", key);
      }
    }
    Check(config);
    return config;
  }

  const absl::Status& status() const { return status_; }

 private:
  void Fail(const std::string& where, absl::string_view what) {
    if (!status_.ok()) return;
    status_ = absl::InvalidArgumentError(where.empty() ? std::string(what)
                                                       : absl::StrCat(where, ": ", what));
  }

  void Unknown(const std::string& where, const std::string& key) {
    Fail(where, absl::StrCat("unknown key \"", key, "\""));
  }

  std::string String(const YAML::Node& node, const std::string& where) {
    if (!node.IsScalar()) {
      Fail(where, "want a string");
      return "";
    }
    return node.Scalar();
  }

  int Int(const YAML::Node& node, const std::string& where) {
    int value = 0;
    if (!node.IsScalar() || !YAML::convert<int>::decode(node, value)) {
      Fail(where, "want an integer");
    }
    return value;
  }

  bool Bool(const YAML::Node& node, const std::string& where) {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      Fail(where, "want true or false");
    }
    return value;
  }

  std::map<std::string, std::string> StringMap(const YAML::Node& node, const std::string& where) {
    std::map<std::string, std::string> values;
    if (!node.IsMap()) {
      Fail(where, "want a mapping of names to strings");
      return values;
    }
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      values[key] = String(entry.second, Key(where, key));
    }
    return values;
  }

  std::vector<NodeSpec> Nodes(const YAML::Node& node, const std::string& where) {
    std::vector<NodeSpec> nodes;
    if (!node.IsSequence()) {
      Fail(where, "want a list of paths");
      return nodes;
    }
    for (size_t i = 0; i < node.size(); ++i) {
      const YAML::Node entry = node[i];
      const std::string at = Item(where, i);
      NodeSpec spec;
      if (entry.IsScalar()) {
        spec.path = entry.Scalar();
      } else if (entry.IsMap()) {
        for (const auto& field : entry) {
          const std::string key = field.first.as<std::string>();
          if (key == "path") {
            spec.path = String(field.second, Key(at, key));
          } else if (key == "containerPath") {
            spec.container_path = String(field.second, Key(at, key));
          } else if (key == "permissions") {
            spec.permissions = String(field.second, Key(at, key));
          } else if (key == "optional") {
            spec.optional = Bool(field.second, Key(at, key));
          } else {
            Unknown(at, key);
          }
        }
      } else {
        Fail(at, "want a path or {path, containerPath, permissions, optional}");
      }
      nodes.push_back(std::move(spec));
    }
    return nodes;
  }

  std::vector<Mount> Mounts(const YAML::Node& node, const std::string& where) {
    std::vector<Mount> mounts;
    if (!node.IsSequence()) {
      Fail(where, "want a list of mounts");
      return mounts;
    }
    for (size_t i = 0; i < node.size(); ++i) {
      const YAML::Node entry = node[i];
      const std::string at = Item(where, i);
      if (!entry.IsMap()) {
        Fail(at, "want {hostPath, containerPath, readOnly}");
        continue;
      }
      Mount mount;
      for (const auto& field : entry) {
        const std::string key = field.first.as<std::string>();
        if (key == "hostPath") {
          mount.host_path = String(field.second, Key(at, key));
        } else if (key == "containerPath") {
          mount.container_path = String(field.second, Key(at, key));
        } else if (key == "readOnly") {
          mount.read_only = Bool(field.second, Key(at, key));
        } else {
          Unknown(at, key);
        }
      }
      mounts.push_back(std::move(mount));
    }
    return mounts;
  }

  // `nvml: {}`, or with its one key: `nvml: {ignoredXids: [13, 31]}`. A bare `nvml:` (null) is
  // the same as {}.
  NvmlHealth Nvml(const YAML::Node& node, const std::string& where) {
    NvmlHealth nvml;
    if (node.IsNull()) return nvml;
    if (!node.IsMap()) {
      Fail(where, "want {} or {ignoredXids: [...]}");
      return nvml;
    }
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      const std::string at = Key(where, key);
      if (key != "ignoredXids") {
        Unknown(where, key);
        continue;
      }
      if (!entry.second.IsSequence()) {
        Fail(at, "want a list of XIDs");
        continue;
      }
      nvml.ignored_xids.clear();
      for (size_t i = 0; i < entry.second.size(); ++i) {
        int64_t xid = -1;
        if (!entry.second[i].IsScalar() || !YAML::convert<int64_t>::decode(entry.second[i], xid) ||
            xid < 0) {
          Fail(Item(at, i), "want an XID, a whole number");
        }
        nvml.ignored_xids.push_back(static_cast<uint64_t>(xid));
      }
    }
    return nvml;
  }

  GenericGroup Group(const YAML::Node& node, const std::string& where) {
    GenericGroup group;
    if (!node.IsMap()) {
      Fail(where, "want a group: a mapping with name and paths");
      return group;
    }
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      const std::string at = Key(where, key);
      const YAML::Node& value = entry.second;
      if (key == "name") {
        group.name = String(value, at);
      } else if (key == "paths") {
        group.paths = Nodes(value, at);
      } else if (key == "extraPaths") {
        group.extra_paths = Nodes(value, at);
      } else if (key == "sharedPaths") {
        group.shared_paths = Nodes(value, at);
      } else if (key == "count") {
        group.count = Int(value, at);
      } else if (key == "permissions") {
        group.permissions = String(value, at);
      } else if (key == "mounts") {
        group.mounts = Mounts(value, at);
      } else if (key == "env") {
        group.env = StringMap(value, at);
      } else if (key == "annotations") {
        group.annotations = StringMap(value, at);
      } else if (key == "cdiKind") {
        group.cdi_kind = String(value, at);
      } else if (key == "nvml") {
        group.nvml = Nvml(value, at);
      } else {
        Unknown(where, key);
      }
    }
    return group;
  }

  void CheckAbsolute(const std::string& path, const std::string& where) {
    if (!path.starts_with('/')) {
      Fail(where, absl::StrCat("want an absolute path, not \"", path, "\""));
    }
  }

  void CheckTemplate(const std::string& text, const std::string& where) {
    absl::Status valid = ValidateTemplate(text);
    if (!valid.ok()) Fail(where, valid.message());
  }

  void CheckNode(const NodeSpec& spec, NodeList list, const std::string& where) {
    const std::string path_at = Key(where, "path");
    CheckAbsolute(spec.path, path_at);
    switch (list) {
      case NodeList::kPaths:
        if (spec.path.find('{') != std::string::npos) {
          Fail(path_at,
               "paths are globs; substitutions go in extraPaths, containerPath, env and "
               "annotations");
        }
        if (spec.optional) {
          Fail(Key(where, "optional"),
               "a glob that matches nothing makes no device: only extraPaths and sharedPaths "
               "take optional");
        }
        break;
      case NodeList::kExtraPaths:
        CheckTemplate(spec.path, path_at);
        if (status_.ok() && !HasSubstitution(spec.path)) {
          Fail(path_at, absl::StrCat("\"", spec.path,
                                     "\" is the same node for every device: put it in "
                                     "sharedPaths, or use {id}, {index} or {path}"));
        }
        break;
      case NodeList::kSharedPaths:
        if (spec.path.find_first_of("{*?[") != std::string::npos) {
          Fail(path_at, "shared paths are plain paths: no globs, no substitutions");
        }
        break;
    }
    if (!spec.container_path.empty()) {
      const std::string at = Key(where, "containerPath");
      CheckAbsolute(spec.container_path, at);
      CheckTemplate(spec.container_path, at);
      if (list == NodeList::kSharedPaths && HasSubstitution(spec.container_path)) {
        Fail(at, "a shared node belongs to no one device: no substitutions");
      }
    }
    if (!spec.permissions.empty() && !IsValidPermissions(spec.permissions)) {
      Fail(Key(where, "permissions"),
           absl::StrCat("want a mix of r, w and m, not \"", spec.permissions, "\""));
    }
  }

  void CheckNodes(const std::vector<NodeSpec>& nodes, NodeList list, const std::string& where) {
    for (size_t i = 0; i < nodes.size(); ++i) CheckNode(nodes[i], list, Item(where, i));
  }

  void Check(const GenericConfig& config) {
    if (absl::Status valid = deviceplugin::CheckNamespace(config.resource_namespace); !valid.ok()) {
      Fail("namespace", std::string(valid.message()));
    }
    if (config.groups.empty()) Fail("groups", "the config needs at least one group");
    std::map<std::string, std::string> names;  // group name -> where it is defined
    // CDI spec file -> the kind and the group that have it.
    std::map<std::string, std::pair<std::string, std::string>> spec_files;
    for (size_t i = 0; i < config.groups.size(); ++i) {
      const GenericGroup& group = config.groups[i];
      const std::string where = Item("groups", i);
      if (group.name.empty()) {
        Fail(Key(where, "name"), "a group needs a name");
      } else if (!deviceplugin::IsValidDeviceType(group.name)) {
        Fail(Key(where, "name"),
             absl::StrCat("\"", group.name,
                          "\" is not a valid resource name (letters, digits, '-', '_', '.')"));
      } else if (auto [it, added] = names.emplace(group.name, where); !added) {
        Fail(Key(where, "name"), absl::StrCat("\"", group.name, "\" is also ", it->second));
      }
      if (group.paths.empty()) Fail(Key(where, "paths"), "a group needs at least one path");
      CheckNodes(group.paths, NodeList::kPaths, Key(where, "paths"));
      CheckNodes(group.extra_paths, NodeList::kExtraPaths, Key(where, "extraPaths"));
      CheckNodes(group.shared_paths, NodeList::kSharedPaths, Key(where, "sharedPaths"));
      if (group.count < 1 || group.count > kMaxGenericCount) {
        Fail(Key(where, "count"), absl::StrCat("must be 1 to ", kMaxGenericCount));
      }
      if (!IsValidPermissions(group.permissions)) {
        Fail(Key(where, "permissions"),
             absl::StrCat("want a mix of r, w and m, not \"", group.permissions, "\""));
      }
      for (size_t m = 0; m < group.mounts.size(); ++m) {
        const std::string at = Item(Key(where, "mounts"), m);
        CheckAbsolute(group.mounts[m].host_path, Key(at, "hostPath"));
        CheckAbsolute(group.mounts[m].container_path, Key(at, "containerPath"));
      }
      for (const auto& [map, values] :
           {std::pair("env", &group.env), std::pair("annotations", &group.annotations)}) {
        for (const auto& [key, value] : *values) {
          if (key.empty()) Fail(Key(where, map), "a name is empty");
          CheckTemplate(value, Key(Key(where, map), key));
        }
      }
      const std::string kind = group.cdi_kind.empty()
                                   ? absl::StrCat(config.resource_namespace, "/", group.name)
                                   : group.cdi_kind;
      if (!group.cdi_kind.empty() && !deviceplugin::IsValidCdiKind(group.cdi_kind)) {
        Fail(Key(where, "cdiKind"),
             absl::StrCat("want <vendor>/<class> (letters, digits, '-', '_', '.', each part "
                          "beginning with a letter and ending with a letter or digit), not \"",
                          group.cdi_kind, "\""));
      } else if (auto [it, added] =
                     spec_files.emplace(SpecFileOf(group.name, kind), std::make_pair(kind, where));
                 !added) {
        // Two kinds may name one spec file ("a/b-c", "a-b/c"): each group's writes would
        // replace the other's.
        const auto& [other_kind, other_where] = it->second;
        Fail(Key(where, "cdiKind"),
             other_kind == kind
                 ? absl::StrCat("CDI kind \"", kind, "\" is also ", other_where, "'s")
                 : absl::StrCat("CDI kind \"", kind, "\" has the spec file of ", other_where,
                                "'s \"", other_kind, "\" (", it->first, ")"));
      }
    }
  }

  absl::Status status_;
};

}  // namespace

absl::StatusOr<GenericConfig> ParseGenericConfig(const std::string& text) {
  YAML::Node doc;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    // Deeper JSON is refused before it is read: turning it into YAML recurses once per level.
    if (absl::Status depth = CheckJsonDepth(text, kMaxConfigDepth); !depth.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("the config: ", depth.message()));
    }
    const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return absl::InvalidArgumentError("the config is not valid JSON");
    doc = ToYaml(json);
  } else {
    // yaml-cpp reports syntax errors by throwing.
    try {
      doc = YAML::Load(text);
    } catch (const YAML::DeepRecursion& e) {
      // yaml-cpp's own text for it is "bad file".
      return absl::InvalidArgumentError(absl::StrCat("the config is not valid YAML: line ",
                                                     e.mark.line + 1, ", column ",
                                                     e.mark.column + 1, ": nested too deep"));
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat("the config is not valid YAML: ", e.what()));
    }
  }
  Reader reader;
  GenericConfig config;
  // Scalar keys convert to strings; a key that is itself a list or mapping throws.
  try {
    config = reader.Config(doc);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad config: ", e.what()));
  }
  if (!reader.status().ok()) return reader.status();
  return config;
}

std::map<std::string, std::string, std::less<>> CdiKinds(const GenericConfig& config) {
  std::map<std::string, std::string, std::less<>> kinds;
  for (const GenericGroup& group : config.groups) {
    if (!group.cdi_kind.empty()) kinds[group.name] = group.cdi_kind;
  }
  return kinds;
}

}  // namespace devmgr::plugins
