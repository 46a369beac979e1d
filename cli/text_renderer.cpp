#include "cli/text_renderer.h"

#include <ft2build.h>
#include FT_FREETYPE_H
#include <utf8proc.h>

#include <algorithm>
#include <stdexcept>

namespace rgbaq::cli {
namespace {

// The code points of `utf8`; an invalid byte reads as U+FFFD.
std::vector<std::pair<char32_t, std::string_view>> code_points(std::string_view utf8) {
  std::vector<std::pair<char32_t, std::string_view>> out;
  size_t i = 0;
  while (i < utf8.size()) {
    utf8proc_int32_t cp = -1;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(utf8.data() + i),
                                    static_cast<utf8proc_ssize_t>(utf8.size() - i), &cp);
    const size_t len = n > 0 ? static_cast<size_t>(n) : 1;
    out.emplace_back(n > 0 ? static_cast<char32_t>(cp) : U'\uFFFD', utf8.substr(i, len));
    i += len;
  }
  return out;
}

constexpr std::string_view kEllipsis = "…";

}  // namespace

struct TextRenderer::Library {
  FT_Library library = nullptr;
  FT_Face face = nullptr;
  ~Library() {
    if (face) FT_Done_Face(face);
    if (library) FT_Done_FreeType(library);
  }
  // Loads and renders a glyph (control characters draw as spaces).
  FT_GlyphSlot glyph(char32_t cp) {
    if (cp < 0x20) cp = U' ';
    if (FT_Load_Char(face, cp, FT_LOAD_RENDER) != 0 && FT_Load_Char(face, U'?', FT_LOAD_RENDER) != 0) {
      throw std::runtime_error("FreeType cannot render a character");
    }
    return face->glyph;
  }
};

TextRenderer::TextRenderer(const std::filesystem::path& font, int pixel_size) : ft_(std::make_unique<Library>()), pixel_size_(pixel_size) {
  const std::string hint = font == kDefaultFontPath ? " (Debian package fonts-dejavu-core; scripts/setup installs it)" : "";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(font, ec)) {
    throw std::runtime_error("font " + font.string() + " not found" + hint + "; the contact sheet draws its labels with it");
  }
  if (FT_Init_FreeType(&ft_->library) != 0) throw std::runtime_error("FreeType does not initialise");
  if (FT_New_Face(ft_->library, font.c_str(), 0, &ft_->face) != 0) {
    throw std::runtime_error("font " + font.string() + " is not a font FreeType can read" + hint);
  }
  if (FT_Set_Pixel_Sizes(ft_->face, 0, static_cast<FT_UInt>(pixel_size)) != 0) {
    throw std::runtime_error("font " + font.string() + " has no " + std::to_string(pixel_size) + " px size");
  }
  ascent_ = static_cast<int>(ft_->face->size->metrics.ascender >> 6);
  line_height_ = static_cast<int>(ft_->face->size->metrics.height >> 6);
}

TextRenderer::~TextRenderer() = default;

int TextRenderer::measure(std::string_view utf8) {
  int width = 0;
  for (const auto& [cp, bytes] : code_points(utf8)) width += static_cast<int>(ft_->glyph(cp)->advance.x >> 6);
  return width;
}

std::string TextRenderer::fit(std::string_view utf8, int max_width) {
  if (measure(utf8) <= max_width) return std::string(utf8);
  const int room = max_width - measure(kEllipsis);
  std::string out;
  int width = 0;
  for (const auto& [cp, bytes] : code_points(utf8)) {
    const int advance = static_cast<int>(ft_->glyph(cp)->advance.x >> 6);
    if (width + advance > room) break;
    out.append(bytes);
    width += advance;
  }
  return room > 0 ? out + std::string(kEllipsis) : "";
}

std::vector<std::string> TextRenderer::wrap(std::string_view utf8, int max_width, int max_lines) {
  std::vector<std::string> lines;
  const auto chars = code_points(utf8);
  size_t i = 0;
  while (i < chars.size() && static_cast<int>(lines.size()) < max_lines) {
    while (i < chars.size() && chars[i].first == U' ') ++i;  // no line starts with a space
    if (static_cast<int>(lines.size()) == max_lines - 1) {
      std::string rest;
      for (size_t k = i; k < chars.size(); ++k) rest.append(chars[k].second);
      if (!rest.empty()) lines.push_back(fit(rest, max_width));
      break;
    }
    size_t end = i, last_space = std::string::npos;
    int width = 0;
    while (end < chars.size()) {
      const int advance = static_cast<int>(ft_->glyph(chars[end].first)->advance.x >> 6);
      if (width + advance > max_width && end > i) break;
      if (chars[end].first == U' ') last_space = end;
      width += advance;
      ++end;
    }
    // Break at the last space, unless the line ends just before one.
    if (end < chars.size() && chars[end].first != U' ' && last_space != std::string::npos && last_space > i) end = last_space;
    std::string line;
    for (size_t k = i; k < end; ++k) line.append(chars[k].second);
    if (!line.empty()) lines.push_back(line);
    i = end;
  }
  return lines;
}

int TextRenderer::draw(Canvas canvas, int x, int baseline, std::string_view utf8, Rgb color) {
  for (const auto& [cp, bytes] : code_points(utf8)) {
    const FT_GlyphSlot g = ft_->glyph(cp);
    const FT_Bitmap& bm = g->bitmap;
    const int left = x + g->bitmap_left, top = baseline - g->bitmap_top;
    for (int row = 0; row < static_cast<int>(bm.rows); ++row) {
      const int py = top + row;
      if (py < 0 || py >= canvas.height) continue;
      for (int col = 0; col < static_cast<int>(bm.width); ++col) {
        const int px = left + col;
        if (px < 0 || px >= canvas.width) continue;
        const int coverage = bm.buffer[row * bm.pitch + col];
        if (coverage == 0) continue;
        uint8_t* d = &canvas.rgba[(static_cast<size_t>(py) * canvas.width + px) * 4];
        const auto blend = [coverage](uint8_t under, uint8_t over) {
          return static_cast<uint8_t>((under * (255 - coverage) + over * coverage + 127) / 255);
        };
        d[0] = blend(d[0], color.r);
        d[1] = blend(d[1], color.g);
        d[2] = blend(d[2], color.b);
        d[3] = 255;
      }
    }
    x += static_cast<int>(g->advance.x >> 6);
  }
  return x;
}

}  // namespace rgbaq::cli
