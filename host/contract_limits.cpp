#include "host/contract_limits.h"

#include <stdexcept>
#include <string>

namespace rgbaq::host {
namespace {

void check_range(const char* what, int value, int lo, int hi) {
  if (value < lo || value > hi) {
    throw std::invalid_argument(std::string(what) + " is " + std::to_string(value) + "; the contract allows " +
                                std::to_string(lo) + ".." + std::to_string(hi));
  }
}

}  // namespace

void check_full_tokens(int lfull) {
  check_range("the encoder's token count Lfull (template included)", lfull, kMinFullTokens, kMaxFullTokens);
}

void check_text_tokens(int text_len) {
  check_range("the DiT's text length L", text_len, kMinTextTokens, kMaxTextTokens);
}

void check_image_tokens(int image_tokens) {
  check_range("the DiT's image token count N", image_tokens, kMinImageTokens, kMaxImageTokens);
}

}  // namespace rgbaq::host
