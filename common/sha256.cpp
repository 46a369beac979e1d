#include "common/sha256.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

namespace rgbaq::common {
namespace {

using Context = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

Context begin_digest() {
  Context ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256: OpenSSL's digest failed");
  return ctx;
}

void update_digest(const Context& ctx, const void* data, size_t n) {
  if (EVP_DigestUpdate(ctx.get(), data, n) != 1) throw std::runtime_error("SHA-256: OpenSSL's digest failed");
}

std::string hex_of(const unsigned char* digest, unsigned int len) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

std::string finish_digest(const Context& ctx) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest, &len) != 1) throw std::runtime_error("SHA-256: OpenSSL's digest failed");
  return hex_of(digest, len);
}

}  // namespace

std::string sha256_hex(const void* data, size_t n) {
  const Context ctx = begin_digest();
  update_digest(ctx, data, n);
  return finish_digest(ctx);
}

std::string sha256_file_hex(const std::filesystem::path& path, uint64_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in || !in.seekg(static_cast<std::streamoff>(offset))) throw std::runtime_error(path.string() + ": cannot read");
  const Context ctx = begin_digest();
  std::vector<char> block(1u << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    update_digest(ctx, block.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw std::runtime_error(path.string() + ": read failed");
  return finish_digest(ctx);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()), message.size(),
            mac, &len)) {
    throw std::runtime_error("HMAC-SHA256: OpenSSL failed");
  }
  return hex_of(mac, len);
}

}  // namespace rgbaq::common
