#pragma once
// A PNG bomb for the tests of what another user plants at an output path: a few KB on disk that a
// decoder asked for RGBA8 would make gigabytes of.
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rgbaq {

inline void put_chunk(std::string& png, const char* type, const std::string& data) {
  const auto be32 = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) png += static_cast<char>((v >> s) & 0xff);
  };
  be32(static_cast<uint32_t>(data.size()));
  const std::string body = std::string(type, 4) + data;
  png += body;
  be32(static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

// A 1-bit grayscale PNG of `side` x `side` black pixels, written by hand with zlib: a decoder asked for
// RGBA8 makes side * side * 4 bytes of it.
inline std::string png_bomb(uint32_t side) {
  std::string png = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  for (const uint32_t v : {side, side})
    for (int s = 24; s >= 0; s -= 8) ihdr += static_cast<char>((v >> s) & 0xff);
  ihdr += std::string("\x01\x00\x00\x00\x00", 5);  // bit depth 1, gray, deflate, no filter method, no interlace
  put_chunk(png, "IHDR", ihdr);
  const std::string row(1 + side / 8, '\0');  // filter byte 0, then the row's bits
  z_stream z{};
  deflateInit(&z, 9);
  std::string idat;
  std::vector<unsigned char> buf(1 << 16);
  for (uint32_t y = 0; y <= side; ++y) {
    const bool last = y == side;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(row.data()));
    z.avail_in = last ? 0 : static_cast<uInt>(row.size());
    do {
      z.next_out = buf.data();
      z.avail_out = static_cast<uInt>(buf.size());
      deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
      idat.append(reinterpret_cast<char*>(buf.data()), buf.size() - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  put_chunk(png, "IDAT", idat);
  put_chunk(png, "IEND", "");
  return png;
}

}  // namespace rgbaq
