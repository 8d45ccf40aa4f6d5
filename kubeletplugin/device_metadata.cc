#include "kubeletplugin/device_metadata.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_store.h"
#include "kubeapi/json_text.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeletplugin {
namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr char kMetadataSubDir[] = "dra-device-metadata";
constexpr char kCdiVersion[] = "0.5.0";

// CheckFileName: `value` can be used as (part of) one file name.
absl::Status CheckFileName(absl::string_view what, const std::string& value) {
  if (value.empty() || value == "." || value == ".." || absl::StrContains(value, '/') ||
      absl::StrContains(value, '\0')) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", value, "\" cannot name a file of the device metadata"));
  }
  return absl::OkStatus();
}

// CheckClaimNames: a claim's namespace, name and UID can each be (part of) one file name.
absl::Status CheckClaimNames(const std::string& namespace_name, const std::string& name,
                             const std::string& uid) {
  for (auto [what, value] : {std::pair{"claim namespace", &namespace_name},
                             std::pair{"claim name", &name}, std::pair{"claim UID", &uid}}) {
    if (absl::Status checked = CheckFileName(what, *value); !checked.ok()) return checked;
  }
  return absl::OkStatus();
}

// WriteInPlace replaces the content of `path` (mode 0644, created if missing) without replacing
// the file, so that a bind mount of it sees the new content.
absl::Status WriteInPlace(const std::filesystem::path& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("open ", path.string()));
  }
  // Readable by the containers' users whatever the process's umask.
  if (::fchmod(fd, 0644) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::ErrnoToStatus(error, absl::StrCat("chmod ", path.string()));
  }
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return absl::ErrnoToStatus(error, absl::StrCat("write ", path.string()));
    }
    written += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("close ", path.string()));
  return absl::OkStatus();
}

absl::Status MakeDirs(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::ErrnoToStatus(error.value(), absl::StrCat("create directory ", dir.string()));
  }
  return absl::OkStatus();
}

OrderedJson DeviceEntry(const std::string& driver, const Device& device) {
  OrderedJson entry = {
      {"driver", driver}, {"pool", device.pool_name}, {"name", device.device_name}};
  if (device.metadata.has_value()) {
    if (!device.metadata->attributes.empty()) {
      entry["attributes"] = OrderedJson::parse(kubeapi::JsonText(device.metadata->attributes));
    }
    if (!device.metadata->network_data.is_null()) {
      entry["networkData"] = OrderedJson::parse(kubeapi::JsonText(device.metadata->network_data));
    }
  }
  return entry;
}

}  // namespace

absl::StatusOr<MetadataWriter> MetadataWriter::Create(std::string driver_name,
                                                      std::filesystem::path plugin_data_dir,
                                                      std::filesystem::path cdi_dir,
                                                      const std::vector<std::string>& versions) {
  std::vector<std::string> known;
  for (const std::string& version : versions) {
    if (version == kMetadataV1alpha1) known.push_back(version);
  }
  if (known.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("none of the requested metadata API versions [",
                                                   absl::StrJoin(versions, " "),
                                                   "] are supported"));
  }
  if (absl::Status name = CheckFileName("driver name", driver_name); !name.ok()) return name;
  return MetadataWriter(std::move(driver_name), std::move(plugin_data_dir), std::move(cdi_dir),
                        std::move(known));
}

MetadataWriter::MetadataWriter(std::string driver_name, std::filesystem::path plugin_data_dir,
                               std::filesystem::path cdi_dir, std::vector<std::string> versions)
    : driver_name_(std::move(driver_name)),
      plugin_data_dir_(std::move(plugin_data_dir)),
      cdi_dir_(std::move(cdi_dir)),
      versions_(std::move(versions)) {}

std::filesystem::path MetadataWriter::ClaimDir(const std::string& namespace_name,
                                               const std::string& name) const {
  return plugin_data_dir_ / kMetadataSubDir / absl::StrCat(namespace_name, "_", name);
}

std::filesystem::path MetadataWriter::MetadataFile(const std::string& namespace_name,
                                                   const std::string& name,
                                                   const std::string& request) const {
  return ClaimDir(namespace_name, name) / request / "metadata.json";
}

std::filesystem::path MetadataWriter::CdiSpecFile(const std::string& uid,
                                                  const std::string& request) const {
  return cdi_dir_ / absl::StrCat(driver_name_, "_metadata_", uid, "_", request, ".json");
}

absl::StatusOr<std::map<std::string, std::string>> MetadataWriter::ProcessPreparedClaim(
    const dra::ResourceClaim& claim, const std::vector<Device>& devices) const {
  if (absl::Status checked = CheckClaimNames(claim.namespace_name, claim.name, claim.uid);
      !checked.ok()) {
    return checked;
  }
  // Each request named (a subrequest as named) with its devices, in the order first met.
  std::vector<std::pair<std::string, std::vector<Device>>> by_request;
  for (const Device& device : devices) {
    for (const std::string& request : device.requests) {
      auto it =
          absl::c_find_if(by_request, [&](const auto& entry) { return entry.first == request; });
      if (it == by_request.end()) it = by_request.insert(by_request.end(), {request, {}});
      it->second.push_back(device);
    }
  }
  std::map<std::string, std::string> cdi_ids;
  for (const auto& [request, served] : by_request) {
    const std::string base = BaseRequestName(request);
    if (absl::Status checked = CheckFileName("request", base); !checked.ok()) return checked;
    if (absl::Status written = WriteMetadata(claim.namespace_name, claim.name, claim.uid,
                                             claim.pod_claim_name, 1, request, served);
        !written.ok()) {
      return absl::Status(written.code(), absl::StrCat("write metadata for request \"", request,
                                                       "\": ", written.message()));
    }
    absl::StatusOr<std::string> id = WriteCdiSpec(claim, base);
    if (!id.ok()) {
      return absl::Status(id.status().code(), absl::StrCat("write CDI spec for request \"", request,
                                                           "\": ", id.status().message()));
    }
    cdi_ids[base] = *std::move(id);
  }
  return cdi_ids;
}

absl::Status MetadataWriter::WriteMetadata(const std::string& namespace_name,
                                           const std::string& name, const std::string& uid,
                                           const std::optional<std::string>& pod_claim_name,
                                           int64_t generation, const std::string& request,
                                           const std::vector<Device>& devices) const {
  OrderedJson entries = OrderedJson::array();
  for (const Device& device : devices) entries.push_back(DeviceEntry(driver_name_, device));
  OrderedJson request_entry = {{"name", request}};
  if (!entries.empty()) request_entry["devices"] = std::move(entries);
  std::string stream;
  for (const std::string& version : versions_) {
    OrderedJson object = {{"kind", "DeviceMetadata"},
                          {"apiVersion", version},
                          {"metadata",
                           {{"name", name},
                            {"namespace", namespace_name},
                            {"uid", uid},
                            {"generation", generation}}}};
    if (pod_claim_name.has_value()) object["podClaimName"] = *pod_claim_name;
    object["requests"] = OrderedJson::array({request_entry});
    absl::StrAppend(&stream, kubeapi::JsonText(object, 2), "\n");
  }
  const std::filesystem::path file = MetadataFile(namespace_name, name, BaseRequestName(request));
  if (absl::Status made = MakeDirs(file.parent_path()); !made.ok()) return made;
  return WriteInPlace(file, stream);
}

absl::StatusOr<std::string> MetadataWriter::WriteCdiSpec(const dra::ResourceClaim& claim,
                                                         const std::string& request) const {
  const std::string device = absl::StrCat(claim.uid, "_", request);
  // Where the containers find it: by the pod's name for a claim made from a template.
  const bool from_template = claim.pod_claim_name.has_value() && !claim.pod_claim_name->empty();
  if (from_template) {
    if (absl::Status checked = CheckFileName("pod claim name", *claim.pod_claim_name);
        !checked.ok()) {
      return checked;
    }
  }
  const std::string container_path = absl::StrCat(
      kMetadataContainerDir, "/", from_template ? "resourceclaimtemplates" : "resourceclaims", "/",
      from_template ? *claim.pod_claim_name : claim.name, "/", request, "/", driver_name_,
      "-metadata.json");
  const OrderedJson spec = {
      {"cdiVersion", kCdiVersion},
      {"kind", absl::StrCat(driver_name_, "/metadata")},
      {"devices",
       OrderedJson::array(
           {{{"name", device},
             {"containerEdits",
              {{"mounts", OrderedJson::array(
                              {{{"hostPath",
                                 MetadataFile(claim.namespace_name, claim.name, request).string()},
                                {"containerPath", container_path},
                                {"options", {"ro", "bind"}}}})}}}}})}};
  if (absl::Status made = MakeDirs(cdi_dir_); !made.ok()) return made;
  if (absl::Status written =
          WriteInPlace(CdiSpecFile(claim.uid, request), kubeapi::JsonText(spec, 2));
      !written.ok()) {
    return written;
  }
  return absl::StrCat(driver_name_, "/metadata=", device);
}

absl::Status MetadataWriter::CleanupClaim(const std::string& namespace_name,
                                          const std::string& name, const std::string& uid) const {
  if (absl::Status checked = CheckClaimNames(namespace_name, name, uid); !checked.ok()) {
    return checked;
  }
  const std::filesystem::path dir = ClaimDir(namespace_name, name);
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  if (error) {
    return absl::ErrnoToStatus(error.value(),
                               absl::StrCat("remove metadata directory ", dir.string()));
  }
  // The claim's specs, matched by name (not a glob pattern, which a UID could steer).
  const std::string prefix = absl::StrCat(driver_name_, "_metadata_", uid, "_");
  std::filesystem::directory_iterator entries(cdi_dir_, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory) return absl::OkStatus();
    return absl::ErrnoToStatus(error.value(),
                               absl::StrCat("list CDI specs in ", cdi_dir_.string()));
  }
  for (const std::filesystem::directory_entry& entry : entries) {
    const std::string file = entry.path().filename().string();
    if (!absl::StartsWith(file, prefix) || !absl::EndsWith(file, ".json")) continue;
    if (!std::filesystem::remove(entry.path(), error) && error) {
      return absl::ErrnoToStatus(error.value(),
                                 absl::StrCat("remove CDI spec ", entry.path().string()));
    }
  }
  return absl::OkStatus();
}

absl::Status MetadataWriter::UpdateRequestMetadata(const std::string& namespace_name,
                                                   const std::string& name, const std::string& uid,
                                                   const std::string& request,
                                                   const std::vector<Device>& devices) const {
  if (absl::Status checked = CheckClaimNames(namespace_name, name, uid); !checked.ok()) {
    return checked;
  }
  const std::string base = BaseRequestName(request);
  if (absl::Status checked = CheckFileName("request", base); !checked.ok()) return checked;
  const std::filesystem::path file = MetadataFile(namespace_name, name, base);
  absl::StatusOr<std::string> existing = ReadWholeFile(file, /*follow_symlinks=*/false);
  if (absl::IsNotFound(existing.status())) {
    return absl::NotFoundError(absl::StrCat(
        "request \"", request, "\" not found in prepared claim ", namespace_name, "/", name));
  }
  if (!existing.ok()) {
    return absl::Status(existing.status().code(),
                        absl::StrCat("read metadata file: ", existing.status().message()));
  }
  // The first object of a version this writer knows gives the generation and the pod's name.
  std::istringstream stream(*existing);
  std::optional<nlohmann::json> previous;
  try {
    while (!previous.has_value() && !(stream >> std::ws).eof()) {
      nlohmann::json object;
      stream >> object;  // one value of the stream
      if (object.is_object() && absl::c_linear_search(versions_, object.value("apiVersion", ""))) {
        previous = std::move(object);
      }
    }
  } catch (const nlohmann::json::exception& error) {
    return absl::DataLossError(absl::StrCat("decode existing metadata: ", error.what()));
  }
  const nlohmann::json* generation = nullptr;
  if (previous.has_value()) {
    auto metadata = previous->find("metadata");
    if (metadata != previous->end() && metadata->is_object()) {
      auto found = metadata->find("generation");
      if (found != metadata->end() && found->is_number_integer()) generation = &*found;
    }
  }
  if (generation == nullptr) {
    return absl::DataLossError(
        "decode existing metadata: no object of a known version with its generation");
  }
  std::optional<std::string> pod_claim_name;
  if (auto found = previous->find("podClaimName"); found != previous->end() && found->is_string()) {
    pod_claim_name = found->get<std::string>();
  }
  return WriteMetadata(namespace_name, name, uid, pod_claim_name, generation->get<int64_t>() + 1,
                       request, devices);
}

}  // namespace devmgr::kubeletplugin
