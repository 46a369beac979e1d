#include "tokenizer/byte_level.h"

#include <array>
#include <stdexcept>

#include "tokenizer/unicode_text.h"

namespace rgbaq::tokenizer {
namespace {

struct Tables {
  std::array<char32_t, 256> to_char{};
  std::array<int, 324> to_byte{};  // code points 0..323 cover the whole alphabet
};

const Tables& tables() {
  static const Tables t = [] {
    Tables t;
    t.to_byte.fill(-1);
    // Printable Latin-1 stands for itself; the other 68 bytes map to U+0100 onwards, in byte order.
    auto printable = [](int b) { return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff); };
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      t.to_char[b] = printable(b) ? static_cast<char32_t>(b) : next++;
      t.to_byte[t.to_char[b]] = b;
    }
    return t;
  }();
  return t;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

}  // namespace

char32_t byte_to_char(unsigned char b) { return tables().to_char[b]; }

std::optional<std::string> byte_level_decode(std::string_view spelled) {
  std::string bytes;
  bytes.reserve(spelled.size());
  for (size_t pos = 0; pos < spelled.size();) {
    char32_t cp;
    try {
      cp = decode_utf8(spelled, pos);
    } catch (const std::invalid_argument&) {
      return std::nullopt;
    }
    if (cp >= tables().to_byte.size() || tables().to_byte[cp] < 0) return std::nullopt;
    bytes += static_cast<char>(tables().to_byte[cp]);
  }
  return bytes;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) append_utf8(out, byte_to_char(b));
  return out;
}

}  // namespace rgbaq::tokenizer
