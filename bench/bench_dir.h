// BenchDir: a private folder under /tmp for one benchmark's files and sockets, removed with
// everything in it at the end. (Benchmarks build without the test library, so they carry
// their own.)
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace devmgr::bench {

class BenchDir {
 public:
  BenchDir() {
    std::string pattern = "/tmp/devmgr-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~BenchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  BenchDir(const BenchDir&) = delete;
  BenchDir& operator=(const BenchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path Sub(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace devmgr::bench
