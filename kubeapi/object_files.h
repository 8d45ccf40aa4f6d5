// Kubernetes objects read from files and folders, as `kubectl apply -f` takes them: a file, or a
// folder's .yaml, .yml and .json files in name order (not its subfolders); each file a YAML
// stream or JSON (yaml_objects.h), `List` objects unpacked.
#pragma once

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "kubeapi/json_member.h"
#include "nlohmann/json.hpp"

namespace devmgr::kubeapi {

// FileObject: one object and the file it came from.
struct FileObject {
  std::string file;
  nlohmann::json object;
};

// ReadObjectFiles: every object in the files and folders `paths` name, in order.
// InvalidArgument naming the file that cannot be read or parsed.
absl::StatusOr<std::vector<FileObject>> ReadObjectFiles(const std::vector<std::string>& paths);

// DecodeKind decodes the objects of `kind` with `decode` and skips the others (a file may hold
// a whole `kubectl get` of several kinds). InvalidArgument "FILE: KIND NAME: ..." for an object
// `decode` refuses.
template <typename T>
absl::StatusOr<std::vector<T>> DecodeKind(
    const std::vector<FileObject>& objects, absl::string_view kind,
    absl::FunctionRef<absl::StatusOr<T>(const nlohmann::json&)> decode) {
  std::vector<T> out;
  for (const FileObject& item : objects) {
    const auto found = item.object.find("kind");
    if (found == item.object.end() || !found->is_string() || found->get<std::string>() != kind) {
      continue;
    }
    absl::StatusOr<T> decoded = decode(item.object);
    if (!decoded.ok()) {
      const auto metadata = item.object.find("metadata");
      return absl::InvalidArgumentError(absl::StrCat(
          item.file, ": ", kind, " ",
          metadata == item.object.end() ? std::string() : StringMember(*metadata, "name"), ": ",
          decoded.status().message()));
    }
    out.push_back(*std::move(decoded));
  }
  return out;
}

}  // namespace devmgr::kubeapi
