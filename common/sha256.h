#pragma once
// SHA-256 through OpenSSL's EVP interface (libssl-dev): the cryptographic hash that names files
// (LoRA hashes as AUTOMATIC1111 records them). Not for hot paths: common/hash.h is the fast one.
#include <cstddef>
#include <string>

namespace rgbaq::common {

// The 64 lower-case hex digits of SHA-256 over `n` bytes. Throws std::runtime_error if OpenSSL fails.
std::string sha256_hex(const void* data, size_t n);

}  // namespace rgbaq::common
