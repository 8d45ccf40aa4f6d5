#include "pluginwatcher/plugin_info_check.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace devmgr::pluginwatcher {

absl::Status CheckPluginInfo(const pluginregistration::PluginInfo& info, size_t max_name_bytes) {
  if (info.name().size() > max_name_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("plugin name is ", info.name().size(),
                                                   " bytes, over the limit of ", max_name_bytes));
  }
  if (info.endpoint().find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("plugin endpoint contains a NUL byte");
  }
  return absl::OkStatus();
}

}  // namespace devmgr::pluginwatcher
