// The whole export stage (assets/asset_export.h) in a temporary folder: files read back with libpng and
// libwebp's decoder, compared with crops and paddings worked out here from the source pixels; the
// manifest against the hand-worked trim rectangles; re-runs that overwrite and remove only the
// export's own files; a file in the way, an atlas page smaller than an image and bad options that stop
// the export before it writes anything; atlas pages whose frames hold the trimmed images.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <webp/decode.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "assets/asset_export.h"
#include "assets/premultiply.h"
#include "common/sha256.h"
#include "common/trusted_folder.h"
#include "storage/png_file.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::assets {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A w x h sprite: transparent (with a loud colour under alpha 0) except an opaque block at `box`, a
// soft pixel (alpha 100) at its top-left corner and a pixel of alpha 8 (not content) outside it.
RgbaImage sprite(int w, int h, PixelRect box, uint8_t tint) {
  RgbaImage im(w, h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = im.pixel(x, y);
      const bool in = x >= box.x && x < box.x + box.w && y >= box.y && y < box.y + box.h;
      p[0] = in ? tint : 0, p[1] = in ? uint8_t(x * 7) : 255, p[2] = in ? uint8_t(y * 5) : 0, p[3] = in ? 255 : 0;
    }
  }
  im.pixel(box.x, box.y)[3] = 100;
  im.pixel(0, h - 1)[3] = 8;
  return im;
}

AssetSource source(int64_t job, const std::string& file, RgbaImage image) {
  return {job, "prompt of job " + std::to_string(job), uint64_t(job * 10), file, [image] { return image; }};
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

struct Exported {
  json manifest;
  fs::path dir;
};

Exported run_export(const fs::path& dir, const std::vector<AssetSource>& sources, const AssetExportOptions& o) {
  ExportFolder folder(common::resolve_folder(dir), 0755, 0644);
  json manifest = export_assets(sources, o, folder, {{"run", 1}});
  return {manifest, folder.path()};
}

// `image`'s `rect` inside `pad` transparent pixels, worked out pixel by pixel.
RgbaImage expected_export(const RgbaImage& image, PixelRect rect, int pad) {
  RgbaImage out(rect.w + 2 * pad, rect.h + 2 * pad);
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      const int sx = rect.x + x - pad, sy = rect.y + y - pad;
      if (x < pad || y < pad || x >= pad + rect.w || y >= pad + rect.h) continue;
      for (int c = 0; c < 4; ++c) out.pixel(x, y)[c] = image.pixel(sx, sy)[c];
    }
  }
  return out;
}

TEST(AssetExport, TrimmedPaddedSizedFilesAndTheirManifest) {
  TempDir tmp;
  const RgbaImage a = sprite(64, 48, {10, 6, 30, 20}, 200), b = sprite(40, 90, {0, 30, 40, 60}, 90);
  std::vector<AssetSource> sources = {source(3, "/out/fox_1.png", a), source(4, "/out/owl_2.png", b),
                                      source(5, "/out/empty_3.png", RgbaImage(16, 16))};
  sources.push_back({6, "p", 1, "/out/gone_4.png", []() -> RgbaImage { throw std::runtime_error("gone_4.png: No such file or directory"); }});
  AssetExportOptions o;
  o.trim = true;
  o.pad = 2;
  o.sizes = {16, 40};
  const auto e = run_export(tmp.path() / "game", sources, o);
  EXPECT_EQ(listing(tmp.path() / "game"), (std::set<std::string>{"fox_1.png", "fox_1_16px.png", "fox_1_40px.png", "owl_2.png",
                                                                  "owl_2_16px.png", "owl_2_40px.png", "manifest.json"}));
  // The bboxes by hand: fox's block 30 x 20 at (10, 6); owl's 40 x 60 at (0, 30).
  const std::map<std::string, std::pair<const RgbaImage*, PixelRect>> want = {{"fox_1", {&a, {10, 6, 30, 20}}},
                                                                                {"owl_2", {&b, {0, 30, 40, 60}}}};
  const json manifest = json::parse(slurp(tmp.path() / "game/manifest.json"));
  EXPECT_EQ(manifest, e.manifest);
  ASSERT_EQ(manifest["images"].size(), 2u);
  for (const auto& image : manifest["images"]) {
    const std::string base = fs::path(image["source"]["file"].get<std::string>()).stem().string();
    const auto& [pixels, rect] = want.at(base);
    EXPECT_EQ(image["trim"], json({{"x", rect.x}, {"y", rect.y}, {"w", rect.w}, {"h", rect.h}})) << base;
    EXPECT_EQ(image["pad"], 2);
    EXPECT_EQ(image["source"]["width"], pixels->width);
    EXPECT_EQ(image["prompt"], "prompt of job " + std::to_string(image["job"].get<int>()));
    EXPECT_EQ(image["seed"], image["job"].get<int>() * 10);
    ASSERT_EQ(image["files"].size(), 3u);
    // The trimmed image, padded: pixel for pixel.
    const auto full = storage::read_png(tmp.path() / "game" / (base + ".png"));
    const RgbaImage expected = expected_export(*pixels, rect, 2);
    ASSERT_EQ(full.width, expected.width);
    ASSERT_EQ(full.height, expected.height);
    EXPECT_TRUE(full.rgba == expected.rgba) << base;
    for (const auto& f : image["files"]) {
      const fs::path file = tmp.path() / "game" / f["file"].get<std::string>();
      const std::string bytes = slurp(file);
      EXPECT_EQ(f["bytes"], bytes.size());
      EXPECT_EQ(f["sha256"], common::sha256_hex(bytes.data(), bytes.size()));
      const auto png = storage::read_png(file);
      EXPECT_EQ(f["width"], png.width);
      EXPECT_EQ(f["height"], png.height);
      if (f.contains("size")) {  // the longer side at the size, the pad kept at 2 transparent pixels
        const int size = f["size"];
        EXPECT_EQ(std::max(png.width, png.height), size) << file;
        for (int x = 0; x < png.width; ++x) {
          EXPECT_EQ(png.rgba[size_t(x) * 4 + 3], 0);
          EXPECT_EQ(png.rgba[(size_t(png.height - 2) * png.width + x) * 4 + 3], 0);
        }
      }
    }
  }
  // fox: 30 x 20 content; at 16 the content's longer side is 12 -> 12 x 8, padded 16 x 12.
  const auto fox16 = storage::read_png(tmp.path() / "game/fox_1_16px.png");
  EXPECT_EQ(fox16.width, 16);
  EXPECT_EQ(fox16.height, 12);
  ASSERT_EQ(manifest["skipped"].size(), 2u);
  EXPECT_EQ(manifest["skipped"][0]["job"], 5);
  EXPECT_NE(manifest["skipped"][0]["reason"].get<std::string>().find("alpha above 8"), std::string::npos);
  EXPECT_EQ(manifest["skipped"][1]["job"], 6);
  EXPECT_NE(manifest["skipped"][1]["reason"].get<std::string>().find("No such file"), std::string::npos);
  // The manifest lists every file it wrote (not itself), which is what a re-run may overwrite.
  std::set<std::string> listed;
  for (const auto& f : manifest["files"]) listed.insert(f["file"].get<std::string>());
  auto on_disk = listing(tmp.path() / "game");
  on_disk.erase("manifest.json");
  EXPECT_EQ(listed, on_disk);
}

TEST(AssetExport, NamesThatWouldMeetAreMadeDistinct) {
  // Two sources named alike (from two folders), and one named like another's sized file.
  TempDir tmp;
  const RgbaImage im = sprite(20, 20, {2, 2, 8, 8}, 7);
  AssetExportOptions o;
  o.sizes = {16};
  const auto e = run_export(tmp.path() / "game", {source(1, "/a/fox.png", im), source(2, "/b/fox.png", im), source(3, "/a/fox_16px.png", im)}, o);
  EXPECT_EQ(listing(tmp.path() / "game"), (std::set<std::string>{"fox.png", "fox_16px.png", "fox_job2.png", "fox_job2_16px.png",
                                                                  "fox_16px_job3.png", "fox_16px_job3_16px.png", "manifest.json"}));
  EXPECT_EQ(e.manifest["files"].size(), 6u);
}

TEST(AssetExport, PremultipliedAndWebpAreTheStraightPngsPixels) {
  TempDir tmp;
  RgbaImage soft(20, 20);
  for (int y = 0; y < 20; ++y) {
    for (int x = 0; x < 20; ++x) {
      uint8_t* p = soft.pixel(x, y);
      p[0] = uint8_t(x * 13), p[1] = uint8_t(y * 11), p[2] = uint8_t(255 - x * 3), p[3] = uint8_t((x * 20 + y * 7) % 256);
    }
  }
  const std::vector<AssetSource> sources = {source(1, "/o/soft_1.png", soft)};
  AssetExportOptions o;
  o.sizes = {12};
  run_export(tmp.path() / "straight", sources, o);
  o.premultiplied = true;
  run_export(tmp.path() / "pre", sources, o);
  o.premultiplied = false;
  o.format = AssetFormat::kWebp;
  const auto webp = run_export(tmp.path() / "webp", sources, o);
  EXPECT_EQ(listing(tmp.path() / "webp"), (std::set<std::string>{"soft_1.webp", "soft_1_12px.webp", "manifest.json"}));
  EXPECT_EQ(webp.manifest["options"]["format"], "webp");
  for (const std::string name : {"soft_1", "soft_1_12px"}) {
    const auto straight = storage::read_png(tmp.path() / "straight" / (name + ".png"));
    const auto pre = storage::read_png(tmp.path() / "pre" / (name + ".png"));
    ASSERT_EQ(straight.rgba.size(), pre.rgba.size());
    for (size_t i = 0; i < straight.rgba.size(); i += 4) {
      const int a = straight.rgba[i + 3];
      for (size_t c = 0; c < 3; ++c) ASSERT_EQ(pre.rgba[i + c], std::lround(straight.rgba[i + c] * a / 255.0)) << name << " at " << i / 4;
      ASSERT_EQ(pre.rgba[i + 3], a);
    }
    const std::string bytes = slurp(tmp.path() / "webp" / (name + ".webp"));
    int w = 0, h = 0;
    uint8_t* decoded = WebPDecodeRGBA(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &w, &h);
    ASSERT_NE(decoded, nullptr) << name;
    const std::vector<uint8_t> pixels(decoded, decoded + size_t(w) * size_t(h) * 4);
    WebPFree(decoded);
    EXPECT_EQ(w, straight.width);
    EXPECT_EQ(h, straight.height);
    EXPECT_TRUE(pixels == straight.rgba) << name << ": lossless, with the colour under alpha 0 kept";
  }
  // The straight export of the whole image is the source as it was: nothing trimmed, nothing padded.
  EXPECT_TRUE(storage::read_png(tmp.path() / "straight/soft_1.png").rgba == soft.rgba);
}

TEST(AssetExport, AReRunOverwritesAndRemovesOnlyItsOwnFiles) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "game";
  std::vector<AssetSource> sources = {source(1, "/o/a_1.png", sprite(30, 30, {5, 5, 10, 10}, 1)),
                                      source(2, "/o/b_2.png", sprite(30, 30, {0, 0, 30, 12}, 2))};
  AssetExportOptions o;
  o.trim = true;
  o.sizes = {8, 16};
  run_export(dir, sources, o);
  std::ofstream(dir / "notes.txt") << "mine";
  std::ofstream(dir / "c_3.png") << "not a png, the user's";
  // Again with one size fewer: the 16 px files (this export's, unchanged) go; the user's files stay.
  o.sizes = {8};
  run_export(dir, sources, o);
  EXPECT_EQ(listing(dir), (std::set<std::string>{"a_1.png", "a_1_8px.png", "b_2.png", "b_2_8px.png", "manifest.json", "notes.txt", "c_3.png"}));
  EXPECT_EQ(slurp(dir / "c_3.png"), "not a png, the user's");

  // A source whose files would replace the user's c_3.png: refused, and nothing changes.
  sources.push_back(source(3, "/o/c_3.png", sprite(30, 30, {1, 1, 3, 3}, 3)));
  const auto before = listing(dir);
  const std::string manifest_before = slurp(dir / "manifest.json");
  try {
    run_export(dir, sources, o);
    FAIL() << "no error";
  } catch (const ExportFolderError& e) {
    EXPECT_NE(std::string(e.what()).find("c_3.png is already there and this export did not write it"), std::string::npos) << e.what();
  }
  EXPECT_EQ(listing(dir), before);
  EXPECT_EQ(slurp(dir / "manifest.json"), manifest_before);
  EXPECT_EQ(slurp(dir / "c_3.png"), "not a png, the user's");
  sources.pop_back();

  // A file of the export that the user changed since is no longer the export's to overwrite.
  std::ofstream(dir / "a_1_8px.png", std::ios::trunc) << "edited";
  try {
    run_export(dir, sources, o);
    FAIL() << "no error";
  } catch (const ExportFolderError& e) {
    EXPECT_NE(std::string(e.what()).find("(it changed since)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(dir / "a_1_8px.png"), "edited");
  fs::remove(dir / "a_1_8px.png");
  run_export(dir, sources, o);  // the name is free again
  EXPECT_EQ(storage::read_png(dir / "a_1_8px.png").width, 8);

  // A manifest.json that is not an export's: the folder is someone else's.
  const fs::path other = tmp.path() / "other";
  fs::create_directories(other);
  std::ofstream(other / "manifest.json") << R"({"name": "my web app"})";
  EXPECT_THROW(run_export(other, sources, o), ExportFolderError);
  EXPECT_EQ(listing(other), (std::set<std::string>{"manifest.json"}));
  // A manifest that lists a file outside its folder (edited, or planted by the user's own tools) takes
  // nothing there: the previous export's "own files" are names in the folder only.
  const fs::path planted = tmp.path() / "planted";
  fs::create_directories(planted);
  std::ofstream(tmp.path() / "victim.png") << "keep me";
  const json forged = {{"rgbaq_asset_export", 1},
                       {"files", {{{"file", "../victim.png"}, {"sha256", common::sha256_hex("keep me", 7)}},
                                  {{"file", "/etc/hostname"}, {"sha256", "0"}}}}};
  std::ofstream(planted / "manifest.json") << forged.dump();
  run_export(planted, sources, o);
  EXPECT_EQ(slurp(tmp.path() / "victim.png"), "keep me");
  // No temporary is left behind by a refused export.
  for (const auto& name : listing(dir)) EXPECT_EQ(name.find(".rgbaq-"), std::string::npos) << name;
}

// Every frame of every page holds its trimmed image (the interior of the image's own file), with
// `pad` transparent pixels around it; the JSON Hash fields say where it came from.
void expect_atlas(const fs::path& dir, const json& manifest, const std::string& name, int pages) {
  ASSERT_EQ(manifest["atlas"]["pages"].size(), size_t(pages)) << manifest["atlas"];
  const int pad = manifest["options"]["pad"];
  std::set<std::string> frames_seen;
  for (int p = 0; p < pages; ++p) {
    const std::string json_name = p == 0 ? name + ".json" : name + "-" + std::to_string(p) + ".json";
    const std::string image_name = pages == 1 ? name + ".png" : name + "-" + std::to_string(p) + ".png";
    const json page = json::parse(slurp(dir / json_name));
    EXPECT_EQ(page["meta"]["image"], image_name);
    EXPECT_EQ(page["meta"]["format"], "RGBA8888");
    EXPECT_EQ(page["meta"]["scale"], "1");
    const auto sheet = storage::read_png(dir / image_name);
    EXPECT_EQ(page["meta"]["size"], json({{"w", sheet.width}, {"h", sheet.height}}));
    if (pages == 1) {
      EXPECT_FALSE(page["meta"].contains("related_multi_packs"));
    } else {
      std::set<std::string> related, want;
      for (const auto& r : page["meta"]["related_multi_packs"]) related.insert(r.get<std::string>());
      for (int q = 0; q < pages; ++q) {
        if (q != p) want.insert(q == 0 ? name + ".json" : name + "-" + std::to_string(q) + ".json");
      }
      EXPECT_EQ(related, want);
    }
    for (const auto& [frame_name, f] : page["frames"].items()) {
      frames_seen.insert(frame_name);
      EXPECT_EQ(f["rotated"], false);
      const auto own = storage::read_png(dir / frame_name);  // the trimmed, padded image
      const int x0 = f["frame"]["x"], y0 = f["frame"]["y"], w = f["frame"]["w"], h = f["frame"]["h"];
      ASSERT_EQ(w + 2 * pad, own.width) << frame_name;
      ASSERT_EQ(h + 2 * pad, own.height) << frame_name;
      EXPECT_EQ(f["spriteSourceSize"]["w"], w);
      EXPECT_EQ(f["spriteSourceSize"]["h"], h);
      for (int y = -pad; y < h + pad; ++y) {
        for (int x = -pad; x < w + pad; ++x) {
          const uint8_t* got = &sheet.rgba[(size_t(y0 + y) * sheet.width + size_t(x0 + x)) * 4];
          const uint8_t* want = &own.rgba[(size_t(y + pad) * own.width + size_t(x + pad)) * 4];
          for (int c = 0; c < 4; ++c) ASSERT_EQ(got[c], want[c]) << frame_name << " at " << x << "," << y;
        }
      }
      for (const auto& image : manifest["images"]) {
        if (image["files"][0]["file"] != frame_name) continue;
        EXPECT_EQ(f["spriteSourceSize"], image["trim"]);
        EXPECT_EQ(f["sourceSize"], json({{"w", image["source"]["width"]}, {"h", image["source"]["height"]}}));
        EXPECT_EQ(f["trimmed"], image["trim"] != json({{"x", 0}, {"y", 0}, {"w", image["source"]["width"]}, {"h", image["source"]["height"]}}));
        EXPECT_EQ(image["atlas"]["page"], p);
      }
    }
  }
  EXPECT_EQ(frames_seen.size(), manifest["images"].size());
}

TEST(AssetExport, AtlasPagesHoldEveryTrimmedImageAtItsFrame) {
  TempDir tmp;
  std::vector<AssetSource> sources;
  for (int i = 0; i < 7; ++i) {
    sources.push_back(source(i + 1, "/o/s_" + std::to_string(i) + ".png", sprite(48, 40, {i, 2 * i, 20 + 3 * i, 30 - 2 * i}, uint8_t(30 * i))));
  }
  AssetExportOptions o;
  o.trim = true;
  o.pad = 1;
  o.atlas = "items";
  const auto one = run_export(tmp.path() / "one", sources, o);
  expect_atlas(tmp.path() / "one", one.manifest, "items", 1);
  o.atlas_max = 64;  // about two images a page
  const auto many = run_export(tmp.path() / "many", sources, o);
  const int pages = int(many.manifest["atlas"]["pages"].size());
  EXPECT_GE(pages, 3);
  expect_atlas(tmp.path() / "many", many.manifest, "items", pages);
  // Untrimmed: frames are whole images, "trimmed" false.
  o.trim = false;
  o.atlas_max = 4096;
  const auto whole = run_export(tmp.path() / "whole", sources, o);
  expect_atlas(tmp.path() / "whole", whole.manifest, "items", 1);
}

TEST(AssetExport, AnAtlasPageSmallerThanAnImageWritesNothing) {
  TempDir tmp;
  const std::vector<AssetSource> sources = {source(1, "/o/a_1.png", sprite(64, 64, {0, 0, 50, 20}, 1)),
                                            source(2, "/o/b_2.png", sprite(64, 64, {0, 0, 60, 60}, 2))};
  AssetExportOptions o;
  o.trim = true;
  o.pad = 1;
  o.atlas = "items";
  o.atlas_max = 61;  // b is 60 x 60, 62 x 62 padded
  try {
    run_export(tmp.path() / "new" / "game", sources, o);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--atlas-max 61 is smaller than job 2's image (62x62"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp.path() / "new")) << "the folders it made are gone again";
  const fs::path kept = tmp.path() / "kept";
  fs::create_directories(kept);
  EXPECT_THROW(run_export(kept, sources, o), std::invalid_argument);
  EXPECT_TRUE(listing(kept).empty());
  EXPECT_TRUE(fs::exists(kept));
}

TEST(AssetExport, AFileOrAFolderOthersMayWriteIsNoExportFolder) {
  TempDir tmp;
  std::ofstream(tmp.path() / "file") << "x";
  EXPECT_THROW(ExportFolder(common::resolve_folder(tmp.path() / "file"), 0755, 0644), ExportFolderError);
  // A folder another user may write into: refused before a file is made there.
  fs::create_directories(tmp.path() / "shared");
  fs::permissions(tmp.path() / "shared", fs::perms::all);
  try {
    ExportFolder folder(common::resolve_folder(tmp.path() / "shared"), 0755, 0644);
    FAIL() << "no error";
  } catch (const ExportFolderError& e) {
    EXPECT_NE(std::string(e.what()).find("writable by every user"), std::string::npos) << e.what();
  }
}

// The limits (issue 40 review): 16 sizes, 8192 px a size, 16384 px an atlas page's side, each refused
// before an image is read or a folder made, in the caller's names.
TEST(AssetExport, OptionsPastTheLimitsAreRefusedBeforeAnyWork) {
  TempDir tmp;
  int loads = 0;
  const std::vector<AssetSource> sources = {{1, "p", 10, "/o/a_1.png", [&loads] {
                                               ++loads;
                                               return sprite(16, 16, {2, 2, 8, 8}, 1);
                                             }}};
  const auto refusal = [&](const AssetExportOptions& o, OptionNames names) {
    try {
      ExportFolder folder(common::resolve_folder(tmp.path() / "game"), 0755, 0644);
      export_assets(sources, o, folder, {{"run", 1}}, names);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<int> seventeen;
  for (int i = 1; i <= 17; ++i) seventeen.push_back(16 * i);
  EXPECT_EQ(refusal({.sizes = seventeen}, OptionNames::kCli), "--sizes lists 17 sizes: at most 16");
  EXPECT_EQ(refusal({.sizes = seventeen}, OptionNames::kJson), "\"sizes\" lists 17 sizes: at most 16");
  EXPECT_EQ(refusal({.sizes = {64, 8193}}, OptionNames::kCli), "--sizes 8193: a size is 1 to 8192 pixels");
  EXPECT_EQ(refusal({.sizes = {65535}}, OptionNames::kJson), "\"sizes\" 65535: a size is 1 to 8192 pixels");
  EXPECT_EQ(refusal({.atlas = "items", .atlas_max = 16385}, OptionNames::kCli), "--atlas-max 16385: a page's side is 1 to 16384 pixels");
  EXPECT_EQ(refusal({.atlas = "items", .atlas_max = 65535}, OptionNames::kJson),
            "\"atlas_max\" 65535: a page's side is 1 to 16384 pixels");
  EXPECT_EQ(loads, 0) << "no image was read";
  EXPECT_FALSE(fs::exists(tmp.path() / "game")) << "the folder it made is gone again";
  // At the limits: accepted (checked only, no export of 8192 px images here).
  std::vector<int> sixteen(seventeen.begin(), seventeen.end() - 1);
  EXPECT_NO_THROW(check_asset_export_options({.sizes = sixteen}));
  EXPECT_NO_THROW(check_asset_export_options({.sizes = {8192}, .atlas = "items", .atlas_max = 16384}));
  // Over HTTP the options are read from JSON: the same limit, in the API's names.
  try {
    asset_export_options_from_json({{"sizes", {65535}}});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "\"sizes\" 65535: a size is 1 to 8192 pixels");
  }
}

// An atlas page over 64 Mpx (2^26 = 67,108,864 pixels) made of few pixels: a 1 x 8192 column and an
// 8192 x 1 row. The column goes first (tallest) at 0,0; the row beside it at 1,0; the page is then
// 8193 x 8192 = 67,117,056 pixels, past the limit: refused before the page is drawn, nothing written.
TEST(AssetExport, AnAtlasPageOverTheOutputPixelLimitWritesNothing) {
  TempDir tmp;
  RgbaImage column(1, 8192), row(8192, 1);
  for (RgbaImage* im : {&column, &row}) {
    for (size_t i = 3; i < im->rgba.size(); i += 4) im->rgba[i] = 255;
  }
  const std::vector<AssetSource> sources = {source(1, "/o/column_1.png", column), source(2, "/o/row_2.png", row)};
  try {
    run_export(tmp.path() / "game", sources, {.atlas = "items", .atlas_max = 16384});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--atlas-max 16384: an atlas page would be 8193x8192, over the 64 Mpx an output may have; nothing was written");
  }
  EXPECT_FALSE(fs::exists(tmp.path() / "game"));
}

TEST(AssetExport, OptionsAreCheckedByName) {
  const auto message = [](AssetExportOptions o, OptionNames names = OptionNames::kCli) {
    try {
      check_asset_export_options(o, names);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({.pad = -1}), "--pad -1: the padding is 0 to 1024 pixels");
  EXPECT_EQ(message({.pad = -1}, OptionNames::kJson), "\"pad\" -1: the padding is 0 to 1024 pixels");
  EXPECT_EQ(message({.sizes = {64, 0}}), "--sizes 0: a size is 1 to 8192 pixels");
  EXPECT_EQ(message({.format = AssetFormat::kWebp, .sizes = {20000}}), "--sizes 20000: a size is 1 to 8192 pixels");
  EXPECT_EQ(message({.pad = 2, .sizes = {4}}), "--sizes 4: leaves no room for the image inside 2 pixels of padding on each side");
  EXPECT_EQ(message({.sizes = {64, 64}}), "--sizes 64: given twice");
  EXPECT_NE(message({.atlas = "../x"}).find("--atlas \"../x\": an atlas name is"), std::string::npos);
  EXPECT_EQ(message({.atlas = "manifest"}), "--atlas \"manifest\": manifest.json is the export's own");
  EXPECT_EQ(message({.atlas = "items", .atlas_max = 0}), "--atlas-max 0: a page's side is 1 to 16384 pixels");
  EXPECT_EQ(message({.format = AssetFormat::kWebp, .atlas = "items", .atlas_max = 16384}),
            "--atlas-max 16384: a page's side is 1 to 16383 pixels (webp)");
  EXPECT_EQ(message({.atlas = "items", .atlas_max = 0}, OptionNames::kJson), "\"atlas_max\" 0: a page's side is 1 to 16384 pixels");
  EXPECT_EQ(message({.trim = true, .pad = 3, .sizes = {64, 128}, .atlas = "items-1.v2"}), "no error");

  const AssetExportOptions o = asset_export_options_from_json(
      {{"trim", true}, {"pad", 2}, {"premultiplied", true}, {"format", "webp"}, {"sizes", {64, 128}}, {"atlas", "ui"}, {"atlas_max", 2048}});
  EXPECT_TRUE(o.trim && o.premultiplied);
  EXPECT_EQ(o.pad, 2);
  EXPECT_EQ(o.format, AssetFormat::kWebp);
  EXPECT_EQ(o.sizes, (std::vector<int>{64, 128}));
  EXPECT_EQ(o.atlas, "ui");
  EXPECT_EQ(o.atlas_max, 2048);
  EXPECT_THROW(asset_export_options_from_json({{"pad", "2"}}), std::invalid_argument);
  EXPECT_THROW(asset_export_options_from_json({{"format", "gif"}}), std::invalid_argument);
  EXPECT_THROW(asset_export_options_from_json({{"sizes", {0}}}), std::invalid_argument);
}

}  // namespace
}  // namespace rgbaq::assets
