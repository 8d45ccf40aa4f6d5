// GoAddr and GoPrefix against what Go's net/netip answers for the same text: the parse errors'
// texts, RFC 5952 printing, the address classes, masking and containment.
#include "common/go_netip.h"

#include <gtest/gtest.h>

#include <string>

namespace devmgr {
namespace {

std::string Addr(const std::string& text) {
  absl::StatusOr<GoAddr> addr = GoAddr::Parse(text);
  return addr.ok() ? addr->ToString() : std::string(addr.status().message());
}

std::string Prefix(const std::string& text) {
  absl::StatusOr<GoPrefix> prefix = GoPrefix::Parse(text);
  return prefix.ok() ? prefix->ToString() : std::string(prefix.status().message());
}

TEST(GoNetipTest, PrintsAddressesAsNetipDoes) {
  EXPECT_EQ(Addr("192.168.0.1"), "192.168.0.1");
  EXPECT_EQ(Addr("0.0.0.0"), "0.0.0.0");
  EXPECT_EQ(Addr("2001:DB8::68"), "2001:db8::68");
  EXPECT_EQ(Addr("2001:0db8:0000:0000:0000:0000:0000:0068"), "2001:db8::68");
  // The first of two runs of equal length is the one shortened.
  EXPECT_EQ(Addr("2001:db8:0:0:1:0:0:1"), "2001:db8::1:0:0:1");
  EXPECT_EQ(Addr("2001:0:0:1:0:0:0:1"), "2001:0:0:1::1") << "the longest run";
  EXPECT_EQ(Addr("1:2:3:4:5:6:7:0"), "1:2:3:4:5:6:7:0") << "one zero group stays";
  EXPECT_EQ(Addr("1:0:2:3:4:5:6:7"), "1:0:2:3:4:5:6:7");
  EXPECT_EQ(Addr("0:0:0:0:0:0:0:0"), "::");
  EXPECT_EQ(Addr("::"), "::");
  EXPECT_EQ(Addr("::1"), "::1");
  EXPECT_EQ(Addr("1::"), "1::");
  EXPECT_EQ(Addr("::1.2.3.4"), "::102:304");
  EXPECT_EQ(Addr("::ffff:1.2.3.4"), "::ffff:1.2.3.4");
  EXPECT_EQ(Addr("::FFFF:c000:280"), "::ffff:192.0.2.128");
  EXPECT_EQ(Addr("fe80::1%eth0"), "fe80::1%eth0");
  EXPECT_EQ(Addr("1:2:3:4:5:6:1.2.3.4"), "1:2:3:4:5:6:102:304");
}

TEST(GoNetipTest, RefusesWithNetipsErrors) {
  EXPECT_EQ(Addr(""), "ParseAddr(\"\"): unable to parse IP");
  EXPECT_EQ(Addr("bad"), "ParseAddr(\"bad\"): unable to parse IP");
  EXPECT_EQ(Addr("%eth0"), "ParseAddr(\"%eth0\"): missing IPv6 address");
  EXPECT_EQ(Addr("192.168.0.1.0"), "ParseAddr(\"192.168.0.1.0\"): IPv4 address too long");
  EXPECT_EQ(Addr("1.2.3"), "ParseAddr(\"1.2.3\"): IPv4 address too short");
  EXPECT_EQ(Addr("1.2.3.256"), "ParseAddr(\"1.2.3.256\"): IPv4 field has value >255");
  EXPECT_EQ(Addr("01.2.3.4"), "ParseAddr(\"01.2.3.4\"): IPv4 field has octet with leading zero");
  EXPECT_EQ(Addr("1..2.3"),
            "ParseAddr(\"1..2.3\"): IPv4 field must have at least one digit (at \".2.3\")");
  EXPECT_EQ(Addr("1.2.3.4%eth0"),
            "ParseAddr(\"1.2.3.4%eth0\"): unexpected character (at \"%eth0\")");
  EXPECT_EQ(Addr("2001:db8:::68"),
            "ParseAddr(\"2001:db8:::68\"): each colon-separated field must have at least one "
            "digit (at \":68\")");
  EXPECT_EQ(Addr("fe80::1%"), "ParseAddr(\"fe80::1%\"): zone must be a non-empty string");
  EXPECT_EQ(Addr("12345::"),
            "ParseAddr(\"12345::\"): each group must have 4 or less digits (at \"12345::\")");
  EXPECT_EQ(Addr("1:2:3:4:5:6:7:8:9"),
            "ParseAddr(\"1:2:3:4:5:6:7:8:9\"): trailing garbage after address (at \"9\")");
  EXPECT_EQ(Addr("1:2:3:4:5:6:7"), "ParseAddr(\"1:2:3:4:5:6:7\"): address string too short");
  EXPECT_EQ(Addr("1:2:3:4::5:6:7:8"),
            "ParseAddr(\"1:2:3:4::5:6:7:8\"): the :: must expand to an implied field");
  EXPECT_EQ(Addr("1::2::3"), "ParseAddr(\"1::2::3\"): multiple :: in address (at \":3\")");
  EXPECT_EQ(Addr("1:2:"),
            "ParseAddr(\"1:2:\"): colon must be followed by more characters (at \":\")");
  EXPECT_EQ(Addr("1:2x"), "ParseAddr(\"1:2x\"): unexpected character, want colon (at \"x\")");
  EXPECT_EQ(Addr("1:2:3:1.2.3.4"),
            "ParseAddr(\"1:2:3:1.2.3.4\"): embedded IPv4 address must replace the final 2 fields "
            "of the address (at \"1.2.3.4\")");
  EXPECT_EQ(Addr("::1.2.3"), "ParseAddr(\"::1.2.3\"): IPv4 address too short");
}

TEST(GoNetipTest, ClassifiesAsNetipDoes) {
  auto addr = [](const char* text) { return *GoAddr::Parse(text); };
  EXPECT_TRUE(addr("0.0.0.0").IsUnspecified());
  EXPECT_TRUE(addr("::").IsUnspecified());
  EXPECT_FALSE(addr("::ffff:0.0.0.0").IsUnspecified());
  EXPECT_TRUE(addr("127.0.0.1").IsLoopback());
  EXPECT_TRUE(addr("::ffff:127.1.2.3").IsLoopback()) << "a mapped address as its IPv4 one";
  EXPECT_TRUE(addr("::1").IsLoopback());
  EXPECT_FALSE(addr("::2").IsLoopback());
  EXPECT_TRUE(addr("224.0.0.1").IsLinkLocalMulticast());
  EXPECT_FALSE(addr("224.0.1.1").IsLinkLocalMulticast());
  EXPECT_TRUE(addr("ff02::1").IsLinkLocalMulticast());
  EXPECT_FALSE(addr("ff05::1").IsLinkLocalMulticast());
  EXPECT_TRUE(addr("169.254.169.254").IsLinkLocalUnicast());
  EXPECT_TRUE(addr("fe80::1").IsLinkLocalUnicast());
  EXPECT_TRUE(addr("febf::1").IsLinkLocalUnicast());
  EXPECT_FALSE(addr("fec0::1").IsLinkLocalUnicast());
  EXPECT_TRUE(addr("192.168.0.1").IsGlobalUnicast()) << "private addresses are global unicast";
  EXPECT_TRUE(addr("fd00::1").IsGlobalUnicast());
  EXPECT_FALSE(addr("255.255.255.255").IsGlobalUnicast());
  EXPECT_FALSE(addr("0.0.0.0").IsGlobalUnicast());
  EXPECT_FALSE(addr("239.1.1.1").IsGlobalUnicast());
  EXPECT_FALSE(addr("ff00::1").IsGlobalUnicast());
  EXPECT_FALSE(addr("::").IsGlobalUnicast());
}

TEST(GoNetipTest, ParsesPrefixesAsNetipDoes) {
  EXPECT_EQ(Prefix("192.168.0.1/24"), "192.168.0.1/24") << "the address as written";
  EXPECT_EQ(Prefix("2001:DB8::/32"), "2001:db8::/32");
  EXPECT_EQ(Prefix("0.0.0.0/0"), "0.0.0.0/0");
  EXPECT_EQ(Prefix("::/128"), "::/128");
  EXPECT_EQ(Prefix("192.168.0.0"), "netip.ParsePrefix(\"192.168.0.0\"): no '/'");
  EXPECT_EQ(Prefix("192.168.0.0/"),
            "netip.ParsePrefix(\"192.168.0.0/\"): bad bits after slash: \"\"");
  EXPECT_EQ(Prefix("1.2.3.4/024"),
            "netip.ParsePrefix(\"1.2.3.4/024\"): bad bits after slash: \"024\"");
  EXPECT_EQ(Prefix("1.2.3.4/+8"),
            "netip.ParsePrefix(\"1.2.3.4/+8\"): bad bits after slash: \"+8\"");
  EXPECT_EQ(Prefix("1.2.3.4/-"), "netip.ParsePrefix(\"1.2.3.4/-\"): bad bits after slash: \"-\"");
  EXPECT_EQ(Prefix("1.2.3.4/33"), "netip.ParsePrefix(\"1.2.3.4/33\"): prefix length out of range");
  EXPECT_EQ(Prefix("::/129"), "netip.ParsePrefix(\"::/129\"): prefix length out of range");
  EXPECT_EQ(Prefix("::/9223372036854775807"),
            "netip.ParsePrefix(\"::/9223372036854775807\"): prefix length out of range");
  EXPECT_EQ(Prefix("::/9223372036854775808"),
            "netip.ParsePrefix(\"::/9223372036854775808\"): bad bits after slash: "
            "\"9223372036854775808\"");
  EXPECT_EQ(Prefix("fe80::1%eth0/64"),
            "netip.ParsePrefix(\"fe80::1%eth0/64\"): IPv6 zones cannot be present in a prefix");
  EXPECT_EQ(Prefix("1.2.3/8"),
            "netip.ParsePrefix(\"1.2.3/8\"): ParseAddr(\"1.2.3\"): IPv4 address too short");
}

TEST(GoNetipTest, MasksAndContainsAsNetipDoes) {
  auto prefix = [](const char* text) { return *GoPrefix::Parse(text); };
  auto addr = [](const char* text) { return *GoAddr::Parse(text); };
  EXPECT_EQ(prefix("192.168.0.1/24").Masked().ToString(), "192.168.0.0/24");
  EXPECT_EQ(prefix("192.168.255.255/17").Masked().ToString(), "192.168.128.0/17");
  EXPECT_EQ(prefix("2001:db8:1::/32").Masked().ToString(), "2001:db8::/32");
  EXPECT_EQ(prefix("1.2.3.4/0").Masked().ToString(), "0.0.0.0/0");
  EXPECT_FALSE(prefix("192.168.0.1/24") == prefix("192.168.0.0/24"));
  EXPECT_TRUE(prefix("192.168.0.1/24").Masked() == prefix("192.168.0.0/24"));

  EXPECT_TRUE(prefix("192.168.0.0/24").Contains(addr("192.168.0.255")));
  EXPECT_FALSE(prefix("192.168.0.0/24").Contains(addr("192.168.1.0")));
  EXPECT_TRUE(prefix("0.0.0.0/0").Contains(addr("8.8.8.8")));
  EXPECT_FALSE(prefix("0.0.0.0/0").Contains(addr("::ffff:8.8.8.8"))) << "another family";
  EXPECT_FALSE(prefix("::/0").Contains(addr("8.8.8.8")));
  EXPECT_FALSE(prefix("fe80::/10").Contains(addr("fe80::1%eth0"))) << "an address with a zone";
  EXPECT_TRUE(prefix("fe80::/10").Contains(addr("febf::1")));

  EXPECT_TRUE(prefix("10.0.0.0/8").Overlaps(prefix("10.1.0.0/16")));
  EXPECT_TRUE(prefix("10.1.0.0/16").Overlaps(prefix("10.0.0.0/8")));
  EXPECT_FALSE(prefix("10.0.0.0/16").Overlaps(prefix("10.1.0.0/16")));
  EXPECT_FALSE(prefix("0.0.0.0/0").Overlaps(prefix("::/0")));
}

}  // namespace
}  // namespace devmgr
