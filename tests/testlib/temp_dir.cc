#include "tests/testlib/temp_dir.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

namespace devmgr::testing {

TempDir::TempDir() {
  std::string pattern = "/tmp/devmgr-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> EntriesOf(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace devmgr::testing
