#include "kubeapi/object_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "kubeapi/yaml_objects.h"

namespace devmgr::kubeapi {
namespace {

// The files `path` names: itself, or a folder's .yaml, .yml and .json files by name.
absl::StatusOr<std::vector<std::string>> FilesOf(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return std::vector<std::string>{path};
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    const std::string name = entry.path().string();
    if (entry.is_regular_file() && (absl::EndsWith(name, ".yaml") || absl::EndsWith(name, ".yml") ||
                                    absl::EndsWith(name, ".json"))) {
      files.push_back(name);
    }
  }
  if (error) return absl::InvalidArgumentError(absl::StrCat(path, ": ", error.message()));
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

absl::StatusOr<std::vector<FileObject>> ReadObjectFiles(const std::vector<std::string>& paths) {
  std::vector<FileObject> out;
  for (const std::string& path : paths) {
    absl::StatusOr<std::vector<std::string>> files = FilesOf(path);
    if (!files.ok()) return files.status();
    for (const std::string& file : *files) {
      std::ifstream in(file);
      if (!in) return absl::InvalidArgumentError(absl::StrCat(file, ": cannot be read"));
      std::stringstream text;
      text << in.rdbuf();
      absl::StatusOr<std::vector<nlohmann::json>> objects = ReadObjects(text.str());
      if (!objects.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(file, ": ", objects.status().message()));
      }
      for (nlohmann::json& object : *objects) out.push_back({file, std::move(object)});
    }
  }
  return out;
}

}  // namespace devmgr::kubeapi
