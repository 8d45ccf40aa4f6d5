// The socket file names of a DRA driver: upstream's TestRollingUpdateRegistrarSocketFile_* cases
// by name, and the hashed names byte for byte (the expected strings were computed apart from
// this code, with Python's hashlib and base64.urlsafe_b64encode of the digest's first bytes).
#include "kubeletplugin/socket_names.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace devmgr::kubeletplugin {
namespace {

const std::filesystem::path kRegistryDir = "/var/lib/kubelet/plugins_registry";

TEST(SocketNamesTest, PlainNames) {
  EXPECT_EQ(RegistrarSocketFile("gpu.example.com"), "gpu.example.com-reg.sock");
  EXPECT_EQ(RollingUpdateServiceSocketFile("11111111-2222-3333-4444-555555555555"),
            "dra-11111111-2222-3333-4444-555555555555.sock");
  EXPECT_STREQ(kServiceSocketFile, "dra.sock");
}

TEST(SocketNamesTest, TestRollingUpdateRegistrarSocketFile_lengthBound) {
  const std::string name = RollingUpdateRegistrarSocketFile(
      kRegistryDir, "gpu.dra-example-driver.sigs.k8s.io", "ad4af911-5bcd-47c5-a554-f35cea869472");
  EXPECT_LE((kRegistryDir / name).string().size(), kUnixPathMax);
}

TEST(SocketNamesTest, TestRollingUpdateRegistrarSocketFile_prefersFullUID) {
  EXPECT_EQ(RollingUpdateRegistrarSocketFile(kRegistryDir, "example.com/driver",
                                             "11111111-2222-3333-4444-555555555555"),
            "example.com/driver-11111111-2222-3333-4444-555555555555-reg.sock");
}

TEST(SocketNamesTest, TestRollingUpdateRegistrarSocketFile_usesHashedUIDForLongDriverName) {
  // The full form would be 114 bytes long here.
  EXPECT_EQ(RollingUpdateRegistrarSocketFile(kRegistryDir, "gpu.dra-example-driver.sigs.k8s.io",
                                             "ad4af911-5bcd-47c5-a554-f35cea869472"),
            "gpu.dra-example-driver.sigs.k8s.io-Jk8-oymVURI-reg.sock");
}

TEST(SocketNamesTest, TestRollingUpdateRegistrarSocketFile_usesShortestFormForVeryLongDriverName) {
  EXPECT_EQ(RollingUpdateRegistrarSocketFile(kRegistryDir, std::string(100, 'a'),
                                             "ad4af911-5bcd-47c5-a554-f35cea869472"),
            "dra-0XAjsR3nLFWHa0HL1OOe6g-reg.sock");
}

TEST(SocketNamesTest, TestRollingUpdateRegistrarSocketFile_respectsCustomRegistryDir) {
  const std::filesystem::path registry_dir =
      std::filesystem::path("/var/lib/kubelet") / std::string(20, 'x') / "plugins_registry";
  const std::string full = "example.com/driver-11111111-2222-3333-4444-555555555555-reg.sock";
  ASSERT_GT((registry_dir / full).string().size(), kUnixPathMax) << "test setup";
  const std::string name = RollingUpdateRegistrarSocketFile(registry_dir, "example.com/driver",
                                                            "11111111-2222-3333-4444-555555555555");
  EXPECT_LE((registry_dir / name).string().size(), kUnixPathMax);
  EXPECT_NE(name, full);
  EXPECT_TRUE(absl::StartsWith(name, "example.com/driver-")) << name;
}

TEST(SocketNamesTest, TestRollingUpdateRegistrarSocketFile_deterministic) {
  EXPECT_EQ(RollingUpdateRegistrarSocketFile(kRegistryDir, "example.com/driver",
                                             "11111111-2222-3333-4444-555555555555"),
            RollingUpdateRegistrarSocketFile(kRegistryDir, "example.com/driver",
                                             "11111111-2222-3333-4444-555555555555"));
}

TEST(SocketNamesTest, TestRollingUpdateRegistrarSocketFile_distinctInputs) {
  const std::string uid = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
  const std::string a = RollingUpdateRegistrarSocketFile(kRegistryDir, "driver.one", uid);
  EXPECT_NE(a, RollingUpdateRegistrarSocketFile(kRegistryDir, "driver.two", uid));
  EXPECT_NE(a, RollingUpdateRegistrarSocketFile(kRegistryDir, "driver.one",
                                                "ffffffff-ffff-ffff-ffff-ffffffffffff"));
  // The same in the shortest form, where only the hash tells them apart.
  const std::string long_name(100, 'a');
  EXPECT_NE(RollingUpdateRegistrarSocketFile(kRegistryDir, long_name, uid),
            RollingUpdateRegistrarSocketFile(kRegistryDir, long_name + "b", uid));
}

TEST(SocketNamesTest, DriverNamesAreDnsSubdomains) {
  EXPECT_TRUE(IsValidDriverName("gpu.example.com"));
  EXPECT_TRUE(IsValidDriverName("test-driver.cdi.k8s.io"));
  EXPECT_TRUE(IsValidDriverName(std::string(63, 'a')));
  // The API lower-cases a driver name before it checks it (ValidateCSIDriverName).
  EXPECT_TRUE(IsValidDriverName("GPU.Example.com"));
  for (const std::string& name :
       {std::string(), std::string("a/b"), std::string(".."), std::string("a..b"),
        std::string("../gpu.example.com"), std::string("../GPU.example.com"),
        std::string("-gpu.example.com"), std::string("gpu.example.com."), std::string(64, 'a'),
        std::string("gpu_x.example.com")}) {
    EXPECT_FALSE(IsValidDriverName(name)) << name;
  }
}

// A name whose path would be exactly 108 bytes (Go binds it; a socket here has no room left for
// the NUL) gives way to the next form.
TEST(SocketNamesTest, APathOf108BytesTakesTheNextForm) {
  const std::string driver(28, 'd');
  const std::string uid = "11111111-2222-3333-4444-555555555555";
  ASSERT_EQ((kRegistryDir / absl::StrCat(driver, "-", uid, "-reg.sock")).string().size(), 108u);
  const std::string name = RollingUpdateRegistrarSocketFile(kRegistryDir, driver, uid);
  EXPECT_FALSE(absl::StrContains(name, uid)) << name;
  EXPECT_LE((kRegistryDir / name).string().size(), 107u) << name;
}

}  // namespace
}  // namespace devmgr::kubeletplugin
