#include "common/go_netip.h"

#include <algorithm>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/go_quote.h"

namespace devmgr {
namespace {

// netip's parse error: `ParseAddr("in"): message` and, where it points at the rest of the
// text, ` (at "rest")`.
absl::Status AddrError(absl::string_view in, absl::string_view message,
                       std::optional<absl::string_view> at = std::nullopt) {
  std::string text = absl::StrCat("ParseAddr(", GoQuote(in), "): ", message);
  if (at.has_value() && !at->empty()) absl::StrAppend(&text, " (at ", GoQuote(*at), ")");
  return absl::InvalidArgumentError(text);
}

// The four fields of the dotted IPv4 text `in.substr(begin, end - begin)` into `fields`.
absl::Status ParseIPv4Fields(absl::string_view in, size_t begin, size_t end, uint8_t* fields) {
  const absl::string_view s = in.substr(begin, end - begin);
  int value = 0;
  int position = 0;
  int digits = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c >= '0' && c <= '9') {
      if (digits == 1 && value == 0) {
        return AddrError(in, "IPv4 field has octet with leading zero");
      }
      value = value * 10 + (c - '0');
      ++digits;
      if (value > 255) return AddrError(in, "IPv4 field has value >255");
    } else if (c == '.') {
      if (i == 0 || i == s.size() - 1 || s[i - 1] == '.') {
        return AddrError(in, "IPv4 field must have at least one digit", s.substr(i));
      }
      if (position == 3) return AddrError(in, "IPv4 address too long");
      fields[position++] = static_cast<uint8_t>(value);
      value = 0;
      digits = 0;
    } else {
      return AddrError(in, "unexpected character", s.substr(i));
    }
  }
  if (position < 3) return AddrError(in, "IPv4 address too short");
  fields[3] = static_cast<uint8_t>(value);
  return absl::OkStatus();
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

absl::StatusOr<GoAddr> GoAddr::Parse(absl::string_view text) {
  for (const char c : text) {
    if (c == '.') {
      GoAddr addr;
      if (absl::Status parsed = ParseIPv4Fields(text, 0, text.size(), addr.bytes_.data());
          !parsed.ok()) {
        return parsed;
      }
      return addr;
    }
    if (c == ':') break;
    if (c == '%') return AddrError(text, "missing IPv6 address");
  }
  if (text.find(':') == absl::string_view::npos) return AddrError(text, "unable to parse IP");

  // IPv6: the zone is split off first.
  GoAddr addr;
  addr.family_ = 6;
  absl::string_view s = text;
  if (const size_t percent = s.find('%'); percent != absl::string_view::npos) {
    addr.zone_ = std::string(s.substr(percent + 1));
    s = s.substr(0, percent);
    if (addr.zone_.empty()) return AddrError(text, "zone must be a non-empty string");
  }
  int ellipsis = -1;  // the byte where "::" stands
  if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
    ellipsis = 0;
    s.remove_prefix(2);
    if (s.empty()) return addr;
  }
  int i = 0;
  while (i < 16) {
    size_t offset = 0;
    uint32_t group = 0;
    for (; offset < s.size(); ++offset) {
      const int digit = HexDigit(s[offset]);
      if (digit < 0) break;
      group = (group << 4) + static_cast<uint32_t>(digit);
      if (offset > 3) return AddrError(text, "each group must have 4 or less digits", s);
      if (group > 0xffff) return AddrError(text, "IPv6 field has value >=2^16", s);
    }
    if (offset == 0) {
      return AddrError(text, "each colon-separated field must have at least one digit", s);
    }
    if (offset < s.size() && s[offset] == '.') {
      // An IPv4 address in the last 32 bits.
      if (ellipsis < 0 && i != 12) {
        return AddrError(text,
                         "embedded IPv4 address must replace the final 2 fields of the address", s);
      }
      if (i + 4 > 16) {
        return AddrError(
            text, "too many hex fields to fit an embedded IPv4 at the end of the address", s);
      }
      size_t end = text.size();
      if (!addr.zone_.empty()) end -= addr.zone_.size() + 1;
      if (absl::Status parsed = ParseIPv4Fields(text, end - s.size(), end, &addr.bytes_[i]);
          !parsed.ok()) {
        return parsed;
      }
      s = {};
      i += 4;
      break;
    }
    addr.bytes_[i] = static_cast<uint8_t>(group >> 8);
    addr.bytes_[i + 1] = static_cast<uint8_t>(group);
    i += 2;
    s.remove_prefix(offset);
    if (s.empty()) break;
    if (s[0] != ':') return AddrError(text, "unexpected character, want colon", s);
    if (s.size() == 1) return AddrError(text, "colon must be followed by more characters", s);
    s.remove_prefix(1);
    if (s[0] == ':') {
      if (ellipsis >= 0) return AddrError(text, "multiple :: in address", s);
      ellipsis = i;
      s.remove_prefix(1);
      if (s.empty()) break;
    }
  }
  if (!s.empty()) return AddrError(text, "trailing garbage after address", s);
  if (i < 16) {
    if (ellipsis < 0) return AddrError(text, "address string too short");
    // The groups after "::" move to the end; zeros fill the gap.
    const int gap = 16 - i;
    for (int j = i - 1; j >= ellipsis; --j) addr.bytes_[j + gap] = addr.bytes_[j];
    std::fill(addr.bytes_.begin() + ellipsis, addr.bytes_.begin() + ellipsis + gap, 0);
  } else if (ellipsis >= 0) {
    return AddrError(text, "the :: must expand to an implied field", s);
  }
  return addr;
}

bool GoAddr::Is4In6() const {
  if (!Is6()) return false;
  for (int i = 0; i < 10; ++i) {
    if (bytes_[i] != 0) return false;
  }
  return bytes_[10] == 0xff && bytes_[11] == 0xff;
}

GoAddr GoAddr::Unmap() const {
  if (!Is4In6()) return *this;
  GoAddr v4;
  std::copy(bytes_.begin() + 12, bytes_.end(), v4.bytes_.begin());
  return v4;
}

bool GoAddr::IsUnspecified() const {
  if (!zone_.empty()) return false;
  const int size = Is4() ? 4 : 16;
  return std::all_of(bytes_.begin(), bytes_.begin() + size, [](uint8_t b) { return b == 0; });
}

bool GoAddr::IsLoopback() const {
  const GoAddr ip = Unmap();
  if (ip.Is4()) return ip.bytes_[0] == 127;
  return std::all_of(ip.bytes_.begin(), ip.bytes_.end() - 1, [](uint8_t b) { return b == 0; }) &&
         ip.bytes_[15] == 1;
}

bool GoAddr::IsMulticast() const {
  const GoAddr ip = Unmap();
  if (ip.Is4()) return (ip.bytes_[0] & 0xf0) == 0xe0;
  return ip.bytes_[0] == 0xff;
}

bool GoAddr::IsLinkLocalMulticast() const {
  const GoAddr ip = Unmap();
  if (ip.Is4()) return ip.bytes_[0] == 224 && ip.bytes_[1] == 0 && ip.bytes_[2] == 0;
  return (ip.Group(0) & 0xff0f) == 0xff02;
}

bool GoAddr::IsLinkLocalUnicast() const {
  const GoAddr ip = Unmap();
  if (ip.Is4()) return ip.bytes_[0] == 169 && ip.bytes_[1] == 254;
  return (ip.Group(0) & 0xffc0) == 0xfe80;
}

bool GoAddr::IsGlobalUnicast() const {
  const GoAddr ip = Unmap();
  if (ip.Is4()) {
    const bool broadcast =
        std::all_of(ip.bytes_.begin(), ip.bytes_.begin() + 4, [](uint8_t b) { return b == 0xff; });
    if (ip.IsUnspecified() || broadcast) return false;
  } else if (ip.IsUnspecified()) {
    return false;
  }
  return !ip.IsLoopback() && !ip.IsMulticast() && !ip.IsLinkLocalUnicast();
}

GoAddr GoAddr::Masked(int bits) const {
  GoAddr masked = *this;
  masked.zone_.clear();
  const int size = BitLen() / 8;
  for (int byte = 0; byte < size; ++byte) {
    const int keep = std::clamp(bits - byte * 8, 0, 8);
    masked.bytes_[byte] &= static_cast<uint8_t>(0xff00 >> keep);
  }
  return masked;
}

std::string GoAddr::ToString() const {
  if (Is4()) {
    return absl::StrCat(bytes_[0], ".", bytes_[1], ".", bytes_[2], ".", bytes_[3]);
  }
  std::string out;
  if (Is4In6()) {
    out = absl::StrCat("::ffff:", Unmap().ToString());
  } else {
    // The first longest run of two or more zero groups is written "::".
    int zero_start = -1;
    int zero_length = 1;
    for (int i = 0; i < 8; ++i) {
      int j = i;
      while (j < 8 && Group(j) == 0) ++j;
      if (j - i > zero_length) {
        zero_start = i;
        zero_length = j - i;
      }
    }
    for (int i = 0; i < 8; ++i) {
      if (i == zero_start) {
        out += "::";
        i += zero_length - 1;
        continue;
      }
      if (i > 0 && out.back() != ':') out += ':';
      absl::StrAppend(&out, absl::Hex(Group(i)));
    }
  }
  if (!zone_.empty()) absl::StrAppend(&out, "%", zone_);
  return out;
}

absl::StatusOr<GoPrefix> GoPrefix::Parse(absl::string_view text) {
  auto error = [text](absl::string_view message) {
    return absl::InvalidArgumentError(
        absl::StrCat("netip.ParsePrefix(", GoQuote(text), "): ", message));
  };
  const size_t slash = text.rfind('/');
  if (slash == absl::string_view::npos) return error("no '/'");
  absl::StatusOr<GoAddr> addr = GoAddr::Parse(text.substr(0, slash));
  if (!addr.ok()) return error(addr.status().message());
  if (addr->Is6() && !addr->zone().empty()) {
    return error("IPv6 zones cannot be present in a prefix");
  }
  // Decimal digits without a sign or a leading zero, as Go's check before strconv.Atoi; a
  // number past int64 is not one to Atoi, any other past the address's size out of range.
  const absl::string_view bits_text = text.substr(slash + 1);
  const bool digits =
      !bits_text.empty() &&
      std::all_of(bits_text.begin(), bits_text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || (bits_text.size() > 1 && bits_text[0] == '0') || bits_text.size() > 19 ||
      (bits_text.size() == 19 && bits_text > "9223372036854775807")) {
    return error(absl::StrCat("bad bits after slash: ", GoQuote(bits_text)));
  }
  int bits = 0;
  if (bits_text.size() > 3) return error("prefix length out of range");
  for (const char c : bits_text) bits = bits * 10 + (c - '0');
  if (bits > addr->BitLen()) return error("prefix length out of range");
  GoPrefix prefix;
  prefix.addr_ = *std::move(addr);
  prefix.bits_ = bits;
  return prefix;
}

GoPrefix GoPrefix::Masked() const {
  GoPrefix masked = *this;
  masked.addr_ = addr_.Masked(bits_);
  return masked;
}

bool GoPrefix::Contains(const GoAddr& addr) const {
  if (!addr.zone().empty() || addr.Is4() != addr_.Is4()) return false;
  return addr.Masked(bits_) == addr_.Masked(bits_);
}

bool GoPrefix::Overlaps(const GoPrefix& other) const {
  if (addr_.Is4() != other.addr_.Is4()) return false;
  const int shorter = std::min(bits_, other.bits_);
  return addr_.Masked(shorter) == other.addr_.Masked(shorter);
}

std::string GoPrefix::ToString() const { return absl::StrCat(addr_.ToString(), "/", bits_); }

}  // namespace devmgr
