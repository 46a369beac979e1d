#include "tests/tokenizer/prompt_corpus.h"

#include <array>
#include <cstdio>
#include <random>
#include <string_view>

namespace rgbaq::testing {
namespace {

void put(std::string& s, char32_t cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xc0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xe0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    s += static_cast<char>(0xf0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

const std::vector<std::string_view> kSubjects = {
    "a red fox",        "an isometric castle", "a glass teapot",  "a pixel-art sword", "a low-poly tree",
    "a sci-fi helmet",  "a watercolor koi",    "a cute robot",    "an old lantern",    "a crystal potion",
    "a dragon's egg",   "a neon sign",         "a paper crane",   "a mossy rock",      "a treasure chest"};
const std::vector<std::string_view> kStyles = {
    "studio lighting", "transparent background", "8k, highly detailed", "flat vector style", "soft shadows",
    "cinematic, f/1.8", "trending on ArtStation", "game asset", "sticker, die-cut", "octane render"};
const std::vector<std::string_view> kScripts = {
    "一只可爱的小猫坐在窗台上，阳光明媚。", "水墨画风格的山水，透明背景", "桜の木の下で猫が眠っている",
    "カタカナとひらがなの混在テキスト", "귀여운 고양이 스티커, 투명 배경", "قطة لطيفة على خلفية شفافة",
    "חתול חמוד על רקע שקוף", "पारदर्शी पृष्ठभूमि पर एक प्यारी बिल्ली", "แมวน่ารักบนพื้นหลังโปร่งใส",
    "Милый котёнок на прозрачном фоне", "Ένα χαριτωμένο γατάκι", "Սիրուն կատու", "ლამაზი კატა",
    "ድመት በነጭ ጀርባ", "ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ", "ឆ្មាគួរឱ្យស្រឡាញ់", "བོད་ཡིག", "ᠮᠣᠩᠭᠣᠯ\u180e ᠪᠢᠴᠢᠭ"};
const std::vector<std::string_view> kEmoji = {
    "👩‍🚀", "👨‍👩‍👧‍👦", "👍🏽", "👋🏿", "🏳️‍🌈", "🇯🇵", "🇺🇸🇫🇷", "❤️", "🧑🏻‍💻", "🐈‍⬛", "☕", "✨🌟⭐", "🫠", "🏴󠁧󠁢󠁳󠁣󠁴󠁿"};
const std::vector<std::string_view> kCombining = {
    "cafe\u0301", "A\u030angstro\u0308m", "n\u0303o", "\u1100\u1161\u11a8", "e\u0301\u0301", "o\u0308\u0304",
    "\u0041\u030a\u0301", "s\u0323\u0307", "q\u0307\u0323", "\u212b", "\u2126", "e\u0328\u0301", "\u0915\u093c"};
const std::vector<std::string_view> kLigatures = {"ﬁne ﬂower", "eﬀect", "ﬆ", "'ſ", "ſtyle", "\u212a", "Ǆ ǅ ǆ",
                                                  "Ⅻ ⅷ", "x² y³ ½ ¼", "１２３ＡＢＣ", "٣٤٥ ۶۷", "१२३", "①②"};
const std::vector<std::string_view> kNumbers = {"1024x1024", "3.14159", "1,000,000", "v2.1-turbo", "seed=42",
                                                "2026-11-30", "0x7f", "99%", "#1", "$12.50", "-17°C"};
const std::vector<std::string_view> kContractions = {"IT'S", "WE'RE", "THEY'VE", "I'M", "YOU'LL", "HE'D",
                                                     "DON'T", "it's", "We'Re", "'S", "'LL", "rock'n'roll",
                                                     "O'Neil", "it’s", "'d'D", "''s", "'re'"};
const std::vector<std::string_view> kSpaces = {" ",  "  ",   "   ", "\t", "\t\t", "\n", "\r\n", "\n\n", "\r",
                                               " \n", "\n ", " \r\n ", "\u3000", "\u00a0", "\u2028", "\u2003",
                                               "\u200b", "\u0085", " \t \n", "      "};
const std::vector<std::string_view> kSpecials = {"<|im_end|>",   "<|im_start|>", "<|endoftext|>", "<think>",
                                                 "</think>",     "<|im_",        "<|im_end|",     "<tool_call>",
                                                 "<|vision_pad|>", "<|im_start|>user\n", "< |im_end| >"};
const std::array<std::pair<char32_t, char32_t>, 24> kBlocks = {{
    {0x20, 0x7e},       {0xa0, 0x24f},     {0x250, 0x36f},   {0x370, 0x3ff},   {0x400, 0x52f},
    {0x530, 0x6ff},     {0x900, 0xdff},    {0xe00, 0xfff},   {0x1000, 0x11ff}, {0x1680, 0x18af},
    {0x1e00, 0x1fff},   {0x2000, 0x2bff},  {0x2e80, 0x2fdf}, {0x3000, 0x33ff}, {0x4e00, 0x4eff},
    {0xa000, 0xa4cf},   {0xac00, 0xad00},  {0xe000, 0xe0ff}, {0xfb00, 0xfdff}, {0xfe00, 0xffef},
    {0x10000, 0x1018f}, {0x1d400, 0x1d7ff}, {0x1f300, 0x1faff}, {0x20000, 0x200ff},
}};

}  // namespace

std::vector<std::string> make_prompt_corpus(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](const std::vector<std::string_view>& v) { return std::string(v[rng() % v.size()]); };
  auto random_code_points = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) {
      const auto& [lo, hi] = kBlocks[rng() % kBlocks.size()];
      char32_t cp = lo + rng() % (hi - lo + 1);
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 'x';
      put(s, cp);
    }
    return s;
  };
  std::vector<std::string> corpus;
  corpus.reserve(count);
  for (size_t i = 0; corpus.size() < count; ++i) {
    std::string p;
    switch (i % 12) {
      case 0:
      case 1:
        p = pick(kSubjects) + ", " + pick(kStyles) + ", " + pick(kStyles);
        break;
      case 2:
        p = pick(kScripts) + pick(kSpaces) + pick(kScripts);
        break;
      case 3:
        p = pick(kSubjects) + " " + pick(kEmoji) + pick(kEmoji) + " " + pick(kEmoji);
        break;
      case 4:
        p = pick(kCombining) + " " + pick(kLigatures) + pick(kCombining);
        break;
      case 5:
        p = pick(kContractions) + " " + pick(kContractions) + pick(kSpaces) + pick(kContractions);
        break;
      case 6:
        p = pick(kSpaces) + pick(kSubjects) + pick(kSpaces) + pick(kNumbers) + pick(kSpaces);
        break;
      case 7:
        p = pick(kSubjects) + pick(kSpecials) + pick(kStyles) + pick(kSpecials);
        break;
      case 8:
        p = random_code_points(1 + static_cast<int>(rng() % 40));
        break;
      case 9:
        p = pick(kNumbers) + pick(kLigatures) + pick(kNumbers) + " " + pick(kNumbers);
        break;
      case 10: {
        const int parts = 2 + static_cast<int>(rng() % 6);
        for (int k = 0; k < parts; ++k) {
          const std::vector<std::string_view>* lists[] = {&kSubjects, &kScripts, &kEmoji, &kCombining,
                                                          &kContractions, &kSpaces, &kSpecials, &kNumbers};
          p += pick(*lists[rng() % 8]);
        }
        break;
      }
      default:
        p = random_code_points(3) + pick(kSpaces) + random_code_points(5) + pick(kContractions);
        break;
    }
    corpus.push_back(std::move(p));
  }
  corpus[0] = "";
  if (count > 1) corpus[1] = " ";
  return corpus;
}

std::string json_string(const std::string& utf8) {
  std::string out = "\"";
  for (unsigned char c : utf8) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace rgbaq::testing
