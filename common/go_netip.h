// IP addresses and prefixes as Go's net/netip parses, prints and compares them, for the texts
// and answers devmgr shares with Go programs: Kubernetes' CEL `ip()` and `cidr()` libraries,
// which DRA device selectors may call.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devmgr {

// GoAddr: netip.Addr, an IPv4 or IPv6 address (the latter with an optional zone).
class GoAddr {
 public:
  // Parse: netip.ParseAddr, with its error texts ("ParseAddr(\"1.2.3\"): IPv4 address too
  // short"): dotted decimal without leading zeros, or RFC 4291 text with an optional "%zone".
  static absl::StatusOr<GoAddr> Parse(absl::string_view text);

  bool Is4() const { return family_ == 4; }
  bool Is6() const { return family_ == 6; }
  // Is4In6: an IPv6 address of the form ::ffff:a.b.c.d.
  bool Is4In6() const;
  const std::string& zone() const { return zone_; }
  // BitLen: 32 or 128.
  int BitLen() const { return Is4() ? 32 : 128; }

  bool IsUnspecified() const;
  bool IsLoopback() const;
  bool IsMulticast() const;
  bool IsLinkLocalMulticast() const;
  bool IsLinkLocalUnicast() const;
  // IsGlobalUnicast: as Go's, private IPv4 and unique local IPv6 addresses included.
  bool IsGlobalUnicast() const;

  // Masked: the address with every bit after the first `bits` cleared (and no zone).
  GoAddr Masked(int bits) const;

  // ToString: Addr.String(): "192.168.0.1", "2001:db8::68" (RFC 5952: lower case, the first
  // longest run of two or more zero groups as "::"), "::ffff:1.2.3.4", "fe80::1%eth0".
  std::string ToString() const;

  bool operator==(const GoAddr&) const = default;

 private:
  friend class GoPrefix;
  // The address's bytes: an IPv4 address in the first four.
  std::array<uint8_t, 16> bytes_{};
  int family_ = 4;
  std::string zone_;

  // The 16-bit group `i` of an IPv6 address.
  uint16_t Group(int i) const {
    return static_cast<uint16_t>(bytes_[2 * i] << 8 | bytes_[2 * i + 1]);
  }
  // Unmap: an IPv4-mapped IPv6 address as its IPv4 address, any other as it is.
  GoAddr Unmap() const;
};

// GoPrefix: netip.Prefix, an address and a prefix length; the address keeps the bits after the
// prefix as written ("192.168.0.1/24"), which Masked clears.
class GoPrefix {
 public:
  // Parse: netip.ParsePrefix, with its error texts ("netip.ParsePrefix(\"10.0.0.0/\"): bad bits
  // after slash: \"\""): an address without a zone, '/', and a decimal length within its size.
  static absl::StatusOr<GoPrefix> Parse(absl::string_view text);

  const GoAddr& addr() const { return addr_; }
  int bits() const { return bits_; }
  GoPrefix Masked() const;
  // Contains: `addr` is of the prefix's family, has no zone and shares its first bits.
  bool Contains(const GoAddr& addr) const;
  // Overlaps: the two prefixes have an address in common.
  bool Overlaps(const GoPrefix& other) const;
  // ToString: "192.168.0.0/24".
  std::string ToString() const;

  bool operator==(const GoPrefix&) const = default;

 private:
  GoAddr addr_;
  int bits_ = 0;
};

}  // namespace devmgr
