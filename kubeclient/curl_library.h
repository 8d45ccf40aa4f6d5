// CurlLibrary: the libcurl functions the Kubernetes API client calls, found in libcurl.so.4
// when the first client needs them instead of when the program starts.
//
// Linked at build time, libcurl brings about thirty libraries of its own (TLS stacks, Kerberos,
// LDAP, SSH, compression) that the dynamic loader maps and relocates at every start of every
// devmgr process, whether it talks to a cluster or not: on this project's test machine that
// was 7 ms and 6 MiB resident for a program that only links them. devmgr serves most nodes
// without a cluster, and most of its command-line tools never reach one, so libcurl is loaded
// only by the first HttpTransport and stays loaded until the process ends.
//
// Thread-safety: Curl() may be called from any thread; the library it returns is immutable.
#pragma once

#include <curl/curl.h>

#include <string>

#include "absl/status/statusor.h"

namespace devmgr::kubeclient {

// The functions, with libcurl's own signatures. curl_easy_setopt and curl_easy_getinfo take
// their argument through "...": callers pass the types libcurl documents for each option (long,
// curl_off_t, a pointer), as the compile-time checks of <curl/curl.h> would have required.
struct CurlLibrary {
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_reset) easy_reset = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_header) easy_header = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_free) free = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
  decltype(&::curl_url) url = nullptr;
  decltype(&::curl_url_cleanup) url_cleanup = nullptr;
  decltype(&::curl_url_get) url_get = nullptr;
  decltype(&::curl_url_set) url_set = nullptr;
  decltype(&::curl_multi_init) multi_init = nullptr;
  decltype(&::curl_multi_cleanup) multi_cleanup = nullptr;
  decltype(&::curl_multi_add_handle) multi_add_handle = nullptr;
  decltype(&::curl_multi_remove_handle) multi_remove_handle = nullptr;
  decltype(&::curl_multi_perform) multi_perform = nullptr;
  decltype(&::curl_multi_info_read) multi_info_read = nullptr;
  decltype(&::curl_multi_poll) multi_poll = nullptr;
  decltype(&::curl_multi_wakeup) multi_wakeup = nullptr;
};

// The library file loaded: libcurl's soname (Debian's package libcurl4, and other
// distributions' libcurl).
inline constexpr char kCurlSoname[] = "libcurl.so.4";

// LoadCurl loads `soname` and finds every function in it; the library stays loaded.
// FailedPrecondition, naming the file and the loader's reason, when the library or one of its
// functions cannot be found.
absl::StatusOr<CurlLibrary> LoadCurl(const std::string& soname);

// Curl is LoadCurl(kCurlSoname) once per process, then curl_global_init; later calls return
// the same library, or the same error.
absl::StatusOr<const CurlLibrary*> Curl();

}  // namespace devmgr::kubeclient
