// The atlas as PixiJS reads it (tests/oracle/atlas_check.mjs: npm pixi.js in Debian's chromium, driven by
// playwright-core, the files served by a local server): an export of nine trimmed, padded sprites onto
// pages of at most 96 px, so that the atlas is a multipack; PixiJS loads every page from items.json
// (meta.related_multi_packs), and each frame it draws, in a target of its source's size, is its trimmed
// image at its trim rectangle and nothing elsewhere: the trimmed PNG the export wrote, premultiplied as
// a WebGL target holds it (exact where alpha is 0 or 255; within 1 where the GPU's premultiply rounds).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "assets/asset_export.h"
#include "common/trusted_folder.h"
#include "storage/png_file.h"
#include "tests/daemon/http_client.h"

namespace rgbaq::assets {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const fs::path kOracle = fs::path(RGBAQ_SOURCE_DIR_PATH) / "tests/oracle";

std::vector<uint8_t> base64_decode(const std::string& text) {
  static const std::string table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> out;
  uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    const auto at = table.find(c);
    if (at == std::string::npos) continue;  // '=' padding
    bits = (bits << 6) | uint32_t(at);
    if ((count += 6) >= 8) {
      count -= 8;
      out.push_back(uint8_t(bits >> count));
    }
  }
  return out;
}

// Sprite i: a w x h image, transparent except an ellipse of colour `i` with a soft (partial alpha)
// edge, placed off-centre so that trimming moves it.
RgbaImage sprite(int i) {
  const int w = 40 + 7 * i, h = 70 - 4 * i;
  RgbaImage im(w, h);
  const double cx = w * (0.3 + 0.04 * i), cy = h * 0.55, rx = w * 0.25, ry = h * 0.3;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const double d = std::hypot((x + 0.5 - cx) / rx, (y + 0.5 - cy) / ry);
      uint8_t* p = im.pixel(x, y);
      p[0] = uint8_t(40 * i), p[1] = uint8_t(255 - 25 * i), p[2] = uint8_t(x * 5), p[3] = d < 0.9 ? 255 : d < 1.1 ? uint8_t((1.1 - d) * 1270) : 0;
    }
  }
  return im;
}

TEST(AtlasInBrowser, PixiJsDrawsEveryFrameAsItsTrimmedImage) {
  ASSERT_TRUE(fs::exists(kOracle / "node_modules/pixi.js")) << "pixi.js is not installed: run scripts/setup";
  ASSERT_TRUE(fs::exists(kOracle / "node_modules/playwright-core")) << "playwright-core is not installed: run scripts/setup";
  ASSERT_TRUE(fs::exists("/usr/bin/chromium")) << "Debian's chromium is not installed: run scripts/setup";
  TempDir tmp;
  std::vector<AssetSource> sources;
  for (int i = 0; i < 9; ++i) {
    const RgbaImage image = sprite(i);
    sources.push_back({i + 1, "sprite " + std::to_string(i), uint64_t(i), "/out/sprite_" + std::to_string(i) + ".png", [image] { return image; }});
  }
  AssetExportOptions o;
  o.trim = true;
  o.pad = 1;
  o.atlas = "items";
  o.atlas_max = 96;
  json manifest;
  {
    ExportFolder folder(common::resolve_folder(tmp.path() / "game"), 0755, 0644);
    manifest = export_assets(sources, o, folder, json::object());
  }
  const size_t pages = manifest["atlas"]["pages"].size();
  ASSERT_GE(pages, 2u) << "a multipack: " << manifest["atlas"];

  const auto r = run_process({"/usr/bin/env", "node", (kOracle / "atlas_check.mjs").string(), (tmp.path() / "game").string(), "items.json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json seen = json::parse(r.out);
  EXPECT_EQ(seen["console_errors"], json::array());
  EXPECT_EQ(seen["foreign_requests"], json::array());
  std::printf("PixiJS (%s renderer) read %zu pages: %s\n", seen["renderer"].get<std::string>().c_str(), seen["sheets"].size(),
              seen["sheets"].dump().c_str());
  ASSERT_EQ(seen["sheets"].size(), pages) << "every page, through related_multi_packs";
  ASSERT_EQ(seen["frames"].size(), manifest["images"].size());
  int partial = 0;
  for (const auto& image : manifest["images"]) {
    const std::string name = image["files"][0]["file"];
    ASSERT_TRUE(seen["frames"].contains(name)) << name;
    const json& frame = seen["frames"][name];
    const json& trim = image["trim"];
    const int width = image["source"]["width"], height = image["source"]["height"];
    ASSERT_EQ(frame["width"], width) << name;
    ASSERT_EQ(frame["height"], height) << name;
    EXPECT_EQ(frame["trim"], json({trim["x"], trim["y"], trim["w"], trim["h"]})) << name;
    const auto drawn = base64_decode(frame["pixels"].get<std::string>());
    ASSERT_EQ(drawn.size(), size_t(width) * height * 4) << name;
    const auto own = storage::read_png(tmp.path() / "game" / name);  // the trimmed image, padded by 1
    const int tx = trim["x"], ty = trim["y"], tw = trim["w"], th = trim["h"];
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const uint8_t* got = &drawn[(size_t(y) * width + x) * 4];
        uint8_t want[4] = {0, 0, 0, 0};
        if (x >= tx && x < tx + tw && y >= ty && y < ty + th) {
          const uint8_t* p = &own.rgba[(size_t(y - ty + 1) * own.width + size_t(x - tx + 1)) * 4];
          for (int c = 0; c < 3; ++c) want[c] = uint8_t(std::lround(p[c] * p[3] / 255.0));
          want[3] = p[3];
        }
        const int slack = want[3] == 0 || want[3] == 255 ? 0 : 1;
        partial += slack;
        for (int c = 0; c < 4; ++c) {
          ASSERT_LE(std::abs(int(got[c]) - int(want[c])), slack) << name << " channel " << c << " at " << x << "," << y << ": drew "
                                                                 << int(got[c]) << ", the trimmed image has " << int(want[c]);
        }
      }
    }
  }
  EXPECT_GT(partial, 100) << "the sprites' soft edges were compared too";
}

// The gallery's "export assets to…" on two selected images: the daemon writes them (trimmed, at one size,
// in an atlas) under its user's home folder, the default --copy-root, and the toast says so.
TEST(AtlasInBrowser, TheGalleryExportsASelectionAsAssets) {
  ASSERT_TRUE(fs::exists(kOracle / "node_modules/playwright-core")) << "playwright-core is not installed: run scripts/setup";
  TempDir dir;
  const fs::path home = dir.path() / "home";
  fs::create_directories(home);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = with_http(), .env = {{"HOME", home.string()}}});
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "a red fox", "--seeds", "1-3", "--size", "128", "--out", (dir.path() / "out").string(), "--wait"})
                .exit_code,
            0);
  const auto r = run_process({"/usr/bin/env", "node", (kOracle / "gallery_assets_check.mjs").string(), "http://127.0.0.1:" + std::to_string(http_port(d)),
                              http_token(d), "1", "~/game", "--trim --sizes 32 --atlas items", "1", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << log_tail(d);
  const json seen = json::parse(r.out);
  EXPECT_EQ(seen["console_errors"], json::array());
  EXPECT_EQ(seen["foreign_requests"], json::array());
  ASSERT_EQ(seen["prompts"].size(), 2u) << seen;
  EXPECT_NE(seen["toast"].get<std::string>().find("2 exported (6 files) to " + (home / "game").string()), std::string::npos) << seen["toast"];
  const json manifest = json::parse(read_text(home / "game/manifest.json"));
  std::set<int64_t> exported;
  for (const auto& image : manifest["images"]) exported.insert(image["job"].get<int64_t>());
  EXPECT_EQ(exported, (std::set<int64_t>{1, 3}));
  EXPECT_EQ(manifest["options"]["sizes"], json({32}));
  EXPECT_EQ(manifest["options"]["trim"], true);
  EXPECT_TRUE(fs::is_regular_file(home / "game/items.json"));
}

}  // namespace
}  // namespace rgbaq::assets
