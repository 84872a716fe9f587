#pragma once
// Self-signed certificates made at test time with OpenSSL's API (no openssl(1), no key in the
// repository): an EC P-256 key and a certificate whose subjectAltName lists `sans` ("IP:127.0.0.1",
// "DNS:localhost"), valid from an hour ago for a day, written as PEM files for a TLS server and as
// the CA file a client verifies against. Self-signed, so the certificate is its own CA.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace kgpu::test {

struct TlsFiles {
  std::string cert;  // PEM certificate (also the CA file that trusts it)
  std::string key;   // PEM private key
};

inline TlsFiles make_self_signed_cert(const std::string& dir, const std::string& name, const std::string& sans) {
  auto fail = [&](const char* what) { throw std::runtime_error(std::string("make_self_signed_cert: ") + what); };
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) fail("EVP_EC_gen");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), static_cast<long>(std::hash<std::string>{}(name) & 0x7fffffff));
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* subject = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(name.c_str()), -1,
                             -1, 0);
  X509_set_issuer_name(cert, subject);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, sans.c_str());
  if (san == nullptr) fail("subjectAltName");
  X509_add_ext(cert, san, -1);
  X509_EXTENSION_free(san);
  if (X509_sign(cert, key, EVP_sha256()) == 0) fail("X509_sign");

  TlsFiles files{dir + "/" + name + ".crt", dir + "/" + name + ".key"};
  FILE* f = std::fopen(files.cert.c_str(), "w");
  if (f == nullptr || PEM_write_X509(f, cert) != 1) fail("writing the certificate");
  std::fclose(f);
  f = std::fopen(files.key.c_str(), "w");
  if (f == nullptr || PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) != 1) fail("writing the key");
  std::fclose(f);
  X509_free(cert);
  EVP_PKEY_free(key);
  return files;
}

}  // namespace kgpu::test
