// TempDir: a private folder under /tmp for one test, removed with everything in it at the end.
// Paths stay short because unix socket paths stop at 108 bytes.
#pragma once

#include <filesystem>
#include <string>

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

}  // namespace devmgr::testing
