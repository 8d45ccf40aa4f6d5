#include "kubeapi/object_files.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/errno_status.h"
#include "kubeapi/yaml_objects.h"

namespace devmgr::kubeapi {
namespace {

// The files `path` names: itself, or a folder's .yaml, .yml and .json files by name.
absl::StatusOr<std::vector<std::string>> FilesOf(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return std::vector<std::string>{path};
  std::vector<std::string> files;
  // Every step with an error code: one that throws (a symlink loop, a symlink into a folder
  // that cannot be searched) ended the process, the daemon's at an admission among them.
  std::filesystem::directory_iterator it(path, error);
  for (; !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().string();
    if (!absl::EndsWith(name, ".yaml") && !absl::EndsWith(name, ".yml") &&
        !absl::EndsWith(name, ".json")) {
      continue;
    }
    std::error_code type_error;
    const bool regular = it->is_regular_file(type_error);
    if (type_error) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", type_error.message()));
    }
    if (regular) files.push_back(name);
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
      // A stream, not ReadWholeFile: a pipe (`--slices <(kubectl get ...)`) is read too.
      errno = 0;
      std::ifstream in(file);
      if (!in) {
        // Why not, in the system's words ("cannot open F: No such file or directory").
        return absl::InvalidArgumentError(
            ErrnoStatus(errno != 0 ? errno : EIO, "cannot open", file).message());
      }
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
