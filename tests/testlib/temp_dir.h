// TempDir: a private folder under /tmp for one test, removed with everything in it at the end.
// Paths stay short because unix socket paths stop at 108 bytes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace devmgr::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Path of `name` inside the folder.
  std::filesystem::path Sub(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// EntriesOf: the names of everything directly in `folder`, dot-names too, sorted.
std::vector<std::string> EntriesOf(const std::filesystem::path& folder);

}  // namespace devmgr::testing
