// `rgbaq model check|quantize` through the real binary, on tiny models that make_tiny_model writes in
// both layouts: what check reports, exit 2 naming the file and tensor for a directory rgbaq cannot
// use, and a quantized copy that check reads back as int8.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/run_process.h"
#include "tests/test_temp_dir.h"

namespace rgbaq {
namespace {

using nlohmann::json;

const std::string kRgbaq = RGBAQ_CLI_PATH;
const std::string kMakeTinyModel = RGBAQ_MAKE_TINY_MODEL_PATH;
const std::string kRgbaqd = RGBAQD_PATH;

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
  // The cuda rows are the session's at the flags given: the int8 DiT widened (the default) or kept.
  const auto cuda_weights = [&](std::vector<std::string> flags) {
    flags.insert(flags.begin(), {kRgbaq, "model", "check", int8, "--json"});
    const auto check = run_process(flags);
    EXPECT_EQ(check.exit_code, 0) << check.err;
    const json j = json::parse(check.out);
    const json& row = j["memory"][3];  // cuda at 256
    EXPECT_EQ(row["engine"], "cuda");
    return std::pair{row["precision"].get<std::string>(), row["weights_bytes"].get<int64_t>()};
  };
  const auto widened = cuda_weights({}), kept = cuda_weights({"--gpu-int8", "keep"});
  EXPECT_EQ(widened.first, "bf16");
  EXPECT_EQ(kept.first, "bf16, int8 kept");
  // The tiny DiT's 22 int8 Linears: 2 x (4 of 256x256, 2 of 768x256, 1 of 256x768) + 2 of 256x64, 4 of
  // 256x256, 1024x256, 64x256 = 2,277,376 values, each 2 bytes widened or 1 byte and a bf16 scale per 32.
  EXPECT_EQ(widened.second - kept.second, int64_t{2277376} - 2277376 / 32 * 2);
  EXPECT_EQ(cuda_weights({"--precision", "fp8"}).first, "fp8");
  // The tiny model's VAE needs no tiles, so --vae-tiles on counts the same; a bad value is refused.
  r = run_process({kRgbaq, "model", "check", int8, "--json", "--vae-tiles", "on"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["memory"][5]["vae_work_bytes"], report["memory"][5]["vae_work_bytes"]);
  // --attention fused: no scores and no fp32 attention output, by hand for the tiny model at 1024 (L
  // 512 + N 4096 keys): the DiT's 2 heads x 4096 x 4608 scores in fp32 and bf16 and 4096 x 256 floats;
  // the encoder's 2 x 512 x 512 and 512 x 64 floats.
  r = run_process({kRgbaq, "model", "check", int8, "--json", "--attention", "fused"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json fused = json::parse(r.out)["memory"][5];
  EXPECT_EQ(fused["precision"], "bf16, fused attention");
  EXPECT_EQ(report["memory"][5]["dit_work_bytes"].get<int64_t>() - fused["dit_work_bytes"].get<int64_t>(),
            int64_t{2} * 4096 * 4608 * 6 + 4096 * 256 * 4);
  EXPECT_EQ(report["memory"][5]["text_encoder_work_bytes"].get<int64_t>() - fused["text_encoder_work_bytes"].get<int64_t>(),
            int64_t{2} * 512 * 512 * 6 + 512 * 64 * 4);
  // --fused-blocks on: the projections buffer (4096 x 256 floats) and the MLP's up (4096 x 768) go, and
  // the gate buffer holds a 1024-row chunk of gate|up (1024 x 2 x 768) where it held 4096 x 768.
  r = run_process({kRgbaq, "model", "check", int8, "--json", "--fused-blocks", "on"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json blocks = json::parse(r.out)["memory"][5];
  EXPECT_EQ(blocks["precision"], "bf16, fused blocks");
  EXPECT_EQ(report["memory"][5]["dit_work_bytes"].get<int64_t>() - blocks["dit_work_bytes"].get<int64_t>(),
            int64_t{4096} * 256 * 4 + 4096 * 768 * 4 + (4096 * 768 - 1024 * 1536) * 4);
  r = run_process({kRgbaq, "model", "check", int8, "--fused-blocks", "yes"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--fused-blocks: \"yes\" is not one of on, off"), std::string::npos) << r.err;
  r = run_process({kRgbaq, "model", "check", int8, "--attention", "flash"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--attention: \"flash\" is not one of gemm, fused"), std::string::npos) << r.err;
  r = run_process({kRgbaq, "model", "check", int8, "--vae-tiles", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--vae-tiles: \"1\" is not one of on, off"), std::string::npos) << r.err;
  r = run_process({kRgbaq, "model", "check", int8, "--precision", "fp4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--precision: precision \"fp4\" is not one of bf16, fp32, fp8"), std::string::npos) << r.err;
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

// A config claiming 2e9 layers took `rgbaq model check` and rgbaqd to 1.45 GiB and bad_alloc (issue 26,
// item 5): each count is held to the blocks the weights hold and each number to a bound before
// anything is built per layer; exit 2 naming the file and the field, in little memory (measured).
TEST(ModelCommand, ConfigNumbersAreHeldToTheBlocksPresentAndToBoundsBeforeAnythingIsBuilt) {
  TempDir tmp;
  const auto model = tmp.path() / "m";
  ASSERT_EQ(run_process({kMakeTinyModel, model.string()}).exit_code, 0);
  const auto edit = [&](const std::string& component, const std::string& field, const json& value) {
    const auto path = model / component / "config.json";
    std::ifstream in(path);
    json config = json::parse(in);
    in.close();
    const json old = config.contains("text_config") ? config["text_config"][field] : config[field];
    (config.contains("text_config") ? config["text_config"][field] : config[field]) = value;
    std::ofstream(path, std::ios::trunc) << config.dump();
    return old;
  };
  struct Case {
    const char* component;
    const char* field;
    json value;
    std::string message;
  };
  const auto dit_config = (model / "transformer" / "config.json").string();
  const auto text_config = (model / "text_encoder" / "config.json").string();
  const std::vector<Case> cases = {
      {"transformer", "num_layers", 2000000000, dit_config + ": field \"num_layers\" is 2000000000; it must be in 1..1024"},
      {"transformer", "num_layers", 3,
       dit_config + ": field \"num_layers\" is 3, but " + (model / "transformer").string() +
           " holds 2 (transformer_blocks.0 to transformer_blocks.1) of its blocks"},
      {"text_encoder", "num_hidden_layers", 2000000000,
       text_config + ": field \"num_hidden_layers\" is 2000000000; it must be in 1..1024"},
      {"text_encoder", "num_hidden_layers", 1000, text_config + ": field \"num_hidden_layers\" is 1000, but "},
      {"text_encoder", "vocab_size", 2000000000, text_config + ": field \"vocab_size\" is 2000000000; it must be in 1..4194304"},
      {"vae", "num_res_blocks", 2000000000,
       (model / "vae" / "config.json").string() + ": field \"num_res_blocks\" is 2000000000; it must be in 1..16"},
  };
  for (const Case& c : cases) {
    const json old = edit(c.component, c.field, c.value);
    const auto r = run_process({kRgbaq, "model", "check", model.string()});
    EXPECT_EQ(r.exit_code, 2) << c.field << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_LT(r.max_rss_bytes, 256u << 20) << c.field << " = " << c.value.dump();
    // rgbaqd refuses the same directory at start, exit 2 (bad input), naming the field.
    const auto d = run_process({kRgbaqd, "--model", model.string(), "--socket", (tmp.path() / "run" / "s.sock").string(),
                                "--data-dir", (tmp.path() / "data").string()});
    EXPECT_EQ(d.exit_code, 2) << d.err;
    EXPECT_NE(d.err.find(c.message), std::string::npos) << d.err;
    EXPECT_LT(d.max_rss_bytes, 256u << 20) << c.field << " = " << c.value.dump();
    edit(c.component, c.field, old);
  }
  EXPECT_EQ(run_process({kRgbaq, "model", "check", model.string()}).exit_code, 0) << "every field restored";
}

}  // namespace
}  // namespace rgbaq
