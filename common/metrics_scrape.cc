#include "common/metrics_scrape.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/unix_socket.h"

namespace devmgr {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;

// Far above any scrape of a node (the families are per resource and driver, not per device).
constexpr std::uint64_t kMaxBodyBytes = 64 << 20;

}  // namespace

absl::StatusOr<HttpAnswer> HttpGetUnix(const std::filesystem::path& socket,
                                       absl::string_view target) {
  if (absl::Status valid = ValidateSocketAddress(socket); !valid.ok()) return valid;
  asio::io_context context;
  asio::local::stream_protocol::socket stream(context);
  boost::system::error_code error;
  stream.connect(asio::local::stream_protocol::endpoint(socket.string()), error);
  if (error) {
    return absl::UnavailableError(absl::StrCat("connect ", socket.string(), ": ", error.message()));
  }
  http::request<http::empty_body> request(
      http::verb::get, boost::beast::string_view(target.data(), target.size()), 11);
  request.set(http::field::host, "localhost");
  request.keep_alive(false);
  http::write(stream, request, error);
  if (error) {
    return absl::UnavailableError(absl::StrCat("GET ", target, ": ", error.message()));
  }
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBodyBytes);
  http::read(stream, buffer, parser, error);
  if (error) {
    return absl::UnavailableError(absl::StrCat("GET ", target, ": ", error.message()));
  }
  http::response<http::string_body> response = parser.release();
  const auto content_type = response[http::field::content_type];
  return HttpAnswer{static_cast<int>(response.result_int()),
                    std::string(content_type.data(), content_type.size()),
                    std::move(response.body())};
}

absl::StatusOr<std::string> ScrapeMetrics(const std::filesystem::path& socket) {
  absl::StatusOr<HttpAnswer> answer = HttpGetUnix(socket, "/metrics");
  if (!answer.ok()) return answer.status();
  if (answer->status != 200) {
    return absl::UnavailableError(
        absl::StrCat("GET /metrics: answered ", answer->status, ": ", answer->body.substr(0, 64)));
  }
  return std::move(answer->body);
}

}  // namespace devmgr
