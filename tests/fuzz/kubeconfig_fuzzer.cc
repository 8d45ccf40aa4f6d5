// Fuzz target for the kubeconfig reader (kubeclient/rest_config.h), which reads the file
// --kubeconfig or KUBECONFIG names: any text is refused with a status naming what is wrong, or
// gives a configuration with a server to talk to; never a crash, and never a program run (an
// exec plugin is read, checked as clientcmd checks it, and run only at a request).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "kubeclient/rest_config.h"
#include "tests/fuzz/invariant.h"

namespace {

// One folder per fuzzing process, holding the file under test.
const std::filesystem::path& File() {
  static const std::filesystem::path file = [] {
    std::string folder =
        (std::filesystem::temp_directory_path() / "kubeconfig-fuzz-XXXXXX").string();
    if (mkdtemp(folder.data()) == nullptr) std::abort();
    return std::filesystem::path(folder) / "config";
  }();
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using devmgr::fuzz::Invariant;
  {
    std::ofstream out(File(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const absl::StatusOr<devmgr::kubeclient::RestConfig> config =
      devmgr::kubeclient::LoadKubeconfig({File()});
  if (!config.ok()) {
    Invariant(!config.status().message().empty(), "a refusal says why");
    Invariant(config.status().code() != absl::StatusCode::kUnknown &&
                  config.status().code() != absl::StatusCode::kInternal,
              "a refusal is one of the reader's statuses");
    return 0;
  }
  Invariant(!config->server.empty(), "a configuration names its server");
  if (config->exec.has_value()) {
    Invariant(!config->exec->command.empty(), "an exec plugin names its command");
    Invariant(config->exec->interactive_mode == "Never" ||
                  config->exec->interactive_mode == "IfAvailable" ||
                  config->exec->interactive_mode == "Always",
              "an exec plugin has one of clientcmd's interactive modes");
    Invariant(config->bearer_token.empty() && config->client_certificate_pem.empty(),
              "an exec plugin is kept only for a user without a token or a certificate");
  }
  if (config->impersonate.user.empty()) {
    Invariant(config->impersonate == devmgr::kubeclient::Impersonation{},
              "the other impersonation fields are read only with `as`");
  }
  return 0;
}
