// TestPki: a certificate authority made for one test run, with a server certificate for
// 127.0.0.1 / localhost and a client certificate signed by it, all as PEM. Generated with
// OpenSSL at start (P-256 keys, a day of validity), so no key material is kept in the tree and
// nothing expires in it.
#pragma once

#include <string>

namespace devmgr::testing {

struct TestPki {
  std::string ca_pem;
  std::string server_cert_pem;
  std::string server_key_pem;
  // CN=devmgr-test, O=system:nodes: what an API server would take as the user's name and group.
  std::string client_cert_pem;
  std::string client_key_pem;
  // A second CA that signed nothing here: a client trusting it must refuse the server.
  std::string other_ca_pem;
};

// MakeTestPki generates a fresh set; aborts the test program if OpenSSL fails.
TestPki MakeTestPki();

}  // namespace devmgr::testing
