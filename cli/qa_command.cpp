#include "cli/qa_command.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "assets/alpha_check.h"
#include "common/arguments.h"
#include "common/printable_text.h"
#include "storage/png_file.h"

namespace rgbaq::cli {
namespace {

using common::Arguments;
using common::UsageError;
using nlohmann::json;

// What the PNG stored before read_png made it RGBA8 (libpng's channel count of the stored pixels: a
// palette is one channel, its tRNS alpha, if any, expanded into the fourth).
const char* stored_as(int channels) {
  switch (channels) {
    case 1: return "grey or palette";
    case 2: return "grey and alpha";
    case 3: return "RGB";
    default: return "RGBA";
  }
}

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

}  // namespace

std::string qa_filter_option(const std::string& text) {
  const auto filter = jobs::parse_qa_filter(text);
  if (!filter) throw UsageError("--qa \"" + text + "\" is not ok or one of " + jobs::qa_flag_names());
  return *filter;
}

int qa_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {}, {"json"});
  if (a.positionals().empty()) throw UsageError("give one or more PNG files: rgbaq qa FILE.png...");
  bool all_read = true;
  json images = json::array();
  for (const std::string& file : a.positionals()) {
    storage::PngImage png;
    try {
      png = storage::read_png(file);
    } catch (const std::exception& e) {
      all_read = false;
      if (a.has("json")) images.push_back({{"file", file}, {"error", e.what()}});
      ctx.err << "rgbaq qa: " << common::printable(e.what()) << "\n";
      continue;
    }
    const assets::AlphaCheck check = assets::check_alpha(png.rgba.data(), png.width, png.height);
    // Any PNG is checked as RGBA8: grey, RGB and palette images as libpng expands them (no alpha channel
    // and no tRNS: every pixel opaque), 16-bit ones with each value's high byte.
    if (a.has("json")) {
      images.push_back({{"file", file}, {"width", png.width}, {"height", png.height}, {"stored_as", stored_as(png.channels)},
                        {"qa", assets::alpha_check_json(check)}});
      continue;
    }
    std::string line = common::printable(file) + "  " + std::to_string(png.width) + "x" + std::to_string(png.height) + "  " +
                       check.flags_text();
    if (png.channels != 4) line += std::string("  (stored as ") + stored_as(png.channels) + ", checked as RGBA)";
    ctx.out << line << "\n";
    std::string bbox = "none";
    if (check.bbox) {
      const auto& b = *check.bbox;
      bbox = std::to_string(b[0]) + "," + std::to_string(b[1]) + " " + std::to_string(b[2]) + "x" + std::to_string(b[3]);
    }
    ctx.out << "  transparent " << fixed(check.transparent()) << "  opaque " << fixed(check.opaque()) << "  partial "
            << fixed(check.partial()) << "  bbox " << bbox << "  components " << check.components << "  edge "
            << fixed(check.edge()) << "  checker " << fixed(check.checker()) << "\n";
  }
  if (a.has("json")) ctx.out << json({{"images", images}}).dump(2) << "\n";
  return all_read ? 0 : 1;
}

}  // namespace rgbaq::cli
