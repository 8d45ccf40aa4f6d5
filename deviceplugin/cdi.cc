#include "deviceplugin/cdi.h"

#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/errno_status.h"
#include "common/file_store.h"
#include "nlohmann/json.hpp"

namespace devmgr::deviceplugin {
namespace {

struct KindParts {
  std::string vendor;
  std::string class_name;
};

KindParts PartsOf(const CdiOptions& options, absl::string_view device_type) {
  if (auto it = options.kinds.find(device_type); it != options.kinds.end()) {
    const size_t slash = it->second.find('/');
    if (slash != std::string::npos) {
      return {it->second.substr(0, slash), it->second.substr(slash + 1)};
    }
    return {it->second, ""};  // refused by WriteCdiSpec as an invalid kind
  }
  if (options.class_name.empty()) return {options.vendor, std::string(device_type)};
  return {options.vendor, absl::StrCat(options.class_name, "-", device_type)};
}

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiAlnum(char c) { return IsAsciiLetter(c) || (c >= '0' && c <= '9'); }

// The CDI library's rules (its parser package): a name of ASCII letters, digits and
// `punctuation`, beginning with a letter (or, with `digit_first`, a digit too) and ending with a
// letter or digit.
bool IsValidCdiName(absl::string_view name, absl::string_view punctuation, bool digit_first) {
  if (name.empty() || !(digit_first ? IsAsciiAlnum(name.front()) : IsAsciiLetter(name.front())) ||
      !IsAsciiAlnum(name.back())) {
    return false;
  }
  for (char c : name) {
    if (!IsAsciiAlnum(c) && punctuation.find(c) == absl::string_view::npos) return false;
  }
  return true;
}

// IdIfHolding: the id of the file at `path` if it holds exactly `bytes`. The same id before and
// after the read: the bytes read are that file's, not those of one renamed onto the path between.
std::optional<FileId> IdIfHolding(const std::filesystem::path& path, absl::string_view bytes) {
  const std::optional<FileId> id = StatId(path);
  const absl::StatusOr<std::string> content =
      ReadWholeFile(path, /*follow_symlinks=*/false, bytes.size());
  if (!id.has_value() || !content.ok() || *content != bytes || StatId(path) != id) {
    return std::nullopt;
  }
  return id;
}

}  // namespace

bool IsValidCdiKind(absl::string_view kind) {
  const size_t slash = kind.find('/');
  return slash != absl::string_view::npos &&
         IsValidCdiName(kind.substr(0, slash), "-_.", /*digit_first=*/false) &&
         IsValidCdiName(kind.substr(slash + 1), "-_.", /*digit_first=*/false);
}

bool IsValidCdiDeviceName(absl::string_view name) {
  return IsValidCdiName(name, "-_.:", /*digit_first=*/true);
}

std::string CdiKind(const CdiOptions& options, absl::string_view device_type) {
  KindParts parts = PartsOf(options, device_type);
  return absl::StrCat(parts.vendor, "/", parts.class_name);
}

std::string CdiDeviceName(const CdiOptions& options, absl::string_view device_type,
                          absl::string_view device_id) {
  return absl::StrCat(CdiKind(options, device_type), "=", device_id);
}

std::string CdiSpecFileName(const CdiOptions& options, absl::string_view device_type) {
  KindParts parts = PartsOf(options, device_type);
  return absl::StrCat(parts.vendor, "-", parts.class_name, ".json");
}

bool InCdiSpec(const CdiOptions& options, absl::string_view device_id, const DeviceInfo& info) {
  return IsValidCdiDeviceName(device_id) &&
         (!info.nodes.empty() || !info.mounts.empty() || (options.with_envs && !info.envs.empty()));
}

std::string BuildCdiSpec(const CdiOptions& options, absl::string_view device_type,
                         const DeviceMap& devices) {
  nlohmann::ordered_json spec;
  spec["cdiVersion"] = kCdiVersion;
  spec["kind"] = CdiKind(options, device_type);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& [id, info] : devices) {
    if (!InCdiSpec(options, id, info)) continue;
    nlohmann::ordered_json edits = nlohmann::ordered_json::object();
    if (!info.nodes.empty()) {
      nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
      for (const DeviceNode& node : info.nodes) {
        nlohmann::ordered_json entry;
        entry["path"] = node.container_path.empty() ? node.host_path : node.container_path;
        entry["hostPath"] = node.host_path;
        entry["permissions"] = node.permissions;
        nodes.push_back(std::move(entry));
      }
      edits["deviceNodes"] = std::move(nodes);
    }
    if (options.with_envs && !info.envs.empty()) {
      nlohmann::ordered_json envs = nlohmann::ordered_json::array();
      for (const auto& [key, value] : info.envs) envs.push_back(absl::StrCat(key, "=", value));
      edits["env"] = std::move(envs);
    }
    if (!info.mounts.empty()) {
      nlohmann::ordered_json mounts = nlohmann::ordered_json::array();
      for (const Mount& mount : info.mounts) {
        nlohmann::ordered_json entry;
        entry["hostPath"] = mount.host_path;
        entry["containerPath"] = mount.container_path;
        entry["options"] = mount.read_only ? nlohmann::ordered_json{"ro", "bind"}
                                           : nlohmann::ordered_json{"rw", "bind"};
        mounts.push_back(std::move(entry));
      }
      edits["mounts"] = std::move(mounts);
    }
    nlohmann::ordered_json device;
    device["name"] = id;
    device["containerEdits"] = std::move(edits);
    list.push_back(std::move(device));
  }
  spec["devices"] = std::move(list);
  // A byte of a device's path or environment that is not UTF-8 is written as U+FFFD, as Go's
  // encoder writes it (dump() would throw).
  return spec.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

absl::Status WriteCdiSpec(const CdiOptions& options, absl::string_view device_type,
                          const DeviceMap& devices, std::optional<FileId>* placed) {
  if (!IsValidCdiKind(CdiKind(options, device_type))) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid CDI kind \"", CdiKind(options, device_type), "\""));
  }
  const std::string name = CdiSpecFileName(options, device_type);
  if (!FileStore::IsValidName(name)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid CDI spec file name \"", name, "\""));
  }
  const std::string bytes = BuildCdiSpec(options, device_type, devices);
  absl::Status status = FileStore(options.folder, options.fault_hook).Write(name, bytes);
  if (placed != nullptr) *placed = IdIfHolding(options.folder / name, bytes);
  return status;
}

absl::Status RemoveCdiSpec(const CdiOptions& options, absl::string_view device_type) {
  const auto path = options.folder / CdiSpecFileName(options, device_type);
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (ec) {
    return ErrnoStatus(ec, "cannot remove", path);
  }
  return absl::OkStatus();
}

}  // namespace devmgr::deviceplugin
