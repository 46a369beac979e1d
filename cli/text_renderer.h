#pragma once
// Text on RGBA8 images, drawn with FreeType from a TrueType font (DejaVu Sans by default): the contact
// sheet's labels. A real font rather than a built-in bitmap one, so prompts read as they were written;
// a character the font lacks (CJK, emoji) is drawn from the font fontconfig finds for it (Debian's
// fonts-noto-cjk, fonts-noto-color-emoji), a colour emoji in its colours.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rgbaq::cli {

// Where Debian's fonts-dejavu-core puts DejaVu Sans.
inline constexpr const char* kDefaultFontPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

// An RGBA8 image, row-major, that text is drawn onto.
struct Canvas {
  std::vector<uint8_t>& rgba;
  int width = 0, height = 0;
};

class TextRenderer {
 public:
  // Throws std::runtime_error naming the font file and the Debian package that provides the default
  // when it is missing or FreeType cannot read it.
  TextRenderer(const std::filesystem::path& font, int pixel_size);
  ~TextRenderer();
  TextRenderer(const TextRenderer&) = delete;
  TextRenderer& operator=(const TextRenderer&) = delete;

  int pixel_size() const { return pixel_size_; }
  // Line metrics in pixels: ascent above the baseline, and the distance between baselines.
  int ascent() const { return ascent_; }
  int line_height() const { return line_height_; }

  // The advance width of `utf8` in pixels.
  int measure(std::string_view utf8);
  // `utf8` cut to at most `max_width` pixels, ending in "…" when cut.
  std::string fit(std::string_view utf8, int max_width);
  // `utf8` broken into at most `max_lines` lines of at most `max_width` pixels (at spaces where it can),
  // the last ending in "…" when the text goes on.
  std::vector<std::string> wrap(std::string_view utf8, int max_width, int max_lines);
  // Draws `utf8` with its baseline at y = `baseline` from x = `x`, blending `color` by each glyph's
  // coverage; pixels outside the canvas are skipped. Returns the pen's x after the text.
  int draw(Canvas canvas, int x, int baseline, std::string_view utf8, Rgb color);

 private:
  struct Library;
  std::unique_ptr<Library> ft_;
  int pixel_size_ = 0, ascent_ = 0, line_height_ = 0;
};

}  // namespace rgbaq::cli
