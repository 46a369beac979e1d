// `rgbaq model check|quantize` through the real binary, on tiny models that make_tiny_model writes in
// both layouts: what check reports, exit 2 naming the file and tensor for a directory rgbaq cannot
// use, and a quantized copy that check reads back as int8.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/run_process.h"
#include "tests/test_temp_dir.h"

namespace rgbaq {
namespace {

using nlohmann::json;

const std::string kRgbaq = RGBAQ_CLI_PATH;
const std::string kMakeTinyModel = RGBAQ_MAKE_TINY_MODEL_PATH;

json component(const json& report, const std::string& role) {
  for (const auto& c : report["components"])
    if (c["role"] == role) return c;
  return {};
}

TEST(ModelCommand, ChecksThePublishedLayoutAndQuantizesIt) {
  TempDir tmp;
  const auto model = (tmp.path() / "published").string(), int8 = (tmp.path() / "int8").string();
  ASSERT_EQ(run_process({kMakeTinyModel, model, "--layout", "published"}).exit_code, 0);
  auto r = run_process({kRgbaq, "model", "check", model, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json report = json::parse(r.out);
  EXPECT_EQ(report["pipeline"], "QwenImage21Pipeline");
  EXPECT_EQ(report["steps"], 8);
  EXPECT_EQ(component(report, "tokenizer")["folder"], "processor");
  EXPECT_EQ(component(report, "text_encoder")["ignored"], 6);
  EXPECT_EQ(component(report, "vae")["ignored"], 19);
  EXPECT_EQ(component(report, "transformer")["dtypes"], (json{{"BF16", 27}}));
  ASSERT_EQ(report["memory"].size(), 6u);  // cpu and cuda at 256, 512, 1024
  EXPECT_EQ(report["memory"][0]["engine"], "cpu");
  EXPECT_LT(report["memory"][0]["total_bytes"].get<uint64_t>(), report["memory"][2]["total_bytes"].get<uint64_t>());

  r = run_process({kRgbaq, "model", "quantize", model, int8, "--components", "transformer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("transformer: 22 Linear weights to int8"), std::string::npos) << r.out;
  r = run_process({kRgbaq, "model", "check", int8, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  report = json::parse(r.out);
  EXPECT_EQ(component(report, "transformer")["int8_linears"], 22);
  EXPECT_EQ(component(report, "transformer")["dtypes"], (json{{"BF16", 5 + 22}, {"I8", 22}}));  // norms + scales
  EXPECT_EQ(component(report, "text_encoder")["int8_linears"], 0);
  r = run_process({kRgbaq, "model", "check", int8});
  EXPECT_NE(r.out.find("22 int8 Linear weights"), std::string::npos) << r.out;
  // An existing destination is not overwritten.
  EXPECT_EQ(run_process({kRgbaq, "model", "quantize", model, int8}).exit_code, 2);
  EXPECT_EQ(run_process({kRgbaq, "model", "quantize", model, int8 + "2", "--components", "vae"}).exit_code, 2);
}

TEST(ModelCommand, AnUnusableDirectoryExitsTwoNamingFileAndTensor) {
  TempDir tmp;
  const auto model = (tmp.path() / "m").string();
  ASSERT_EQ(run_process({kMakeTinyModel, model}).exit_code, 0);
  // Swap the transformer's weights for the text encoder's second shard: its tensors are all "missing".
  std::filesystem::remove(tmp.path() / "m" / "transformer" / "diffusion_pytorch_model.safetensors");
  std::filesystem::copy_file(tmp.path() / "m" / "text_encoder" / "model-00002-of-00002.safetensors",
                             tmp.path() / "m" / "transformer" / "diffusion_pytorch_model.safetensors");
  auto r = run_process({kRgbaq, "model", "check", model});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("transformer: tensor \"img_in.weight\" is missing"), std::string::npos) << r.err;
  r = run_process({kRgbaq, "model", "check", model, "--json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(json::parse(r.out)["usable"], false);
  EXPECT_EQ(run_process({kRgbaq, "model", "check", (tmp.path() / "nothing").string()}).exit_code, 2);
  EXPECT_EQ(run_process({kRgbaq, "model", "frobnicate"}).exit_code, 2);
}

}  // namespace
}  // namespace rgbaq
