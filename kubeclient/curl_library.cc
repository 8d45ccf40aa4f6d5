#include "kubeclient/curl_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "common/library_symbols.h"

namespace devmgr::kubeclient {

absl::StatusOr<CurlLibrary> LoadCurl(const std::string& soname) {
  // Never closed: handles and callbacks of the library may live until the process ends.
  void* library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the Kubernetes API client needs libcurl (", soname,
        "), which cannot be loaded: ", dlerror(), " (on Debian: apt-get install libcurl4)"));
  }
  CurlLibrary curl;
  LibrarySymbols symbols(library);
  symbols.Find("curl_global_init", curl.global_init);
  symbols.Find("curl_easy_init", curl.easy_init);
  symbols.Find("curl_easy_cleanup", curl.easy_cleanup);
  symbols.Find("curl_easy_reset", curl.easy_reset);
  symbols.Find("curl_easy_setopt", curl.easy_setopt);
  symbols.Find("curl_easy_getinfo", curl.easy_getinfo);
  symbols.Find("curl_easy_header", curl.easy_header);
  symbols.Find("curl_easy_strerror", curl.easy_strerror);
  symbols.Find("curl_free", curl.free);
  symbols.Find("curl_slist_append", curl.slist_append);
  symbols.Find("curl_slist_free_all", curl.slist_free_all);
  symbols.Find("curl_url", curl.url);
  symbols.Find("curl_url_cleanup", curl.url_cleanup);
  symbols.Find("curl_url_get", curl.url_get);
  symbols.Find("curl_url_set", curl.url_set);
  symbols.Find("curl_multi_init", curl.multi_init);
  symbols.Find("curl_multi_cleanup", curl.multi_cleanup);
  symbols.Find("curl_multi_add_handle", curl.multi_add_handle);
  symbols.Find("curl_multi_remove_handle", curl.multi_remove_handle);
  symbols.Find("curl_multi_perform", curl.multi_perform);
  symbols.Find("curl_multi_info_read", curl.multi_info_read);
  symbols.Find("curl_multi_poll", curl.multi_poll);
  symbols.Find("curl_multi_wakeup", curl.multi_wakeup);
  if (symbols.missing() != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        soname, " has no function ", symbols.missing(), ": libcurl 7.84 or later is needed"));
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
