#include "host/image_size.h"

#include <gtest/gtest.h>

#include "host/contract_limits.h"

namespace rgbaq::host {
namespace {

TEST(ImageSize, ParsesSquareAndWxH) {
  EXPECT_EQ(parse_image_size("256"), (ImageSize{256, 256}));
  EXPECT_EQ(parse_image_size("768x512"), (ImageSize{768, 512}));
  const auto s = parse_image_size("1024X256");
  EXPECT_EQ(s.grid_width(), 64);
  EXPECT_EQ(s.grid_height(), 16);
  EXPECT_EQ(s.tokens(), 1024);
  EXPECT_EQ(s.to_string(), "1024x256");
}

void expect_error(const std::string& text, const std::string& fragment) {
  try {
    parse_image_size(text);
    FAIL() << text << " was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ImageSize, RejectsWithTheLimitAndTheValue) {
  expect_error("250", "width 250 px is not a positive multiple of 16");
  expect_error("112", "49 image tokens; the contract allows 64..4096");
  expect_error("1040", "4225 image tokens");
  expect_error("big", "is not a size");
  expect_error("256x", "is not a size");
  expect_error("-256", "width -256 px is not a positive multiple of 16");
  expect_error("", "is not a size");
  EXPECT_NO_THROW(parse_image_size("128"));
  EXPECT_NO_THROW(parse_image_size("1024"));
}

TEST(ImageSize, FixedDecoderSizes) {
  const int coreai[] = {256, 512, 1024};
  EXPECT_NO_THROW(check_fixed_decoder_size({512, 512}, coreai));
  EXPECT_THROW(check_fixed_decoder_size({512, 256}, coreai), std::invalid_argument);
}

TEST(ContractLimits, TokenAxes) {
  EXPECT_NO_THROW(check_full_tokens(16));
  EXPECT_NO_THROW(check_full_tokens(512));
  EXPECT_THROW(check_full_tokens(15), std::invalid_argument);
  EXPECT_THROW(check_full_tokens(513), std::invalid_argument);
  EXPECT_THROW(check_text_tokens(7), std::invalid_argument);
  EXPECT_THROW(check_image_tokens(4097), std::invalid_argument);
  try {
    check_text_tokens(600);
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "the DiT's text length L is 600; the contract allows 8..512");
  }
}

}  // namespace
}  // namespace rgbaq::host
