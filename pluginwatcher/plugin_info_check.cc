#include "pluginwatcher/plugin_info_check.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/unix_socket.h"

namespace devmgr::pluginwatcher {
namespace {

// IsInside: `path` has every component of `root` first, and at least one more. Empty components
// (from a trailing separator) do not count.
bool IsInside(const std::filesystem::path& path, const std::filesystem::path& root) {
  auto p = path.begin();
  for (const auto& component : root.lexically_normal()) {
    if (component.empty()) continue;
    if (p == path.end() || *p != component) return false;
    ++p;
  }
  return p != path.end();
}

}  // namespace

absl::Status CheckPluginInfo(const pluginregistration::PluginInfo& info,
                             const std::vector<std::filesystem::path>& roots,
                             size_t max_name_bytes) {
  if (info.name().size() > max_name_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("plugin name is ", info.name().size(),
                                                   " bytes, over the limit of ", max_name_bytes));
  }
  const std::string& endpoint = info.endpoint();
  if (endpoint.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("plugin endpoint contains a NUL byte");
  }
  const std::filesystem::path path(endpoint);
  if (absl::Status status = ValidateSocketPath(path); !status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("plugin endpoint: ", status.message()));
  }
  for (const auto& component : path) {
    if (component == ".." || component == ".") {
      return absl::InvalidArgumentError(absl::StrCat("plugin endpoint \"", endpoint, "\" has a \"",
                                                     component.string(), "\" component"));
    }
  }
  for (const auto& root : roots) {
    if (IsInside(path, root)) return absl::OkStatus();
  }
  std::vector<std::string> names;
  names.reserve(roots.size());
  for (const auto& root : roots) names.push_back(root.string());
  return absl::InvalidArgumentError(absl::StrCat("plugin endpoint \"", endpoint,
                                                 "\" is outside the plugin folders [",
                                                 absl::StrJoin(names, " "), "]"));
}

}  // namespace devmgr::pluginwatcher
