#include "kubeletplugin/socket_names.h"

#include <openssl/sha.h>

#include <algorithm>
#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/field_errors.h"
#include "common/unix_socket.h"

namespace devmgr::kubeletplugin {
namespace {

// HashPrefix: the first `bytes` bytes of SHA-256(`data`), in URL-safe base64 without padding.
std::string HashPrefix(absl::string_view data, size_t bytes) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data());
  return absl::WebSafeBase64Escape(
      absl::string_view(reinterpret_cast<const char*>(digest.data()), bytes));
}

static_assert(kUnixPathMax == kMaxUnixSocketPathBytes, "the names fit the sockets devmgr binds");

// The longest pod UID a rolling update's names take (a UUID has 36 characters).
constexpr size_t kMaxPodUidBytes = 63;

bool Fits(const std::filesystem::path& dir, const std::string& file) {
  return (dir / file).string().size() <= kUnixPathMax;
}

}  // namespace

bool IsValidDriverName(absl::string_view name) {
  FieldErrors errors;
  CheckDriverName(errors, name, "driver");
  return errors.empty();
}

bool IsValidPodUid(absl::string_view uid) {
  return !uid.empty() && uid.size() <= kMaxPodUidBytes &&
         std::all_of(uid.begin(), uid.end(), [](char c) {
           return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-';
         });
}

absl::Status CheckNames(absl::string_view driver_name, absl::string_view pod_uid) {
  if (!IsValidDriverName(driver_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid DRA driver name \"", driver_name,
                     "\": want a DNS subdomain of at most 63 characters like gpu.example.com"));
  }
  if (!pod_uid.empty() && !IsValidPodUid(pod_uid)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid pod UID \"", pod_uid,
                     "\" for a rolling update: want letters, digits and '-' like "
                     "11111111-2222-3333-4444-555555555555"));
  }
  return absl::OkStatus();
}

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
