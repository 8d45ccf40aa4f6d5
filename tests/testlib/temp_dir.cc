#include "tests/testlib/temp_dir.h"

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

}  // namespace devmgr::testing
