#pragma once
// The project's one non-cryptographic hash: FNV-1a over bytes, and a finaliser that spreads its bits.
// Inline: the tokenizer's vocabulary lookups call it. Its values are stored (job content keys, output names, embedding-cache checksums): never change them.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rgbaq::common {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;

// FNV-1a 64 of `n` bytes, continuing from `h` (start from kFnvOffset, or another seed).
inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = kFnvOffset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}
inline uint64_t fnv1a(std::string_view bytes, uint64_t h = kFnvOffset) { return fnv1a(bytes.data(), bytes.size(), h); }

// MurmurHash3's 64-bit finaliser: every input bit affects every output bit (FNV alone mixes the
// last bytes poorly into the high bits).
inline uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

}  // namespace rgbaq::common
