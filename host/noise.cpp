#include "host/noise.h"

#include <stdexcept>

#include "host/contract_limits.h"
#include "host/torch_randn.h"

namespace rgbaq::host {

std::vector<float> initial_noise(uint64_t seed, const ImageSize& size) {
  check_image_size(size);
  return torch_randn(seed, static_cast<size_t>(kLatentChannels) * size.tokens());
}

std::vector<float> pack_latents(const std::vector<float>& channel_major, const ImageSize& size) {
  const size_t n = static_cast<size_t>(size.tokens());
  if (channel_major.size() != n * kLatentChannels) {
    throw std::invalid_argument("pack_latents: " + std::to_string(channel_major.size()) + " values for a " +
                                size.to_string() + " latent of " + std::to_string(n * kLatentChannels));
  }
  std::vector<float> tokens(channel_major.size());
  for (size_t c = 0; c < kLatentChannels; ++c) {
    for (size_t t = 0; t < n; ++t) tokens[t * kLatentChannels + c] = channel_major[c * n + t];
  }
  return tokens;
}

std::vector<float> initial_tokens(uint64_t seed, const ImageSize& size) {
  return pack_latents(initial_noise(seed, size), size);
}

}  // namespace rgbaq::host
