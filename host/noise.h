#pragma once
// The initial latent (contract §5): torch.randn((1, 1, 64, h, w)) for a seed, and its DiT token layout.
#include <cstdint>
#include <vector>

#include "host/image_size.h"

namespace rgbaq::host {

// The flat draw in torch's order: channel-major [64, h, w].
std::vector<float> initial_noise(uint64_t seed, const ImageSize& size);

// [64, h, w] -> [N, 64] tokens: x[y*w + x, c] = z[c, y, x].
std::vector<float> pack_latents(const std::vector<float>& channel_major, const ImageSize& size);

// Both: the sampler's starting tokens for a seed.
std::vector<float> initial_tokens(uint64_t seed, const ImageSize& size);

}  // namespace rgbaq::host
