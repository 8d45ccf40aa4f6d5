// The name formats against the good and bad values of apimachinery's validation tests
// (TestIsDNS1123Label, TestIsDNS1123Subdomain, TestIsQualifiedName, TestIsValidLabelValue,
// TestIsCIdentifier) and the messages Go gives for them.
#include "common/k8s_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace devmgr {
namespace {

using Errors = std::vector<std::string>;

TEST(K8sNamesTest, Dns1123Label) {
  for (const std::string& good :
       std::vector<std::string>{"a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a",
                                "1-a", "1--a--b--2", std::string(63, 'a')}) {
    EXPECT_EQ(Dns1123LabelErrors(good), Errors{}) << good;
  }
  const std::string regex_error =
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
      "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
      "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
  for (const std::string& bad : std::vector<std::string>{
           "",   "A", "ABC", "aBc", "A1",  "A-1", "1-A", "-",   "a-",  "-a", "1-",
           "-1", "_", "a_",  "_a",  "a_b", "1_",  "_1",  "1_2", "a b", "1 2"}) {
    EXPECT_EQ(Dns1123LabelErrors(bad), Errors{regex_error}) << bad;
  }
  EXPECT_EQ(Dns1123LabelErrors("a.b"), Errors{"must not contain dots"});
  EXPECT_EQ(Dns1123LabelErrors(std::string(64, 'a')), Errors{"must be no more than 63 characters"});
  EXPECT_EQ(Dns1123LabelErrors(std::string(64, 'a') + "."),
            (Errors{"must be no more than 63 characters", regex_error}));
}

TEST(K8sNamesTest, Dns1123Subdomain) {
  for (const std::string& good :
       std::vector<std::string>{"a", "a.a", "a.b.c", "0.0", "1-a.b", "a--1--2--b.0",
                                std::string(253, 'a'), std::string(63, 'a') + ".b"}) {
    EXPECT_EQ(Dns1123SubdomainErrors(good), Errors{}) << good;
  }
  const std::string regex_error =
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
      "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
      "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  for (const std::string& bad : std::vector<std::string>{"", "A", "a.A", "-", "a-", "-a", ".", "a.",
                                                         ".a", "a..b", "a.-b", "a_b", "a b"}) {
    EXPECT_EQ(Dns1123SubdomainErrors(bad), Errors{regex_error}) << bad;
  }
  EXPECT_EQ(Dns1123SubdomainErrors(std::string(254, 'a')),
            Errors{"must be no more than 253 characters"});
}

// apimachinery's TestIsDNS1035Label: a DNS-1123 label that begins with a letter.
TEST(K8sNamesTest, Dns1035Label) {
  for (const std::string& good : std::vector<std::string>{"a", "ab", "abc", "a1", "a-1",
                                                          "a--1--2--b", std::string(63, 'a')}) {
    EXPECT_EQ(Dns1035LabelErrors(good), Errors{}) << good;
  }
  const std::string regex_error =
      "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
      "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
      "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
  for (const std::string& bad : std::vector<std::string>{
           "0",  "01",  "012", "1a", "1-a", "1--a--b--2", "",   "A",  "ABC", "aBc",
           "A1", "A-1", "1-A", "-",  "a-",  "-a",         "1-", "-1", "_",   "a_",
           "_a", "a_b", "1_",  "_1", "1_2", ".",          "a.", ".a", "a.b", ".1",
           "1.", "1.2", " ",   "a ", " a",  "a b",        "1 ", " 1", "1 2"}) {
    EXPECT_EQ(Dns1035LabelErrors(bad), Errors{regex_error}) << bad;
  }
  EXPECT_EQ(Dns1035LabelErrors(std::string(64, 'a')), Errors{"must be no more than 63 characters"});
}

TEST(K8sNamesTest, QualifiedName) {
  for (const std::string& good : std::vector<std::string>{
           "simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple",
           "now-with-dashes/simple", "now-with-dashes/now-with-dashes", "now.with.dots/simple",
           "now-with.dashes-and.dots/simple", "1-num.2-num/3-num", "1234/5678", "1.2.3.4/5678",
           "Uppercase_Is_OK_123", "example.com/Uppercase_Is_OK_123", "requests.storage-foo",
           std::string(63, 'a'), std::string(253, 'a') + "/" + std::string(63, 'b')}) {
    EXPECT_EQ(QualifiedNameErrors(good), Errors{}) << good;
  }
  const std::string name_error =
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
      "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
      "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  EXPECT_EQ(QualifiedNameErrors("nospecialchars%^=@"), Errors{name_error});
  EXPECT_EQ(QualifiedNameErrors(""), (Errors{"name part must be non-empty", name_error}));
  EXPECT_EQ(QualifiedNameErrors("/simple"), Errors{"prefix part must be non-empty"});
  EXPECT_EQ(QualifiedNameErrors("Example.com/x").front().substr(0, 38),
            "prefix part a lowercase RFC 1123 subdo");
  EXPECT_EQ(QualifiedNameErrors(std::string(64, 'a')),
            Errors{"name part must be no more than 63 characters"});
  EXPECT_EQ(QualifiedNameErrors("a/b/c"),
            Errors{"a qualified name must consist of alphanumeric characters, '-', '_' or '.', "
                   "and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                   "'my.name',  or '123-abc', regex used for validation is "
                   "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
                   "prefix and '/' (e.g. 'example.com/MyName')"});
}

TEST(K8sNamesTest, LabelValue) {
  for (const std::string& good : std::vector<std::string>{
           "simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234",
           std::string(63, 'a'), "", "Uppercase_Is_OK_123", "a.b_c-d"}) {
    EXPECT_EQ(LabelValueErrors(good), Errors{}) << good;
  }
  const std::string regex_error =
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
      "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
      "'my_value',  or '12345', regex used for validation is "
      "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
  for (const std::string& bad : std::vector<std::string>{
           "nospecialchars%^=@", "Tama-nui-te-rā.is.Māori.sun", "\\backslashes\\are\\bad",
           "-starts-with-dash", "ends-with-dash-", ".starts.with.dot", "ends.with.dot."}) {
    EXPECT_EQ(LabelValueErrors(bad), Errors{regex_error}) << bad;
  }
  EXPECT_EQ(LabelValueErrors(std::string(64, 'a')), Errors{"must be no more than 63 characters"});
}

TEST(K8sNamesTest, CIdentifier) {
  for (const std::string& good : std::vector<std::string>{
           "a", "ab", "abc", "a1", "_a", "a_", "a_b", "a_1", "a__1__2__b", "__abc_123",
           "A", "AB", "AbC", "A1", "_A", "A_", "A_B", "A_1", "A__1__2__B", "__123_ABC"}) {
    EXPECT_EQ(CIdentifierErrors(good), Errors{}) << good;
  }
  for (const std::string& bad :
       std::vector<std::string>{"", "1", "123", "1a", "-", "a-", "-a", "1-", "-1", "1_", "1_2",
                                "a b", "a.b", "domain/name"}) {
    EXPECT_EQ(CIdentifierErrors(bad),
              Errors{"a valid C identifier must start with alphabetic character or '_', "
                     "followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  "
                     "or 'MY_NAME',  or 'MyName', regex used for validation is "
                     "'[A-Za-z_][A-Za-z0-9_]*')"})
        << bad;
  }
}

TEST(K8sNamesTest, ExtendedResourceNames) {
  EXPECT_TRUE(IsExtendedResourceName("example.com/gpu"));
  EXPECT_TRUE(IsExtendedResourceName("domain1.com/resource1"));
  EXPECT_TRUE(IsExtendedResourceName("a.b/X_y.z-1"));
  EXPECT_FALSE(IsExtendedResourceName("gpu"));                    // no domain: native
  EXPECT_FALSE(IsExtendedResourceName("kubernetes.io/gpu"));      // reserved namespace
  EXPECT_FALSE(IsExtendedResourceName("foo.kubernetes.io/gpu"));  // reserved namespace
  EXPECT_FALSE(IsExtendedResourceName("requests.example.com/gpu"));
  EXPECT_FALSE(IsExtendedResourceName("Example.com/gpu"));  // prefix must be lower case
  EXPECT_FALSE(IsExtendedResourceName("example.com/"));
  EXPECT_FALSE(IsExtendedResourceName("example.com/a/b"));
  EXPECT_FALSE(IsExtendedResourceName("example.com/-gpu"));
  EXPECT_FALSE(IsExtendedResourceName("example.com/" + std::string(64, 'a')));
  EXPECT_TRUE(IsExtendedResourceName("example.com/" + std::string(63, 'a')));
}

// Found by the registration fuzzer: Kubernetes bounds a DNS-1123 subdomain at 253 characters
// but not each dot-separated piece, so a long piece is valid (it was refused here).
TEST(K8sNamesTest, ExtendedResourceNamePrefixPiecesHaveNoLengthLimitOfTheirOwn) {
  EXPECT_TRUE(IsExtendedResourceName(std::string(100, 'n') + ".example.com/gpu"));
  // "requests." + prefix is at most 253 characters.
  EXPECT_TRUE(IsExtendedResourceName(std::string(244, 'n') + "/gpu"));
  EXPECT_FALSE(IsExtendedResourceName(std::string(245, 'n') + "/gpu"));
}

}  // namespace
}  // namespace devmgr
