#pragma once
// SHA-256 through OpenSSL's EVP interface (libssl-dev): the cryptographic hash that names files
// (LoRA hashes as AUTOMATIC1111 records them). Not for hot paths: common/hash.h is the fast one.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace rgbaq::common {

// The 64 lower-case hex digits of SHA-256 over `n` bytes. Throws std::runtime_error if OpenSSL fails.
std::string sha256_hex(const void* data, size_t n);

// The same over the bytes of the file at `path` from `offset` to its end, read a block at a time.
// Throws std::runtime_error naming the file when it cannot be read.
std::string sha256_file_hex(const std::filesystem::path& path, uint64_t offset);

// HMAC-SHA256 (RFC 2104) of `message` under `key`, as 64 lower-case hex digits: what signs a URL or a
// webhook body. Throws std::runtime_error if OpenSSL fails.
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

}  // namespace rgbaq::common
