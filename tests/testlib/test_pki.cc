#include "tests/testlib/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace devmgr::testing {
namespace {

struct KeyDeleter {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertDeleter {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyDeleter>;
using Cert = std::unique_ptr<X509, CertDeleter>;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "TestPki: %s failed\n", what);
    std::abort();
  }
}

Key NewKey() {
  Key key(EVP_EC_gen("P-256"));
  Check(key != nullptr, "EVP_EC_gen");
  return key;
}

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(extension != nullptr, "X509V3_EXT_conf_nid");
  Check(X509_add_ext(cert, extension, -1) == 1, "X509_add_ext");
  X509_EXTENSION_free(extension);
}

// MakeCert: a certificate for `key` named by `subject` fields, signed by `issuer_key` (as
// `issuer`, or self-signed when issuer is null).
Cert MakeCert(EVP_PKEY* key, const char* common_name, const char* organization, X509* issuer,
              EVP_PKEY* issuer_key, bool ca, const char* san, long serial) {  // NOLINT
  Cert cert(X509_new());
  Check(cert != nullptr, "X509_new");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24L * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  if (organization != nullptr) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(organization), -1, -1, 0);
  }
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (ca) {
    AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(cert.get(), signer, NID_key_usage, "critical,digitalSignature");
    AddExtension(cert.get(), signer, NID_ext_key_usage,
                 san != nullptr ? "serverAuth" : "clientAuth");
  }
  if (san != nullptr) AddExtension(cert.get(), signer, NID_subject_alt_name, san);
  Check(X509_sign(cert.get(), issuer_key, EVP_sha256()) > 0, "X509_sign");
  return cert;
}

std::string Read(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);  // NOLINT(google-runtime-int)
  return std::string(data, static_cast<size_t>(size));
}

std::string CertPem(X509* cert) {
  std::unique_ptr<BIO, BioDeleter> bio(BIO_new(BIO_s_mem()));
  Check(PEM_write_bio_X509(bio.get(), cert) == 1, "PEM_write_bio_X509");
  return Read(bio.get());
}

std::string KeyPem(EVP_PKEY* key) {
  std::unique_ptr<BIO, BioDeleter> bio(BIO_new(BIO_s_mem()));
  Check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "PEM_write_bio_PrivateKey");
  return Read(bio.get());
}

}  // namespace

TestPki MakeTestPki() {
  TestPki pki;
  Key ca_key = NewKey();
  Cert ca =
      MakeCert(ca_key.get(), "devmgr-test-ca", nullptr, nullptr, ca_key.get(), true, nullptr, 1);
  Key server_key = NewKey();
  Cert server = MakeCert(server_key.get(), "fake-apiserver", nullptr, ca.get(), ca_key.get(), false,
                         "IP:127.0.0.1,DNS:localhost,DNS:fake-apiserver", 2);
  Key client_key = NewKey();
  Cert client = MakeCert(client_key.get(), "devmgr-test", "system:nodes", ca.get(), ca_key.get(),
                         false, nullptr, 3);
  Key other_key = NewKey();
  Cert other = MakeCert(other_key.get(), "devmgr-other-ca", nullptr, nullptr, other_key.get(), true,
                        nullptr, 4);
  pki.ca_pem = CertPem(ca.get());
  pki.server_cert_pem = CertPem(server.get());
  pki.server_key_pem = KeyPem(server_key.get());
  pki.client_cert_pem = CertPem(client.get());
  pki.client_key_pem = KeyPem(client_key.get());
  pki.other_ca_pem = CertPem(other.get());
  return pki;
}

}  // namespace devmgr::testing
