#pragma once
// The Qwen-Image-2.1 family's published config values that no weight's shape gives: the one place they
// are written. config.json's readers (engine/model/model_config.h) fall back on them for an absent
// field, and a model opened from single files alone (no model directory) takes them whole.
// Sources: the published Qwen-Image-2.1(-Turbo) diffusers directory's text_encoder/config.json
// (Qwen3-VL text_config), transformer/config.json and vae/config.json (qwen-image-2.1.md).
#include <array>
#include <vector>

namespace rgbaq::engine::family {

// Text encoder (Qwen3-VL text stack).
inline constexpr double kTextRmsNormEps = 1e-6;
inline constexpr double kTextRopeTheta = 5e6;

// DiT (QwenImage21Transformer2DModel).
inline constexpr int kLatentChannels = 64;  // in_channels = out_channels: the contract's latent width
inline constexpr int kDitHeadDim = 128;     // attention_head_dim, fixed by the RoPE layout below
inline constexpr std::array<int, 3> kDitAxesDimsRope{16, 56, 56};
inline constexpr int kDitMlpRatio = 3;
inline constexpr double kDitEps = 1e-6;

// VAE (AutoencoderKLQwenImage21, a Wan 2.2 style residual VAE).
inline constexpr int kVaeBaseDim = 96;  // the encoder's width; the decoder reads decoder_base_dim
inline constexpr int kVaeNumResBlocks = 2;
inline constexpr int kVaeOutChannels = 4;  // RGBA
inline constexpr bool kVaeIsResidual = true;

// The VAE's latent constants as ComfyUI builds them in for this family: comfy/latent_formats.py, class
// QwenImage21(LatentFormat), latents_mean / latents_std (64 values each, process_out: z * std + mean).
// A ComfyUI VAE file does not hold them; a model directory's vae/config.json does, and wins.
const std::vector<float>& vae_latents_mean();
const std::vector<float>& vae_latents_std();

}  // namespace rgbaq::engine::family
