#pragma once
// Decode's last step (contract §7): the VAE image [4, H, W] in [-1, 1] to interleaved RGBA8.
#include <cstdint>
#include <span>

namespace rgbaq::host {

// rgba8 = round(clip(v * 0.5 + 0.5, 0, 1) * 255) in fp32, rounding halves to even as numpy's round does
// in the reference pipeline's postprocess. `planar` is channel-major [4, height, width] (R, G, B, A);
// `rgba` receives height * width * 4 bytes, pixel-interleaved. NaN becomes 0.
void image_to_rgba8(std::span<const float> planar, int width, int height, std::span<uint8_t> rgba);

// One value, the same rule.
uint8_t unit_to_u8(float v);

}  // namespace rgbaq::host
