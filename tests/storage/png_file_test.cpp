#include "storage/png_file.h"

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "storage/render_metadata.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::storage {
namespace {

TEST(PngFile, RoundTripsPixelsAndUtf8Text) {
  TempDir dir;
  const int w = 7, h = 5;
  std::vector<uint8_t> rgba(w * h * 4);
  for (size_t i = 0; i < rgba.size(); ++i) rgba[i] = static_cast<uint8_t>(i * 37 + 11);
  write_png_atomic(dir.path() / "a.png", rgba.data(), w, h, {{"parameters", "一只猫 🐈\nSteps: 8"}, {"k", ""}});
  const auto img = read_png(dir.path() / "a.png");
  EXPECT_EQ(img.width, w);
  EXPECT_EQ(img.height, h);
  EXPECT_EQ(img.channels, 4);
  EXPECT_EQ(img.rgba, rgba);
  EXPECT_EQ(img.texts.at("parameters"), "一只猫 🐈\nSteps: 8");
  // No temporary file is left next to it.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1);
}

TEST(PngFile, ErrorsNameThePath) {
  TempDir dir;
  std::ofstream(dir.path() / "junk.png") << "not a png at all";
  try {
    read_png(dir.path() / "junk.png");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("junk.png: not a PNG file"), std::string::npos) << e.what();
  }
  // A truncated PNG.
  std::vector<uint8_t> rgba(64 * 64 * 4, 200);
  for (size_t i = 0; i < rgba.size(); ++i) rgba[i] = static_cast<uint8_t>(i * 7);
  write_png_atomic(dir.path() / "ok.png", rgba.data(), 64, 64, {});
  std::ifstream in(dir.path() / "ok.png", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(dir.path() / "cut.png", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_THROW(read_png(dir.path() / "cut.png"), std::runtime_error);
  EXPECT_THROW(write_png_atomic(dir.path() / "no" / "such" / "dir.png", rgba.data(), 64, 64, {}), std::runtime_error);
}

TEST(RenderMetadata, A1111ParametersAndJobId) {
  RenderMetadata m;
  m.prompt = "a red fox";
  m.seed = 7;
  m.width = 256, m.height = 128;
  m.sigmas = {1, 0.5f, 0};
  m.model_name = "tiny";
  m.job_id = 42;
  EXPECT_EQ(a1111_parameters(m), std::string("a red fox\nSteps: 2, Sampler: Euler, Schedule type: FlowMatch, CFG scale: 1, Seed: 7, "
                                             "Size: 256x128, Model: tiny, Version: rgbaq ") + kRgbaqVersion)
      << "no identity, no Model hash";
  m.model_identity = "0123456789abcdef";
  m.model_path = "/home/someone/models/tiny";
  EXPECT_EQ(a1111_parameters(m), std::string("a red fox\nSteps: 2, Sampler: Euler, Schedule type: FlowMatch, CFG scale: 1, Seed: 7, "
                                             "Size: 256x128, Model hash: 0123456789, Model: tiny, Version: rgbaq ") + kRgbaqVersion);
  // The queue database's record keeps the local path; the PNG's chunks do not.
  EXPECT_EQ(nlohmann::json::parse(metadata_json(m))["model"]["path"], "/home/someone/models/tiny");
  for (const auto& t : png_texts(m)) EXPECT_EQ(t.value.find("/home/someone"), std::string::npos) << t.key;
  PngImage img;
  for (const auto& t : png_texts(m)) img.texts[t.key] = t.value;
  EXPECT_EQ(job_id_of(img), 42);
  img.texts["rgbaq"] = "{broken";
  EXPECT_FALSE(job_id_of(img).has_value());
}

TEST(RenderMetadata, TheWorkerThatRenderedItHostDeviceAndIndex) {
  RenderMetadata m;
  m.prompt = "a red fox";
  const auto bare = nlohmann::json::parse(metadata_json(m));
  EXPECT_FALSE(bare.contains("host") || bare.contains("device") || bare.contains("worker")) << "none recorded: none written";
  m.host = "gpu-box";
  m.device = "cuda:1";
  m.worker = 2;
  for (const auto& text : {metadata_json(m), png_texts(m)[1].value}) {
    const auto j = nlohmann::json::parse(text);
    EXPECT_EQ(j["host"], "gpu-box");
    EXPECT_EQ(j["device"], "cuda:1");
    EXPECT_EQ(j["worker"], 2);
  }
}

}  // namespace
}  // namespace rgbaq::storage
