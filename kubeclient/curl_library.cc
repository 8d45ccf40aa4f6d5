#include "kubeclient/curl_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace devmgr::kubeclient {
namespace {

// Find sets `function` to the symbol `name` of `library`; false when it is missing.
template <typename Function>
bool Find(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  return function != nullptr;
}

}  // namespace

absl::StatusOr<CurlLibrary> LoadCurl(const std::string& soname) {
  // Never closed: handles and callbacks of the library may live until the process ends.
  void* library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the Kubernetes API client needs libcurl (", soname,
        "), which cannot be loaded: ", dlerror(), " (on Debian: apt-get install libcurl4)"));
  }
  CurlLibrary curl;
  const char* missing = nullptr;
  auto find = [&](const char* name, auto& function) {
    if (missing == nullptr && !Find(library, name, function)) missing = name;
  };
  find("curl_global_init", curl.global_init);
  find("curl_easy_init", curl.easy_init);
  find("curl_easy_cleanup", curl.easy_cleanup);
  find("curl_easy_reset", curl.easy_reset);
  find("curl_easy_setopt", curl.easy_setopt);
  find("curl_easy_getinfo", curl.easy_getinfo);
  find("curl_easy_header", curl.easy_header);
  find("curl_easy_strerror", curl.easy_strerror);
  find("curl_free", curl.free);
  find("curl_slist_append", curl.slist_append);
  find("curl_slist_free_all", curl.slist_free_all);
  find("curl_url", curl.url);
  find("curl_url_cleanup", curl.url_cleanup);
  find("curl_url_get", curl.url_get);
  find("curl_url_set", curl.url_set);
  find("curl_multi_init", curl.multi_init);
  find("curl_multi_cleanup", curl.multi_cleanup);
  find("curl_multi_add_handle", curl.multi_add_handle);
  find("curl_multi_remove_handle", curl.multi_remove_handle);
  find("curl_multi_perform", curl.multi_perform);
  find("curl_multi_info_read", curl.multi_info_read);
  find("curl_multi_poll", curl.multi_poll);
  find("curl_multi_wakeup", curl.multi_wakeup);
  if (missing != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(soname, " has no function ", missing, ": libcurl 7.84 or later is needed"));
  }
  return curl;
}

absl::StatusOr<const CurlLibrary*> Curl() {
  // Initialised once, thread-safely; curl_global_init is not thread-safe in every libcurl.
  static const absl::StatusOr<CurlLibrary> loaded = [] {
    absl::StatusOr<CurlLibrary> curl = LoadCurl(kCurlSoname);
    if (curl.ok()) curl->global_init(CURL_GLOBAL_DEFAULT);
    return curl;
  }();
  if (!loaded.ok()) return loaded.status();
  return &*loaded;
}

}  // namespace devmgr::kubeclient
