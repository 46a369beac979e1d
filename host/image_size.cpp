#include "host/image_size.h"

#include <charconv>
#include <stdexcept>

#include "host/contract_limits.h"

namespace rgbaq::host {
namespace {

int parse_side(std::string_view whole, std::string_view part) {
  int value = 0;
  const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (part.empty() || ec != std::errc() || end != part.data() + part.size()) {
    throw std::invalid_argument("size \"" + std::string(whole) +
                                "\" is not a size: use a number of pixels (256, 512, 1024) or WxH (e.g. 768x512)");
  }
  return value;
}

}  // namespace

std::string ImageSize::to_string() const {
  return width == height ? std::to_string(width) : std::to_string(width) + "x" + std::to_string(height);
}

ImageSize parse_image_size(std::string_view text) {
  const auto x = text.find_first_of("xX");
  ImageSize size;
  if (x == std::string_view::npos) {
    size.width = size.height = parse_side(text, text);
  } else {
    size.width = parse_side(text, text.substr(0, x));
    size.height = parse_side(text, text.substr(x + 1));
  }
  try {
    check_image_size(size);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("size \"" + std::string(text) + "\": " + e.what());
  }
  return size;
}

void check_image_size(const ImageSize& size) {
  for (const auto& [name, value] : {std::pair{"width", size.width}, std::pair{"height", size.height}}) {
    if (value <= 0 || value % kPatchPixels != 0) {
      throw std::invalid_argument(std::string(name) + " " + std::to_string(value) +
                                  " px is not a positive multiple of 16");
    }
  }
  if (size.tokens() < kMinImageTokens || size.tokens() > kMaxImageTokens) {
    throw std::invalid_argument(size.to_string() + " px is " + std::to_string(size.tokens()) +
                                " image tokens; the contract allows 64..4096 (128x128 to 1024x1024 px in area)");
  }
}

void check_fixed_decoder_size(const ImageSize& size, std::span<const int> allowed) {
  for (int s : allowed) {
    if (size.width == s && size.height == s) return;
  }
  std::string list;
  for (int s : allowed) list += (list.empty() ? "" : ", ") + std::to_string(s);
  throw std::invalid_argument("size " + size.to_string() + " has no decoder on this backend; it decodes " + list +
                              " only");
}

}  // namespace rgbaq::host
