#include "common/sha256.h"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

namespace rgbaq::common {

std::string sha256_hex(const void* data, size_t n) {
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 || EVP_DigestUpdate(ctx.get(), data, n) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest, &len) != 1) {
    throw std::runtime_error("SHA-256: OpenSSL's digest failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace rgbaq::common
