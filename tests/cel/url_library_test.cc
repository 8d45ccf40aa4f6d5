// Kubernetes' URL library in selectors: the "URL parsing" case of apiextensions-apiserver's
// TestValidationExpressions, expression by expression (its `self.url` is here a device
// attribute holding the same text), and the texts and answers of the parse that Go 1.26's
// net/url gives (common/go_url.h), which a selector sees through url() and isURL().
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cel/program.h"
#include "tests/cel/eval_text.h"

namespace devmgr::cel {
namespace {

TEST(CelURLLibraryTest, TestValidationExpressionsURLParsing) {
  const std::vector<std::string> valid = {
      "url('/path').getScheme() == ''",
      "url('https://example.com/').getScheme() == 'https'",
      "url('https://example.com:80/').getHost() == 'example.com:80'",
      "url('https://example.com/').getHost() == 'example.com'",
      "url('https://[::1]:80/').getHost() == '[::1]:80'",
      "url('https://[::1]/').getHost() == '[::1]'",
      "url('/path').getHost() == ''",
      "url('https://example.com:80/').getHostname() == 'example.com'",
      "url('https://127.0.0.1/').getHostname() == '127.0.0.1'",
      "url('https://[::1]/').getHostname() == '::1'",
      "url('/path').getHostname() == ''",
      "url('https://example.com:80/').getPort() == '80'",
      "url('https://example.com/').getPort() == ''",
      "url('/path').getPort() == ''",
      "url('https://example.com/path').getEscapedPath() == '/path'",
      "url('https://example.com/with space/').getEscapedPath() == '/with%20space/'",
      "url('https://example.com').getEscapedPath() == ''",
      "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == { 'k1': ['a'], 'k2': ['b', "
      "'c']}",
      "url('https://example.com/path?key with spaces=value with spaces').getQuery() == { 'key "
      "with spaces': ['value with spaces']}",
      "url('https://example.com/path?').getQuery() == {}",
      "url('https://example.com/path').getQuery() == {}",
      "url(device.attributes['dra.example.com'].url).getScheme() == 'https'",
      "url(device.attributes['dra.example.com'].url).getHost() == 'kubernetes.io:80'",
      "url(device.attributes['dra.example.com'].url).getHostname() == 'kubernetes.io'",
      "url(device.attributes['dra.example.com'].url).getPort() == '80'",
      "url(device.attributes['dra.example.com'].url).getEscapedPath() == '/docs/home'",
      "url(device.attributes['dra.example.com'].url).getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
      "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
      "isURL('/path') == true",
      "isURL('https://a:b:c/') == false",
      "isURL('../relative-path') == false",
      // "cost for extended lib calculated correctly: url": an opaque URL, without a host.
      "url('https:://kubernetes.io/').getHostname() != 'test'",
  };
  Device device;
  device.driver = "dra.example.com";
  device.attributes["url"] =
      Value::String("https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor");
  for (const std::string& expression : valid) {
    EXPECT_EQ(EvalText(expression, device), "true") << expression;
  }
}

TEST(CelURLLibraryTest, ATextThatIsNotAURLGivesGosParseError) {
  const std::string prefix = "error: URL parse error during conversion from string: ";
  ExpectCases({
      {"a second port", "url('https://a:b:c/') == url('/')",
       prefix + "parse \"https://a:b:c/\": invalid port \":b:c\" after host"},
      {"a relative path", "url('../relative-path') == url('/')",
       prefix + "parse \"../relative-path\": invalid URI for request"},
      {"empty", "url('') == url('/')", prefix + "parse \"\": empty url"},
      {"a bad escape", "url('/a%zz') == url('/')",
       prefix + "parse \"/a%zz\": invalid URL escape \"%zz\""},
      {"an escaped ASCII byte in a host", "url('http://a%41/') == url('/')",
       prefix + "parse \"http://a%41/\": invalid URL escape \"%41\""},
      {"a space in a host", "url('http://a b/') == url('/')",
       prefix + "parse \"http://a b/\": invalid character \" \" in host name"},
      {"an IPv4 address between brackets", "url('http://[1.2.3.4]/') == url('/')",
       prefix + "parse \"http://[1.2.3.4]/\": invalid IP-literal"},
      {"a name between brackets", "url('http://[example.com]/') == url('/')",
       prefix + "parse \"http://[example.com]/\": invalid host: ParseAddr(\"example.com\"): "
                "unexpected character (at \"example.com\")"},
      {"a bracket after the start of the host", "url('http://a[::1]/') == url('/')",
       prefix + "parse \"http://a[::1]/\": invalid IP-literal"},
      {"an IPv6 address without brackets, http", "url('http://::1/') == url('/')",
       prefix + "parse \"http://::1/\": invalid port \"::1\" after host"},
      {"a control character", "url('/a\\tb') == url('/')",
       prefix + "parse \"/a\\tb\": net/url: invalid control character in URL"},
      {"a scheme without a name", "url('://x') == url('/')",
       prefix + "parse \"://x\": missing protocol scheme"},
      {"a bad escape in the fragment", "url('/a#%zz') == url('/')",
       prefix + "parse \"/a#%zz\": invalid URL escape \"%zz\""},
      {"isURL of the same", "isURL('http://[1.2.3.4]/') || isURL('http://::1/') || isURL('')",
       "false"},
  });
}

TEST(CelURLLibraryTest, AnswersAsGosNetURL) {
  ExpectCases({
      // Only http and https are strict about a host's colons (Go 1.26); other schemes keep
      // the last one as the port's, so a list of hosts, as databases write them, passes.
      {"hosts of a database", "url('mongodb://h1:1,h2:2/db').getPort() == '2'", "true"},
      {"user information", "url('https://u%40x:p@example.com/').getHost() == 'example.com'",
       "true"},
      {"a zone", "url('http://[fe80::1%25en0]:8080/').getHostname() == 'fe80::1%en0'", "true"},
      {"an IPv4-mapped address",
       "url('http://[::ffff:1.2.3.4]/').getHostname() == '::ffff:1.2.3.4'", "true"},
      {"a scheme in upper case", "url('HTTPS://example.com/').getScheme() == 'https'", "true"},
      {"the path as written", "url('/a%2Fb').getEscapedPath() == '/a%2Fb'", "true"},
      {"the path escaped", "url('/a%20b/c d').getEscapedPath() == '/a%20b/c%20d'", "true"},
      {"'#' in the path of a request",
       "url('/p#f').getEscapedPath() == '/p' && isURL('/p#%zz') == false", "true"},
      {"a query's escapes and '+'",
       "url('/p?a%20b=c+d&e=&f').getQuery() == {'a b': ['c d'], 'e': [''], 'f': ['']}", "true"},
      {"pairs that cannot be read are left out",
       "url('/p?a=1;b=2&c=%zz&d=4').getQuery() == {'d': ['4']}", "true"},
      {"an opaque URL", "url('mailto:user@example.com').getHost() == ''", "true"},
      {"equal when they print the same", "url('/a%20b') == url('/a b')", "true"},
      {"not equal", "url('https://example.com/a') != url('https://example.com/b')", "true"},
      {"the type's name", "type(url('/a')) == kubernetes.URL", "true"},
      {"isURL takes a string", "isURL(1)",
       "compile: found no matching overload for 'isURL' applied to '(int)'"},
      {"no string() of a URL", "string(url('/a')) == '/a'",
       "compile: found no matching overload for 'string' applied to '(kubernetes.URL)'"},
  });
}

}  // namespace
}  // namespace devmgr::cel
