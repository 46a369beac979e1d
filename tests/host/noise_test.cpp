#include "host/noise.h"

#include <gtest/gtest.h>

#include "host/torch_randn.h"

namespace rgbaq::host {
namespace {

TEST(Noise, DrawIsTorchRandnOfTheLatentShape) {
  const ImageSize size{128, 192};  // w = 8, h = 12: 96 tokens
  EXPECT_EQ(initial_noise(9, size), torch_randn(9, 64 * 96));
}

TEST(Noise, PackPutsChannelMajorValuesIntoTokenRows) {
  const ImageSize size{128, 128};  // h = w = 8
  std::vector<float> z(64 * 64);
  // z[c, y, x] = c * 10000 + y * 100 + x, so every value says where it came from.
  for (int c = 0; c < 64; ++c)
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 8; ++x) z[(c * 8 + y) * 8 + x] = static_cast<float>(c * 10000 + y * 100 + x);
  const auto tokens = pack_latents(z, size);
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x)
      for (int c = 0; c < 64; ++c)
        ASSERT_EQ(tokens[(y * 8 + x) * 64 + c], static_cast<float>(c * 10000 + y * 100 + x));
}

TEST(Noise, NonSquareTokensAreRasterOrder) {
  const ImageSize size{256, 64};  // w = 16 columns, h = 4 rows
  const auto z = initial_noise(3, size);
  const auto tokens = initial_tokens(3, size);
  // token (y = 3, x = 15) is index 63; channel 5 of it is z[5, 3, 15].
  EXPECT_EQ(tokens[63 * 64 + 5], z[5 * 64 + 3 * 16 + 15]);
}

TEST(Noise, WrongLengthIsAnError) {
  EXPECT_THROW(pack_latents(std::vector<float>(10), ImageSize{128, 128}), std::invalid_argument);
}

}  // namespace
}  // namespace rgbaq::host
