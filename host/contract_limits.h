#pragma once
// The axis limits of the host contract (§1, §2, §4) and the checks that enforce them at every boundary.

namespace rgbaq::host {

inline constexpr int kPatchPixels = 16;        // one image token covers a 16x16 px tile
inline constexpr int kLatentChannels = 64;     // per image token
inline constexpr int kMinFullTokens = 16;      // encoder axis Lfull
inline constexpr int kMaxFullTokens = 512;
inline constexpr int kMinTextTokens = 8;       // DiT axis L = Lfull - drop_idx
inline constexpr int kMaxTextTokens = 512;
inline constexpr int kMinImageTokens = 64;     // DiT axis N = h * w
inline constexpr int kMaxImageTokens = 4096;

// Each throws std::invalid_argument naming the axis, its limits and the value.
void check_full_tokens(int lfull);
void check_text_tokens(int text_len);
void check_image_tokens(int image_tokens);

}  // namespace rgbaq::host
