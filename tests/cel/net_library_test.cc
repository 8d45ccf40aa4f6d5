// Kubernetes' IP and CIDR libraries in selectors: upstream's TestIP and TestCIDR tables
// (k8s.io/apiserver/pkg/cel/library), case by case under their names. A selector evaluates to
// bool, so a case whose result is an address or a prefix compares it with the value upstream
// expects; the two cases that test `type()` are left out (type values are not in the subset).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cel/program.h"
#include "tests/cel/eval_text.h"

namespace devmgr::cel {
namespace {

TEST(CelNetLibraryTest, TestIP) {
  ExpectCases({
      {"parse ipv4", R"(ip("192.168.0.1") == ip("192.168.0.1"))", "true"},
      {"parse ipv4 (text)", R"(string(ip("192.168.0.1")) == "192.168.0.1")", "true"},
      {"parse invalid ipv4", R"(ip("192.168.0.1.0") == ip("192.168.0.1"))",
       "error: IP Address \"192.168.0.1.0\" parse error during conversion from string: "
       "ParseAddr(\"192.168.0.1.0\"): IPv4 address too long"},
      {"isIP valid ipv4", R"(isIP("192.168.0.1"))", "true"},
      {"isIP invalid ipv4", R"(isIP("192.168.0.1.0"))", "false"},
      {"ip.isCanonical valid ipv4", R"(ip.isCanonical("127.0.0.1"))", "true"},
      {"ip.isCanonical invalid ipv4", R"(ip.isCanonical("127.0.0.1.0"))",
       "error: IP Address \"127.0.0.1.0\" parse error during conversion from string: "
       "ParseAddr(\"127.0.0.1.0\"): IPv4 address too long"},
      {"ipv4 family", R"(ip("192.168.0.1").family() == 4)", "true"},
      {"ipv4 isUnspecified true", R"(ip("0.0.0.0").isUnspecified())", "true"},
      {"ipv4 isUnspecified false", R"(ip("127.0.0.1").isUnspecified())", "false"},
      {"ipv4 isLoopback true", R"(ip("127.0.0.1").isLoopback())", "true"},
      {"ipv4 isLoopback false", R"(ip("1.2.3.4").isLoopback())", "false"},
      {"ipv4 isLinkLocalMulticast true", R"(ip("224.0.0.1").isLinkLocalMulticast())", "true"},
      {"ipv4 isLinkLocalMulticast false", R"(ip("224.0.1.1").isLinkLocalMulticast())", "false"},
      {"ipv4 isLinkLocalUnicast true", R"(ip("169.254.169.254").isLinkLocalUnicast())", "true"},
      {"ipv4 isLinkLocalUnicast false", R"(ip("192.168.0.1").isLinkLocalUnicast())", "false"},
      {"ipv4 isGlobalUnicast true", R"(ip("192.168.0.1").isGlobalUnicast())", "true"},
      {"ipv4 isGlobalUnicast false", R"(ip("255.255.255.255").isGlobalUnicast())", "false"},
      {"parse ipv6", R"(ip("2001:db8::68") == ip("2001:db8::68"))", "true"},
      {"parse invalid ipv6", R"(ip("2001:db8:::68") == ip("2001:db8::68"))",
       "error: IP Address \"2001:db8:::68\" parse error during conversion from string: "
       "ParseAddr(\"2001:db8:::68\"): each colon-separated field must have at least one digit "
       "(at \":68\")"},
      {"isIP valid ipv6", R"(isIP("2001:db8::68"))", "true"},
      {"isIP invalid ipv4", R"(isIP("2001:db8:::68"))", "false"},
      {"ip.isCanonical valid ipv6", R"(ip.isCanonical("2001:db8::68"))", "true"},
      {"ip.isCanonical non-canonical ipv6", R"(ip.isCanonical("2001:DB8::68"))", "false"},
      {"ip.isCanonical invalid ipv6", R"(ip.isCanonical("2001:db8:::68"))",
       "error: IP Address \"2001:db8:::68\" parse error during conversion from string: "
       "ParseAddr(\"2001:db8:::68\"): each colon-separated field must have at least one digit "
       "(at \":68\")"},
      {"ipv6 family", R"(ip("2001:db8::68").family() == 6)", "true"},
      {"ipv6 isUnspecified true", R"(ip("::").isUnspecified())", "true"},
      {"ipv6 isUnspecified false", R"(ip("::1").isUnspecified())", "false"},
      {"ipv6 isLoopback true", R"(ip("::1").isLoopback())", "true"},
      {"ipv6 isLoopback false", R"(ip("2001:db8::abcd").isLoopback())", "false"},
      {"ipv6 isLinkLocalMulticast true", R"(ip("ff02::1").isLinkLocalMulticast())", "true"},
      {"ipv6 isLinkLocalMulticast false", R"(ip("fd00::1").isLinkLocalMulticast())", "false"},
      {"ipv6 isLinkLocalUnicast true", R"(ip("fe80::1").isLinkLocalUnicast())", "true"},
      {"ipv6 isLinkLocalUnicast false", R"(ip("fd80::1").isLinkLocalUnicast())", "false"},
      {"ipv6 isGlobalUnicast true", R"(ip("2001:db8::abcd").isGlobalUnicast())", "true"},
      {"ipv6 isGlobalUnicast false", R"(ip("ff00::1").isGlobalUnicast())", "false"},
      {"passing cidr into isIP returns compile error", R"(isIP(cidr("192.168.0.0/24")))",
       "compile: found no matching overload for 'isIP' applied to '(net.CIDR)'"},
      {"converting an IP address to a string", R"(string(ip("192.168.0.1")) == "192.168.0.1")",
       "true"},
  });
}

TEST(CelNetLibraryTest, TestCIDR) {
  const std::string twice =
      "network address parse error during conversion from string: "
      "network address parse error during conversion from string: ";
  ExpectCases({
      {"parse ipv4", R"(cidr("192.168.0.0/24") == cidr("192.168.0.0/24"))", "true"},
      {"parse invalid ipv4", R"(cidr("192.168.0.0/") == cidr("192.168.0.0/24"))",
       "error: " + twice + "netip.ParsePrefix(\"192.168.0.0/\"): bad bits after slash: \"\""},
      {"contains IP ipv4 (IP)", R"(cidr("192.168.0.0/24").containsIP(ip("192.168.0.1")))", "true"},
      {"does not contain IP ipv4 (IP)", R"(cidr("192.168.0.0/24").containsIP(ip("192.168.1.1")))",
       "false"},
      {"contains IP ipv4 (string)", R"(cidr("192.168.0.0/24").containsIP("192.168.0.1"))", "true"},
      {"does not contain IP ipv4 (string)", R"(cidr("192.168.0.0/24").containsIP("192.168.1.1"))",
       "false"},
      {"contains CIDR ipv4 (CIDR)",
       R"(cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/25")))", "true"},
      {"contains CIDR ipv4 (CIDR) (/32)",
       R"(cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.1/32")))", "true"},
      {"does not contain IP ipv4 (CIDR)",
       R"(cidr("192.168.0.0/24").containsCIDR(cidr("192.168.0.0/23")))", "false"},
      {"does not contain IP ipv4 (CIDR) (/32)",
       R"(cidr("192.168.0.0/24").containsCIDR(cidr("192.169.0.1/32")))", "false"},
      {"contains CIDR ipv4 (string)", R"(cidr("192.168.0.0/24").containsCIDR("192.168.0.0/25"))",
       "true"},
      {"does not contain CIDR ipv4 (string)",
       R"(cidr("192.168.0.0/24").containsCIDR("192.168.0.0/23"))", "false"},
      {"returns IP ipv4", R"(cidr("192.168.0.0/24").ip() == ip("192.168.0.0"))", "true"},
      {"masks masked ipv4", R"(cidr("192.168.0.0/24").masked() == cidr("192.168.0.0/24"))", "true"},
      {"masks unmasked ipv4", R"(cidr("192.168.0.1/24").masked() == cidr("192.168.0.0/24"))",
       "true"},
      {"returns prefix length ipv4", R"(cidr("192.168.0.0/24").prefixLength() == 24)", "true"},
      {"parse ipv6", R"(cidr("2001:db8::/32") == cidr("2001:db8::/32"))", "true"},
      {"parse invalid ipv6", R"(cidr("2001:db8::/") == cidr("2001:db8::/32"))",
       "error: " + twice + "netip.ParsePrefix(\"2001:db8::/\"): bad bits after slash: \"\""},
      {"contains IP ipv6 (IP)", R"(cidr("2001:db8::/32").containsIP(ip("2001:db8::1")))", "true"},
      {"does not contain IP ipv6 (IP)", R"(cidr("2001:db8::/32").containsIP(ip("2001:dc8::1")))",
       "false"},
      {"contains IP ipv6 (string)", R"(cidr("2001:db8::/32").containsIP("2001:db8::1"))", "true"},
      {"does not contain IP ipv6 (string)", R"(cidr("2001:db8::/32").containsIP("2001:dc8::1"))",
       "false"},
      {"contains CIDR ipv6 (CIDR)", R"(cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/33")))",
       "true"},
      {"does not contain IP ipv6 (CIDR)",
       R"(cidr("2001:db8::/32").containsCIDR(cidr("2001:db8::/31")))", "false"},
      {"contains CIDR ipv6 (string)", R"(cidr("2001:db8::/32").containsCIDR("2001:db8::/33"))",
       "true"},
      {"does not contain CIDR ipv6 (string)",
       R"(cidr("2001:db8::/32").containsCIDR("2001:db8::/31"))", "false"},
      {"returns IP ipv6", R"(cidr("2001:db8::/32").ip() == ip("2001:db8::"))", "true"},
      {"masks masked ipv6", R"(cidr("2001:db8::/32").masked() == cidr("2001:db8::/32"))", "true"},
      {"masks unmasked ipv6", R"(cidr("2001:db8:1::/32").masked() == cidr("2001:db8::/32"))",
       "true"},
      {"returns prefix length ipv6", R"(cidr("2001:db8::/32").prefixLength() == 32)", "true"},
      {"converting a CIDR to a string", R"(string(cidr("192.168.0.0/24")) == "192.168.0.0/24")",
       "true"},
  });
}

// What upstream's library refuses beyond netip, and what follows from its code: a string that
// containsIP cannot parse is "no such overload" (upstream passes the parse error on where an
// address is expected), containsCIDR's is the parse error; an address of the other family is
// in no prefix.
TEST(CelNetLibraryTest, WhatTheLibraryAddsToNetip) {
  ExpectCases({
      {"zone", R"(isIP("fe80::1%eth0") || ip("fe80::1%eth0").isLinkLocalUnicast())",
       "error: IP address \"fe80::1%eth0\" with zone value is not allowed"},
      {"mapped", R"(ip("::ffff:1.2.3.4").family() == 4)",
       "error: IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed"},
      {"mapped prefix", R"(isCIDR("::ffff:1.2.3.0/120"))", "false"},
      {"mapped prefix error", R"(cidr("::ffff:1.2.3.0/120").prefixLength() == 120)",
       "error: network address parse error during conversion from string: IPv4-mapped IPv6 "
       "address \"::ffff:1.2.3.0/120\" is not allowed"},
      {"containsIP of a bad string", R"(cidr("10.0.0.0/8").containsIP("10.0.0"))",
       "error: no such overload"},
      {"containsCIDR of a bad string", R"(cidr("10.0.0.0/8").containsCIDR("10.0.0.0"))",
       "error: network address parse error during conversion from string: network address parse "
       "error during conversion from string: netip.ParsePrefix(\"10.0.0.0\"): no '/'"},
      {"other family", R"(cidr("::/0").containsIP("10.0.0.1"))", "false"},
      {"isCIDR", R"(isCIDR("10.0.0.0/8") && !isCIDR("10.0.0.0/33"))", "true"},
      {"canonical prefix text", R"(string(cidr("2001:DB8:0:0::/64")) == "2001:db8::/64")", "true"},
      {"namespace beside a variable",
       R"(cel.bind(ip, ip("10.0.0.1"), ip.family() == 4 && ip.isCanonical("10.0.0.1")))", "true"},
      {"another type", R"(ip("10.0.0.1") == "10.0.0.1")",
       "compile: found no matching overload for '_==_' applied to '(net.IP, string)'"},
  });
}

// In a selector: an attribute holding an address, as a NIC driver publishes one.
TEST(CelNetLibraryTest, SelectsDevicesByTheirAddresses) {
  Device nic;
  nic.driver = "dra.net";
  nic.attributes["dra.net/ipv4"] = Value::String("10.1.2.3");
  nic.attributes["dra.net/ipv6"] = Value::String("fd00::3");
  auto matches = [&nic](const std::string& expression) {
    absl::StatusOr<std::shared_ptr<const Program>> program = Program::Compile(expression);
    EXPECT_TRUE(program.ok()) << program.status();
    return program.ok() && (*program)->Matches(nic).value_or(false);
  };
  EXPECT_TRUE(matches(R"(cidr("10.1.0.0/16").containsIP(device.attributes["dra.net"].ipv4))"));
  EXPECT_FALSE(matches(R"(cidr("10.2.0.0/16").containsIP(device.attributes["dra.net"].ipv4))"));
  EXPECT_TRUE(matches(R"(ip(device.attributes["dra.net"].ipv6).isGlobalUnicast())"));
  EXPECT_TRUE(matches(R"(isIP(device.attributes["dra.net"].ipv6))"));
}

}  // namespace
}  // namespace devmgr::cel
