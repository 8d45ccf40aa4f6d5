// libcurl is loaded when the first API client needs it: every function the transport calls is
// found, and a missing library or one that is not libcurl is refused with a clear error.
#include "kubeclient/curl_library.h"

#include <gtest/gtest.h>

#include <string>

namespace devmgr::kubeclient {
namespace {

TEST(CurlLibraryTest, FindsEveryFunctionInLibcurl) {
  absl::StatusOr<const CurlLibrary*> curl = Curl();
  ASSERT_TRUE(curl.ok()) << curl.status();
  EXPECT_EQ(std::string((*curl)->easy_strerror(CURLE_OK)), "No error");
  CURL* easy = (*curl)->easy_init();
  ASSERT_NE(easy, nullptr);
  EXPECT_EQ((*curl)->easy_setopt(easy, CURLOPT_NOSIGNAL, 1L), CURLE_OK);
  (*curl)->easy_cleanup(easy);
  absl::StatusOr<const CurlLibrary*> again = Curl();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *curl) << "loaded once";
}

TEST(CurlLibraryTest, AMissingLibraryIsReportedWithWhatToInstall) {
  absl::StatusOr<CurlLibrary> curl = LoadCurl("libdevmgr-test-missing.so.4");
  ASSERT_EQ(curl.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(curl.status().message().find("libdevmgr-test-missing.so.4"), std::string::npos)
      << curl.status();
  EXPECT_NE(curl.status().message().find("apt-get install libcurl4"), std::string::npos)
      << curl.status();
}

TEST(CurlLibraryTest, ALibraryThatIsNotLibcurlIsRefused) {
  // zlib is loaded by every program here (gRPC needs it) and has none of curl's functions.
  absl::StatusOr<CurlLibrary> curl = LoadCurl("libz.so.1");
  ASSERT_EQ(curl.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(curl.status().message().find("has no function curl_global_init"), std::string::npos)
      << curl.status();
}

}  // namespace
}  // namespace devmgr::kubeclient
