#include "cli/text_renderer.h"

#include <ft2build.h>
#include FT_FREETYPE_H
#include <fontconfig/fontconfig.h>
#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>

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

// The code points drawn as an emoji by default (Unicode's Emoji_Presentation): the BMP's few, and the
// pictographs from U+1F000 (those with text presentation there are in no text font we use either).
bool emoji_by_default(char32_t cp) {
  static constexpr std::pair<char32_t, char32_t> kBmp[] = {
      {0x231A, 0x231B}, {0x23E9, 0x23EC}, {0x23F0, 0x23F0}, {0x23F3, 0x23F3}, {0x25FD, 0x25FE}, {0x2614, 0x2615},
      {0x2648, 0x2653}, {0x267F, 0x267F}, {0x2693, 0x2693}, {0x26A1, 0x26A1}, {0x26AA, 0x26AB}, {0x26BD, 0x26BE},
      {0x26C4, 0x26C5}, {0x26CE, 0x26CE}, {0x26D4, 0x26D4}, {0x26EA, 0x26EA}, {0x26F2, 0x26F3}, {0x26F5, 0x26F5},
      {0x26FA, 0x26FA}, {0x26FD, 0x26FD}, {0x2705, 0x2705}, {0x270A, 0x270B}, {0x2728, 0x2728}, {0x274C, 0x274C},
      {0x274E, 0x274E}, {0x2753, 0x2755}, {0x2757, 0x2757}, {0x2795, 0x2797}, {0x27B0, 0x27B0}, {0x27BF, 0x27BF},
      {0x2B1B, 0x2B1C}, {0x2B50, 0x2B50}, {0x2B55, 0x2B55}};
  if (cp >= 0x1F000 && cp <= 0x1FAFF) return true;
  return std::any_of(std::begin(kBmp), std::end(kBmp), [cp](const auto& r) { return cp >= r.first && cp <= r.second; });
}

// Code points that change the character before them and draw nothing of their own here (no shaping):
// variation selectors, the zero width joiner, skin tone modifiers, the keycap mark, tag characters.
bool joins_previous(char32_t cp) {
  return (cp >= 0xFE00 && cp <= 0xFE0F) || cp == 0x200D || (cp >= 0x1F3FB && cp <= 0x1F3FF) || cp == 0x20E3 ||
         (cp >= 0xE0020 && cp <= 0xE007F);
}

// A character as drawn: its code point, its bytes (with those of what joins it), and whether it is
// drawn as an emoji (in colour): by default (🎮), or asked for with U+FE0F (❤️), not with U+FE0E.
struct Cluster {
  char32_t cp = 0;
  std::string_view bytes;
  bool emoji = false;
};

std::vector<Cluster> clusters(std::string_view utf8) {
  std::vector<Cluster> out;
  for (const auto& [cp, bytes] : code_points(utf8)) {
    if (joins_previous(cp) && !out.empty()) {
      Cluster& c = out.back();
      c.bytes = std::string_view(c.bytes.data(), static_cast<size_t>(bytes.data() + bytes.size() - c.bytes.data()));
      if (cp == 0xFE0F) c.emoji = true;
      if (cp == 0xFE0E) c.emoji = false;
      continue;
    }
    out.push_back({cp, bytes, emoji_by_default(cp)});
  }
  return out;
}

// Kinsoku shori (JIS X 4051): characters no line may start with (closing brackets and quotes, commas,
// stops, ！？, iteration marks, the prolonged sound mark, small kana) and none may end with (opening
// brackets and quotes). ASCII's closing punctuation too, for a word broken inside.
bool no_line_start(char32_t cp) {
  static constexpr std::u32string_view kClosing =
      U")]},.!?:;%"
      U"、。，．：；！？）］｝〕〗〙〛〉》」』】〟’”｣､｡･・ー‥…ゝゞ々〻ヽヾ゠〜～‼⁇⁈⁉"
      U"ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿｧｨｩｪｫｬｭｮｯｰ％";
  return kClosing.find(cp) != std::u32string_view::npos;
}

bool no_line_end(char32_t cp) {
  static constexpr std::u32string_view kOpening = U"([{（［｛〔〖〘〚〈《「『【〝‘“｢";
  return kOpening.find(cp) != std::u32string_view::npos;
}

// One loaded face: the font given, or a fallback fontconfig found for a character it lacks. A face
// of colour bitmaps only (Noto Color Emoji: one 109 px strike) is drawn scaled to the pixel size.
struct LoadedFace {
  FT_Face face = nullptr;
  bool bitmap_only = false;
  double scale = 1;  // of a bitmap-only face's strike to the pixel size
};

// A glyph ready to draw: coverage (one byte a pixel) or premultiplied BGRA (four), at the pixel size.
struct Glyph {
  int left = 0, top = 0, width = 0, rows = 0, advance = 0;
  bool color = false;
  std::vector<uint8_t> pixels;
};

}  // namespace

struct TextRenderer::Library {
  FT_Library library = nullptr;
  std::vector<LoadedFace> faces;               // [0]: the font given
  std::map<std::pair<std::string, int>, size_t> face_by_file;
  std::unordered_map<char32_t, size_t> face_of;  // which face draws a character
  int pixel_size = 0;
  ~Library() {
    for (auto& f : faces) FT_Done_Face(f.face);
    if (library) FT_Done_FreeType(library);
  }

  // The face with a glyph for `cp`: the given font when it has one, else the first font fontconfig
  // sorts for it that covers it (CJK, emoji: DejaVu has neither), else the given font's .notdef. An
  // emoji (`emoji`: by default, or asked for with U+FE0F) comes from a colour font first: DejaVu has a
  // black ❤ (U+2764) of its own, and a monochrome emoji font may sort before Noto Color Emoji.
  size_t face_for(char32_t cp, bool emoji) {
    if (cp < 0x20) return 0;
    if (!emoji && FT_Get_Char_Index(faces[0].face, cp) != 0) return 0;
    const char32_t key = cp | (emoji ? char32_t{1} << 31 : 0);
    if (const auto it = face_of.find(key); it != face_of.end()) return it->second;
    size_t found = emoji ? search(cp, true) : 0;
    if (found == 0 && emoji && FT_Get_Char_Index(faces[0].face, cp) == 0) found = search(cp, false);
    if (found == 0 && !emoji) found = search(cp, false);
    face_of.emplace(key, found);
    return found;
  }

  // The first font fontconfig sorts for `cp` that covers it (a colour one, with `color`); 0 for none.
  size_t search(char32_t cp, bool color) {
    size_t found = 0;
    FcPattern* pattern = FcPatternCreate();
    FcCharSet* chars = FcCharSetCreate();
    FcCharSetAddChar(chars, cp);
    FcPatternAddCharSet(pattern, FC_CHARSET, chars);
    if (color) FcPatternAddBool(pattern, FC_COLOR, FcTrue);
    FcConfigSubstitute(nullptr, pattern, FcMatchPattern);
    FcDefaultSubstitute(pattern);
    FcResult result = FcResultNoMatch;
    FcFontSet* fonts = FcFontSort(nullptr, pattern, FcFalse, nullptr, &result);
    for (int i = 0; fonts && i < fonts->nfont && found == 0; ++i) {
      FcCharSet* has = nullptr;
      FcChar8* file = nullptr;
      int index = 0;
      FcBool is_color = FcFalse;
      if (FcPatternGetCharSet(fonts->fonts[i], FC_CHARSET, 0, &has) != FcResultMatch || !FcCharSetHasChar(has, cp)) continue;
      if (color && (FcPatternGetBool(fonts->fonts[i], FC_COLOR, 0, &is_color) != FcResultMatch || !is_color)) continue;
      if (FcPatternGetString(fonts->fonts[i], FC_FILE, 0, &file) != FcResultMatch) continue;
      FcPatternGetInteger(fonts->fonts[i], FC_INDEX, 0, &index);
      found = open_fallback(reinterpret_cast<const char*>(file), index, cp);
    }
    if (fonts) FcFontSetDestroy(fonts);
    FcCharSetDestroy(chars);
    FcPatternDestroy(pattern);
    return found;
  }

  // Opens (once) the face at `file`, `index`; its index in `faces`, or 0 when FreeType cannot use it.
  size_t open_fallback(const std::string& file, int index, char32_t cp) {
    const auto key = std::pair{file, index};
    if (const auto it = face_by_file.find(key); it != face_by_file.end()) {
      return FT_Get_Char_Index(faces[it->second].face, cp) != 0 ? it->second : 0;
    }
    LoadedFace f;
    if (FT_New_Face(library, file.c_str(), index, &f.face) != 0) return face_by_file[key] = 0;
    if (FT_IS_SCALABLE(f.face)) {
      FT_Set_Pixel_Sizes(f.face, 0, static_cast<FT_UInt>(pixel_size));
    } else if (f.face->num_fixed_sizes > 0) {
      // The strike nearest the pixel size from above (sharper when scaled down), else the largest.
      int best = 0;
      for (int i = 1; i < f.face->num_fixed_sizes; ++i) {
        const int h = f.face->available_sizes[i].height, b = f.face->available_sizes[best].height;
        if ((h >= pixel_size && (b < pixel_size || h < b)) || (b < pixel_size && h > b)) best = i;
      }
      FT_Select_Size(f.face, best);
      f.bitmap_only = true;
      f.scale = double(pixel_size) / double(f.face->size->metrics.y_ppem);
    } else {
      FT_Done_Face(f.face);
      return face_by_file[key] = 0;
    }
    faces.push_back(f);
    face_by_file[key] = faces.size() - 1;
    return FT_Get_Char_Index(f.face, cp) != 0 ? faces.size() - 1 : 0;
  }

  // Loads and renders a glyph (control characters draw as spaces), an emoji's from a colour font.
  Glyph glyph(char32_t cp, bool emoji = false) {
    if (cp < 0x20) cp = U' ';
    const size_t index = face_for(cp, emoji);
    const LoadedFace* used = &faces[index];
    if (FT_Load_Char(used->face, cp, FT_LOAD_RENDER | FT_LOAD_COLOR) != 0) {
      used = &faces[0];
      if (FT_Load_Char(used->face, U'?', FT_LOAD_RENDER) != 0) throw std::runtime_error("FreeType cannot render a character");
    }
    const LoadedFace& f = *used;
    const FT_GlyphSlot g = f.face->glyph;
    const FT_Bitmap& bm = g->bitmap;
    Glyph out;
    out.color = bm.pixel_mode == FT_PIXEL_MODE_BGRA;
    if (!f.bitmap_only) {
      out.left = g->bitmap_left, out.top = g->bitmap_top, out.width = int(bm.width), out.rows = int(bm.rows);
      out.advance = int(g->advance.x >> 6);
      const int bytes = out.color ? 4 : 1;
      out.pixels.resize(size_t(out.width) * out.rows * bytes);
      for (int y = 0; y < out.rows; ++y) {
        std::copy_n(bm.buffer + y * bm.pitch, out.width * bytes, out.pixels.begin() + size_t(y) * out.width * bytes);
      }
      return out;
    }
    // A strike scaled to the pixel size: each pixel the area average of the strike's pixels under it.
    const double k = f.scale;
    out.left = int(std::lround(g->bitmap_left * k)), out.top = int(std::lround(g->bitmap_top * k));
    out.width = std::max(1, int(std::lround(bm.width * k))), out.rows = std::max(1, int(std::lround(bm.rows * k)));
    out.advance = int(std::lround((g->advance.x >> 6) * k));
    const int bytes = out.color ? 4 : 1;
    out.pixels.assign(size_t(out.width) * out.rows * bytes, 0);
    for (int y = 0; y < out.rows; ++y) {
      const int sy0 = int(y / k), sy1 = std::min(int(bm.rows), std::max(sy0 + 1, int((y + 1) / k)));
      for (int x = 0; x < out.width; ++x) {
        const int sx0 = int(x / k), sx1 = std::min(int(bm.width), std::max(sx0 + 1, int((x + 1) / k)));
        for (int c = 0; c < bytes; ++c) {
          int sum = 0, n = 0;
          for (int sy = sy0; sy < sy1; ++sy)
            for (int sx = sx0; sx < sx1; ++sx, ++n) sum += bm.buffer[sy * bm.pitch + sx * bytes + c];
          out.pixels[(size_t(y) * out.width + x) * bytes + c] = uint8_t(n ? (sum + n / 2) / n : 0);
        }
      }
    }
    return out;
  }
};

TextRenderer::TextRenderer(const std::filesystem::path& font, int pixel_size) : ft_(std::make_unique<Library>()), pixel_size_(pixel_size) {
  const std::string hint = font == kDefaultFontPath ? " (Debian package fonts-dejavu-core; scripts/setup installs it)" : "";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(font, ec)) {
    throw std::runtime_error("font " + font.string() + " not found" + hint + "; the contact sheet draws its labels with it");
  }
  if (FT_Init_FreeType(&ft_->library) != 0) throw std::runtime_error("FreeType does not initialise");
  ft_->pixel_size = pixel_size;
  ft_->faces.emplace_back();
  if (FT_New_Face(ft_->library, font.c_str(), 0, &ft_->faces[0].face) != 0) {
    ft_->faces.clear();
    throw std::runtime_error("font " + font.string() + " is not a font FreeType can read" + hint);
  }
  const FT_Face face = ft_->faces[0].face;
  if (FT_Set_Pixel_Sizes(face, 0, static_cast<FT_UInt>(pixel_size)) != 0) {
    throw std::runtime_error("font " + font.string() + " has no " + std::to_string(pixel_size) + " px size");
  }
  ascent_ = static_cast<int>(face->size->metrics.ascender >> 6);
  line_height_ = static_cast<int>(face->size->metrics.height >> 6);
}

TextRenderer::~TextRenderer() = default;

int TextRenderer::measure(std::string_view utf8) {
  int width = 0;
  for (const Cluster& c : clusters(utf8)) width += ft_->glyph(c.cp, c.emoji).advance;
  return width;
}

std::string TextRenderer::fit(std::string_view utf8, int max_width) {
  if (measure(utf8) <= max_width) return std::string(utf8);
  const int room = max_width - measure(kEllipsis);
  std::string out;
  int width = 0;
  for (const Cluster& c : clusters(utf8)) {
    const int advance = ft_->glyph(c.cp, c.emoji).advance;
    if (width + advance > room) break;
    out.append(c.bytes);
    width += advance;
  }
  return room > 0 ? out + std::string(kEllipsis) : "";
}

std::vector<std::string> TextRenderer::wrap(std::string_view utf8, int max_width, int max_lines) {
  std::vector<std::string> lines;
  const auto chars = clusters(utf8);
  size_t i = 0;
  while (i < chars.size() && static_cast<int>(lines.size()) < max_lines) {
    while (i < chars.size() && chars[i].cp == U' ') ++i;  // no line starts with a space
    if (static_cast<int>(lines.size()) == max_lines - 1) {
      std::string rest;
      for (size_t k = i; k < chars.size(); ++k) rest.append(chars[k].bytes);
      if (!rest.empty()) lines.push_back(fit(rest, max_width));
      break;
    }
    size_t end = i, last_space = std::string::npos;
    int width = 0;
    while (end < chars.size()) {
      const int advance = ft_->glyph(chars[end].cp, chars[end].emoji).advance;
      if (width + advance > max_width && end > i) break;
      if (chars[end].cp == U' ') last_space = end;
      width += advance;
      ++end;
    }
    // Break at the last space, unless the line ends just before one.
    if (end < chars.size() && chars[end].cp != U' ' && last_space != std::string::npos && last_space > i) end = last_space;
    // Kinsoku: the next line may not start with closing punctuation (，。」), nor this one end with an
    // opening bracket: the characters before the break go down with it (oidashi), so every line stays
    // within the width. A line that would be left with nothing keeps its punctuation hanging past
    // the width instead.
    const auto bad_break = [&](size_t at) {
      return at < chars.size() && (no_line_start(chars[at].cp) || (at > 0 && no_line_end(chars[at - 1].cp)));
    };
    if (bad_break(end)) {
      size_t pushed = end;
      while (pushed > i + 1 && bad_break(pushed)) --pushed;
      if (!bad_break(pushed)) {
        end = pushed;
      } else {
        while (end < chars.size() && no_line_start(chars[end].cp)) ++end;
      }
    }
    std::string line;
    for (size_t k = i; k < end; ++k) line.append(chars[k].bytes);
    if (!line.empty()) lines.push_back(line);
    i = end;
  }
  return lines;
}

int TextRenderer::draw(Canvas canvas, int x, int baseline, std::string_view utf8, Rgb color) {
  for (const Cluster& c : clusters(utf8)) {
    const Glyph g = ft_->glyph(c.cp, c.emoji);
    const int left = x + g.left, top = baseline - g.top;
    for (int row = 0; row < g.rows; ++row) {
      const int py = top + row;
      if (py < 0 || py >= canvas.height) continue;
      for (int col = 0; col < g.width; ++col) {
        const int px = left + col;
        if (px < 0 || px >= canvas.width) continue;
        uint8_t* d = &canvas.rgba[(static_cast<size_t>(py) * canvas.width + px) * 4];
        if (g.color) {
          // Premultiplied BGRA (an emoji): its own colours over what is there.
          const uint8_t* c = &g.pixels[(size_t(row) * g.width + col) * 4];
          if (c[3] == 0) continue;
          for (int k = 0; k < 3; ++k) d[k] = static_cast<uint8_t>(c[2 - k] + (d[k] * (255 - c[3]) + 127) / 255);
          d[3] = 255;
          continue;
        }
        const int coverage = g.pixels[size_t(row) * g.width + col];
        if (coverage == 0) continue;
        const auto blend = [coverage](uint8_t under, uint8_t over) {
          return static_cast<uint8_t>((under * (255 - coverage) + over * coverage + 127) / 255);
        };
        d[0] = blend(d[0], color.r);
        d[1] = blend(d[1], color.g);
        d[2] = blend(d[2], color.b);
        d[3] = 255;
      }
    }
    x += g.advance;
  }
  return x;
}

}  // namespace rgbaq::cli
