#include "common/go_url.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/go_netip.h"
#include "common/go_quote.h"

namespace devmgr {
namespace {

// The part of a URL a text is escaped or unescaped for; each allows different characters.
enum class Part { kPath, kPathSegment, kHost, kZone, kUserPassword, kQueryComponent, kFragment };

// The most parameters a query may have before Go refuses to read it (urlmaxqueryparams).
constexpr size_t kMaxQueryParameters = 10000;

bool IsHex(char c) { return absl::ascii_isxdigit(static_cast<unsigned char>(c)); }

uint8_t Unhex(char c) {
  if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
  return static_cast<uint8_t>(c - 'A' + 10);
}

// ShouldEscape: whether `c` must be written as %XX in `part` (RFC 3986, with Go's choices: a
// host keeps the sub-delimiters, ':', brackets, '<', '>' and '"'; a path keeps all reserved
// characters but '?'; a fragment keeps them all, and '!', '(', ')', '*').
bool ShouldEscape(unsigned char c, Part part) {
  if (absl::ascii_isalnum(c)) return false;
  const bool host = part == Part::kHost || part == Part::kZone;
  if (host && absl::StrContains("!$&'()*+,;=:[]<>\"", c)) return false;
  if (absl::StrContains("-_.~", c)) return false;  // unreserved
  if (absl::StrContains("$&+,/:;=?@", c)) {        // reserved: each part keeps some
    switch (part) {
      case Part::kPath:
        return c == '?';
      case Part::kPathSegment:
        return c == '/' || c == ';' || c == ',' || c == '?';
      case Part::kUserPassword:
        return c == '@' || c == '/' || c == '?' || c == ':';
      case Part::kQueryComponent:
        return true;
      case Part::kFragment:
        return false;
      case Part::kHost:
      case Part::kZone:
        return true;
    }
  }
  return !(part == Part::kFragment && absl::StrContains("!()*", c));
}

absl::Status EscapeError(absl::string_view escape) {
  return absl::InvalidArgumentError(absl::StrCat("invalid URL escape ", GoQuote(escape)));
}

// Unescape: `text` with each %XX decoded (and '+' as a space in a query), or Go's error for a
// malformed escape, or for a host, an escaped ASCII byte or a character a host cannot hold.
absl::StatusOr<std::string> Unescape(absl::string_view text, Part part) {
  const bool host = part == Part::kHost || part == Part::kZone;
  bool decodes = false;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '%') {
      decodes = true;
      if (i + 2 >= text.size() || !IsHex(text[i + 1]) || !IsHex(text[i + 2])) {
        return EscapeError(text.substr(i, 3));
      }
      const absl::string_view escape = text.substr(i, 3);
      // A host escapes only non-ASCII bytes (RFC 3986), and "%25" begins an IPv6 zone (RFC
      // 6874), in which Go lets through the escapes of what a host could hold, and spaces.
      if (part == Part::kHost && Unhex(text[i + 1]) < 8 && escape != "%25") {
        return EscapeError(escape);
      }
      if (part == Part::kZone) {
        const auto byte = static_cast<unsigned char>(Unhex(text[i + 1]) << 4 | Unhex(text[i + 2]));
        if (escape != "%25" && byte != ' ' && ShouldEscape(byte, Part::kHost)) {
          return EscapeError(escape);
        }
      }
      i += 3;
      continue;
    }
    if (c == '+') {
      decodes = decodes || part == Part::kQueryComponent;
    } else if (host && static_cast<unsigned char>(c) < 0x80 &&
               ShouldEscape(static_cast<unsigned char>(c), part)) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid character ", GoQuote(text.substr(i, 1)), " in host name"));
    }
    ++i;
  }
  if (!decodes) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%') {
      out += static_cast<char>(Unhex(text[i + 1]) << 4 | Unhex(text[i + 2]));
      i += 2;
    } else if (text[i] == '+' && part == Part::kQueryComponent) {
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

// Escape: `text` with what `part` cannot hold as %XX (upper-case hex), and a query's spaces as
// '+'.
std::string Escape(absl::string_view text, Part part) {
  constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == ' ' && part == Part::kQueryComponent) {
      out += '+';
    } else if (ShouldEscape(byte, part)) {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// ValidEncoded: whether `text` needs no escaping beyond what it has to stand for itself in
// `part` (its escapes, and the sub-delimiters, ':', '@' and brackets, are left as written).
bool ValidEncoded(absl::string_view text, Part part) {
  return std::all_of(text.begin(), text.end(), [part](char c) {
    return absl::StrContains("!$&'()*+,;=:@[]%", c) ||
           !ShouldEscape(static_cast<unsigned char>(c), part);
  });
}

// ValidOptionalPort: "" or ':' followed by digits only.
bool ValidOptionalPort(absl::string_view port) {
  if (port.empty()) return true;
  if (port[0] != ':') return false;
  return std::all_of(port.begin() + 1, port.end(), [](char c) { return c >= '0' && c <= '9'; });
}

absl::Status InvalidPort(absl::string_view colon_port) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid port ", GoQuote(colon_port), " after host"));
}

// ParseHost: an authority's host[:port], unescaped. An IPv6 address (and its zone) between
// brackets; for http and https only one ':' outside them, Go 1.26's default (urlstrictcolons);
// for other schemes the last ':' begins the port, as it always did.
absl::StatusOr<std::string> ParseHost(absl::string_view scheme, absl::string_view host) {
  const size_t open = host.rfind('[');
  if (open != absl::string_view::npos && open > 0) {
    return absl::InvalidArgumentError("invalid IP-literal");
  }
  if (open == 0) {
    const size_t close = host.rfind(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError("missing ']' in host");
    }
    const absl::string_view colon_port = host.substr(close + 1);
    if (!ValidOptionalPort(colon_port)) return InvalidPort(colon_port);
    absl::StatusOr<std::string> port = Unescape(colon_port, Part::kHost);
    if (!port.ok()) return port.status();
    const absl::string_view name = host.substr(1, close - 1);
    const size_t zone = name.find("%25");
    absl::StatusOr<std::string> address = Unescape(name.substr(0, zone), Part::kHost);
    if (!address.ok()) return address.status();
    if (zone != absl::string_view::npos) {
      absl::StatusOr<std::string> zone_text = Unescape(name.substr(zone), Part::kZone);
      if (!zone_text.ok()) return zone_text.status();
      *address += *zone_text;
    }
    // Only an IPv6 address may stand between brackets (IPv4-mapped ones included).
    absl::StatusOr<GoAddr> parsed = GoAddr::Parse(*address);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("invalid host: ", parsed.status().message()));
    }
    if (parsed->Is4()) return absl::InvalidArgumentError("invalid IP-literal");
    return absl::StrCat("[", *address, "]", *port);
  }
  size_t colon = host.find(':');
  if (colon != absl::string_view::npos) {
    if (scheme != "http" && scheme != "https") colon = host.rfind(':');
    if (!ValidOptionalPort(host.substr(colon))) return InvalidPort(host.substr(colon));
  }
  return Unescape(host, Part::kHost);
}

bool ValidUserinfo(absl::string_view userinfo) {
  return std::all_of(userinfo.begin(), userinfo.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
           absl::StrContains("-._:~!$&'()*+,;=%@", c);
  });
}

// ParseAuthority: [userinfo@]host[:port]; the user information ends at the last '@'.
absl::Status ParseAuthority(absl::string_view authority, GoURL& url) {
  const size_t at = authority.rfind('@');
  const bool has_user = at != absl::string_view::npos;
  absl::StatusOr<std::string> host =
      ParseHost(url.scheme, has_user ? authority.substr(at + 1) : authority);
  if (!host.ok()) return host.status();
  url.host = *std::move(host);
  if (!has_user) return absl::OkStatus();
  const absl::string_view userinfo = authority.substr(0, at);
  if (!ValidUserinfo(userinfo)) return absl::InvalidArgumentError("net/url: invalid userinfo");
  const size_t colon = userinfo.find(':');
  absl::StatusOr<std::string> username = Unescape(userinfo.substr(0, colon), Part::kUserPassword);
  if (!username.ok()) return username.status();
  GoUserinfo user{*std::move(username), "", colon != absl::string_view::npos};
  if (user.password_set) {
    absl::StatusOr<std::string> password =
        Unescape(userinfo.substr(colon + 1), Part::kUserPassword);
    if (!password.ok()) return password.status();
    user.password = *std::move(password);
  }
  url.user = std::move(user);
  return absl::OkStatus();
}

// SetEscaped: `value` unescaped from `text`, and `raw` the text when escaping the value again
// would not give it back.
absl::Status SetEscaped(absl::string_view text, Part part, std::string& value, std::string& raw) {
  absl::StatusOr<std::string> unescaped = Unescape(text, part);
  if (!unescaped.ok()) return unescaped.status();
  value = *std::move(unescaped);
  raw = Escape(value, part) == text ? "" : std::string(text);
  return absl::OkStatus();
}

// Escaped: `raw` when it is a valid escaping of `value`, otherwise `value` escaped; the path
// "*" (an OPTIONS request's target) stays as it is.
std::string Escaped(const std::string& value, const std::string& raw, Part part) {
  if (!raw.empty() && ValidEncoded(raw, part)) {
    absl::StatusOr<std::string> unescaped = Unescape(raw, part);
    if (unescaped.ok() && *unescaped == value) return raw;
  }
  if (part == Part::kPath && value == "*") return value;
  return Escape(value, part);
}

// SchemeLength: the length of the scheme before the first ':' (a letter, then letters, digits,
// '+', '-' or '.'), or 0 where there is none; an error when the text begins with ':'.
absl::StatusOr<size_t> SchemeLength(absl::string_view raw) {
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    if (absl::ascii_isalpha(c)) continue;
    if (absl::ascii_isdigit(c) || c == '+' || c == '-' || c == '.') {
      if (i == 0) return 0;
      continue;
    }
    if (c == ':') {
      if (i == 0) return absl::InvalidArgumentError("missing protocol scheme");
      return i;
    }
    return 0;
  }
  return 0;
}

// ParseReference: url.parse, the text before any fragment; `request` for an HTTP request's
// target (an absolute URL or path).
absl::StatusOr<GoURL> ParseReference(absl::string_view raw, bool request) {
  if (std::any_of(raw.begin(), raw.end(),
                  [](char c) { return static_cast<unsigned char>(c) < ' ' || c == 0x7f; })) {
    return absl::InvalidArgumentError("net/url: invalid control character in URL");
  }
  if (raw.empty() && request) return absl::InvalidArgumentError("empty url");
  GoURL url;
  if (raw == "*") {
    url.path = "*";
    return url;
  }
  absl::StatusOr<size_t> scheme = SchemeLength(raw);
  if (!scheme.ok()) return scheme.status();
  absl::string_view rest = raw;
  if (*scheme > 0) {
    url.scheme = absl::AsciiStrToLower(raw.substr(0, *scheme));
    rest.remove_prefix(*scheme + 1);
  }
  if (absl::EndsWith(rest, "?") && std::count(rest.begin(), rest.end(), '?') == 1) {
    url.force_query = true;
    rest.remove_suffix(1);
  } else if (const size_t question = rest.find('?'); question != absl::string_view::npos) {
    url.raw_query = std::string(rest.substr(question + 1));
    rest = rest.substr(0, question);
  }
  if (!absl::StartsWith(rest, "/")) {
    if (!url.scheme.empty()) {  // scheme:opaque, a path without a root
      url.opaque = std::string(rest);
      return url;
    }
    if (request) return absl::InvalidArgumentError("invalid URI for request");
    // A relative path whose first segment holds a ':' would read as a scheme.
    if (absl::StrContains(rest.substr(0, rest.find('/')), ':')) {
      return absl::InvalidArgumentError("first path segment in URL cannot contain colon");
    }
  }
  if ((!url.scheme.empty() || (!request && !absl::StartsWith(rest, "///"))) &&
      absl::StartsWith(rest, "//")) {
    absl::string_view authority = rest.substr(2);
    const size_t slash = authority.find('/');
    rest = slash == absl::string_view::npos ? absl::string_view() : authority.substr(slash);
    if (absl::Status status = ParseAuthority(authority.substr(0, slash), url); !status.ok()) {
      return status;
    }
  } else if (!url.scheme.empty() && absl::StartsWith(rest, "/")) {
    url.omit_host = true;
  }
  if (absl::Status status = SetEscaped(rest, Part::kPath, url.path, url.raw_path); !status.ok()) {
    return status;
  }
  return url;
}

absl::Status ParseError(absl::string_view raw, const absl::Status& error) {
  return absl::InvalidArgumentError(absl::StrCat("parse ", GoQuote(raw), ": ", error.message()));
}

}  // namespace

absl::StatusOr<GoURL> GoURL::Parse(absl::string_view raw) {
  const size_t hash = raw.find('#');
  const absl::string_view reference = raw.substr(0, hash);
  absl::StatusOr<GoURL> url = ParseReference(reference, /*request=*/false);
  if (!url.ok()) return ParseError(reference, url.status());
  if (hash == absl::string_view::npos || hash + 1 == raw.size()) return url;
  if (absl::Status status =
          SetEscaped(raw.substr(hash + 1), Part::kFragment, url->fragment, url->raw_fragment);
      !status.ok()) {
    return ParseError(raw, status);
  }
  return url;
}

absl::StatusOr<GoURL> GoURL::ParseRequestURI(absl::string_view raw) {
  absl::StatusOr<GoURL> url = ParseReference(raw, /*request=*/true);
  if (!url.ok()) return ParseError(raw, url.status());
  return url;
}

std::string GoURL::EscapedPath() const { return Escaped(path, raw_path, Part::kPath); }

std::string GoURL::EscapedFragment() const {
  return Escaped(fragment, raw_fragment, Part::kFragment);
}

namespace {

// SplitHostPort: a host and its numeric port (a port that is not one stays in the host), the
// host without an IPv6 address's brackets.
std::pair<absl::string_view, absl::string_view> SplitHostPort(absl::string_view host_port) {
  absl::string_view host = host_port;
  absl::string_view port;
  const size_t colon = host.rfind(':');
  if (colon != absl::string_view::npos && ValidOptionalPort(host.substr(colon))) {
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, port};
}

}  // namespace

std::string GoURL::Hostname() const { return std::string(SplitHostPort(host).first); }

std::string GoURL::Port() const { return std::string(SplitHostPort(host).second); }

GoQueryValues GoURL::Query() const {
  GoQueryValues values;
  if (static_cast<size_t>(std::count(raw_query.begin(), raw_query.end(), '&')) + 1 >
      kMaxQueryParameters) {
    return values;
  }
  std::map<std::string, size_t> index;
  absl::string_view query = raw_query;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const absl::string_view pair = query.substr(0, amp);
    query = amp == absl::string_view::npos ? absl::string_view() : query.substr(amp + 1);
    if (pair.empty() || absl::StrContains(pair, ';')) continue;
    const size_t equals = pair.find('=');
    absl::StatusOr<std::string> key = Unescape(pair.substr(0, equals), Part::kQueryComponent);
    absl::StatusOr<std::string> value =
        Unescape(equals == absl::string_view::npos ? absl::string_view() : pair.substr(equals + 1),
                 Part::kQueryComponent);
    if (!key.ok() || !value.ok()) continue;
    auto [at, added] = index.emplace(*key, values.size());
    if (added) values.emplace_back(*std::move(key), std::vector<std::string>());
    values[at->second].second.push_back(*std::move(value));
  }
  return values;
}

std::string GoURL::String() const {
  std::string out;
  if (!scheme.empty()) absl::StrAppend(&out, scheme, ":");
  if (!opaque.empty()) {
    out += opaque;
  } else {
    if ((!scheme.empty() || !host.empty() || user.has_value()) &&
        !(omit_host && host.empty() && !user.has_value())) {
      if (!host.empty() || !path.empty() || user.has_value()) out += "//";
      if (user.has_value()) {
        out += Escape(user->username, Part::kUserPassword);
        if (user->password_set)
          absl::StrAppend(&out, ":", Escape(user->password, Part::kUserPassword));
        out += '@';
      }
      out += Escape(host, Part::kHost);
    }
    const std::string escaped_path = EscapedPath();
    if (!escaped_path.empty() && escaped_path[0] != '/' && !host.empty()) out += '/';
    // A relative path whose first segment holds a ':' is written after "./", so that it does
    // not read as a scheme.
    if (out.empty() &&
        absl::StrContains(absl::string_view(escaped_path).substr(0, escaped_path.find('/')), ':')) {
      out += "./";
    }
    out += escaped_path;
  }
  if (force_query || !raw_query.empty()) absl::StrAppend(&out, "?", raw_query);
  if (!fragment.empty()) absl::StrAppend(&out, "#", EscapedFragment());
  return out;
}

}  // namespace devmgr
