// `rgbaqd render` through the real binary on the tiny model: a PNG that reads back with its size, four
// channels and metadata; and the errors a user can make, with exit code 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/backend_registry.h"
#include "engine/model/model_identity.h"
#include "storage/png_file.h"
#include "tests/engine/tiny_model_fixture.h"
#include "tests/run_process.h"

namespace rgbaq {
namespace {

const std::string kRgbaqd = RGBAQD_PATH;

TEST(RenderCommand, WritesAnRgbaPngWithItsParameters) {
  const TinyModel model;
  const auto out = model.dir().parent_path() / "fox.png";
  const auto r = run_process({kRgbaqd, "render", "--model", model.dir().string(), "--prompt", "a red fox, 狐",
                              "--seed", "18446744073709551615", "--size", "192x128", "-o", out.string(), "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto png = storage::read_png(out);
  EXPECT_EQ(png.width, 192);
  EXPECT_EQ(png.height, 128);
  EXPECT_EQ(png.channels, 4);
  const std::string& params = png.texts.at("parameters");
  EXPECT_EQ(params.rfind("a red fox, 狐\nSteps: 8, Sampler: Euler", 0), 0u) << params;
  // A1111's "Model hash": the first 10 hex digits of the model identity, computed here from the directory.
  const std::string hash = engine::model_identity(model.dir()).substr(0, 10);
  EXPECT_NE(params.find("Seed: 18446744073709551615, Size: 192x128, Model hash: " + hash + ", Model: model, Version: rgbaq "),
            std::string::npos) << params;
  // A shared image names the model and its hash, never where it lies on this machine.
  const std::string model_dir = std::filesystem::absolute(model.dir()).lexically_normal().string();
  for (const auto& [key, text] : png.texts) EXPECT_EQ(text.find(model_dir), std::string::npos) << key << ": " << text;
  const auto meta = nlohmann::json::parse(png.texts.at("rgbaq"));
  EXPECT_EQ(meta["model"]["name"], "model");
  EXPECT_EQ(meta["model"]["identity"], engine::model_identity(model.dir()));
  EXPECT_FALSE(meta["model"].contains("path")) << meta["model"].dump();
  EXPECT_EQ(meta["seed"].get<uint64_t>(), 18446744073709551615ull);
  EXPECT_EQ(meta["sigmas"].size(), 9u);
  EXPECT_EQ(meta["backend"], "cpu");
  EXPECT_EQ(meta["precision"], "fp32");
  EXPECT_EQ(meta["timings"]["steps_s"].size(), 8u);
  EXPECT_TRUE(meta["job_id"].is_null());
  // The same command again gives the same pixels.
  const auto again = model.dir().parent_path() / "again.png";
  ASSERT_EQ(run_process({kRgbaqd, "render", "--model", model.dir().string(), "--prompt", "a red fox, 狐", "--seed",
                         "18446744073709551615", "--size", "192x128", "-o", again.string(), "--threads", "1"})
                .exit_code,
            0);
  EXPECT_EQ(storage::read_png(again).rgba, png.rgba);
}

TEST(RenderCommand, BadInputExitsTwoWithAClearMessage) {
  const TinyModel model;
  const std::string m = model.dir().string(), out = (model.dir().parent_path() / "x.png").string();
  std::string long_prompt;
  for (int i = 0; i < 600; ++i) long_prompt += " word";
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {{"--model", "/nonexistent/model", "--prompt", "x", "-o", out}, "/nonexistent/model: no such model directory"},
      {{"--model", m, "--prompt", "x", "--size", "250", "-o", out}, "width 250 px is not a positive multiple of 16"},
      {{"--model", m, "--prompt", "x", "--size", "2048", "-o", out}, "16384 image tokens"},
      {{"--model", m, "--prompt", long_prompt, "-o", out}, "the encoder takes at most 512"},
      {{"--model", m, "--prompt", "x"}, "--output is required"},
      {{"--model", m, "--prompt", "x", "-o", out, "--engine", "metal"}, "engine \"metal\" is not one of auto, cpu"},
      {{"--model", m, "--prompt", "x", "-o", out, "--precision", "fp16"}, "--precision: precision \"fp16\""},
      {{"--model", m, "--prompt", "x", "-o", out, "--seed", "abc"}, "--seed \"abc\""},
      {{"--model", m, "--prompt", "x", "-o", out, "--engine", "cpu", "--random-weights", "7"},
       "random weights are the cuda engine's (speed measurements on a hollow model); engine \"cpu\" reads the model's own"},
      {{"--model", m, "--prompt", "x", "-o", out, "--random-weights", "-1"}, "--random-weights \"-1\""},
      {{"--model", m, "--prompt", "x", "-o", out, "--engine", "cpu", "--precision", "fp8"},
       "precision fp8 is the cuda engine's (FP8 tensor cores, sm_89 and later); engine \"cpu\" computes in fp32"},
      {{"--model", m, "--prompt", "x", "-o", out, "--gpu-int8", "halve"}, "--gpu-int8: \"halve\" is not one of widen, keep"},
      {{"--model", m, "--prompt", "x", "-o", out, "--vae-tiles", "maybe"}, "--vae-tiles: \"maybe\" is not one of on, off"},
      {{"--model", m, "--prompt", "x", "-o", out, "--attention", "flash"}, "--attention: \"flash\" is not one of gemm, fused"},
      {{"--model", m, "--prompt", "x", "-o", out, "--fused-blocks", "1"}, "--fused-blocks: \"1\" is not one of on, off"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {kRgbaqd, "render"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto r = run_process(argv);
    EXPECT_EQ(r.exit_code, 2) << c.fragment << "\n" << r.err;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(RenderCommand, UnwritableOutputIsAFailure) {
  const TinyModel model;
  const auto r = run_process({kRgbaqd, "render", "--model", model.dir().string(), "--prompt", "x", "--size", "128",
                              "-o", "/nonexistent/dir/out.png"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/dir/out.png"), std::string::npos) << r.err;
}

TEST(RenderCommand, EngineCudaWithoutADeviceExitsTwoSayingSo) {
  engine::EngineOptions cuda;
  cuda.backend = "cuda";
  try {
    engine::resolve_backend(cuda);
    GTEST_SKIP() << "a CUDA device is visible here";
  } catch (const engine::BackendUnavailable&) {
  }
  const TinyModel model;
  const auto out = model.dir().parent_path() / "x.png";
  const auto r = run_process({kRgbaqd, "render", "--model", model.dir().string(), "--prompt", "x", "-o", out.string(),
                              "--engine", "cuda"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("engine \"cuda\""), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.find("no CUDA device") != std::string::npos || r.err.find("not in this build") != std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace rgbaq
