#include "kubeletplugin/socket_names.h"

#include <openssl/sha.h>

#include <array>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace devmgr::kubeletplugin {
namespace {

// HashPrefix: the first `bytes` bytes of SHA-256(`data`), in URL-safe base64 without padding.
std::string HashPrefix(absl::string_view data, size_t bytes) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data());
  return absl::WebSafeBase64Escape(
      absl::string_view(reinterpret_cast<const char*>(digest.data()), bytes));
}

bool Fits(const std::filesystem::path& dir, const std::string& file) {
  return (dir / file).string().size() <= kUnixPathMax;
}

}  // namespace

std::string RegistrarSocketFile(absl::string_view driver_name) {
  return absl::StrCat(driver_name, "-reg.sock");
}

std::string RollingUpdateServiceSocketFile(absl::string_view pod_uid) {
  return absl::StrCat("dra-", pod_uid, ".sock");
}

std::string RollingUpdateRegistrarSocketFile(const std::filesystem::path& registry_dir,
                                             absl::string_view driver_name,
                                             absl::string_view pod_uid) {
  std::string name = absl::StrCat(driver_name, "-", pod_uid, "-reg.sock");
  if (Fits(registry_dir, name)) return name;
  name = absl::StrCat(driver_name, "-", HashPrefix(pod_uid, 8), "-reg.sock");
  if (Fits(registry_dir, name)) return name;
  return absl::StrCat("dra-",
                      HashPrefix(absl::StrCat(driver_name, std::string(1, '\0'), pod_uid), 16),
                      "-reg.sock");
}

}  // namespace devmgr::kubeletplugin
