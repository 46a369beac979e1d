// A model made of three ComfyUI single files and no model directory (ModelDirectory::open({}, files,
// tokenizer), Session::open({}, options)): the configs read off the files' shapes equal the tiny
// model's config.json files (the VAE's latent constants excepted: the family's built-in ones, checked
// against the values copied by hand from ComfyUI's comfy/latent_formats.py QwenImage21), and the render
// equals the render of the same files with the model directory whose vae/config.json holds those
// built-in constants: every other piece (tokenizer, sigmas, RoPE, configs) then comes from the directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model/comfy_quantizer.h"
#include "engine/model/family_defaults.h"
#include "engine/model/model_config.h"
#include "engine/model/model_directory.h"
#include "engine/model/model_identity.h"
#include "engine/model/safetensors.h"
#include "engine/model/weight_store.h"
#include "engine/session.h"
#include "host/schedule.h"
#include "tests/engine/comfy_vae_names.h"
#include "tests/engine/tiny_model_fixture.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::engine {
namespace {

#define EXPECT_HAS(message, part) EXPECT_NE((message).find(part), std::string::npos) << (message)

using Named = std::vector<std::pair<std::string, Tensor>>;

const std::filesystem::path kTokenizer = std::filesystem::path(RGBAQ_SOURCE_DIR_PATH) / "tokenizer/data/qwen3/tokenizer.json";

// The tiny model's three components as ComfyUI single files: the DiT int8 ConvRot G64 as `rgbaq model
// quantize --format int8-convrot` writes it, the text encoder bf16 under a checkpoint's
// "text_encoders.qwen3vl.transformer." prefix, the VAE in Wan's names with an encoder's first
// convolution (base_dim 8) beside the decoder.
struct ComfyFiles {
  TinyModel model;
  TempDir out;
  ComponentFiles files;

  ComfyFiles() {
    ComfyQuantizeOptions options;
    options.convrot_group = 64;
    options.roles = {"transformer"};
    quantize_model_comfy(model.dir(), out.path() / "quantized", options);
    files.dit = out.path() / "quantized" / "transformer.safetensors";

    const WeightStore text = WeightStore::open(model.dir() / "text_encoder");
    Named t;
    for (const std::string& name : text.names()) t.emplace_back("text_encoders.qwen3vl.transformer." + name, text.get(name));
    files.text_encoder = out.path() / "qwen3vl_tiny.safetensors";
    write_safetensors(files.text_encoder, t);

    const WeightStore vae = WeightStore::open(model.dir() / "vae");
    const int res_blocks = load_vae_config(model.dir() / "vae" / "config.json").num_res_blocks;
    Named v;
    for (const std::string& name : vae.names()) v.emplace_back(rgbaq::testing::wan_vae_name(name, res_blocks), vae.get(name));
    v.emplace_back("encoder.conv1.weight", Tensor::zeros(DType::kBF16, {8, 12, 3, 3, 3}));
    files.vae = out.path() / "qwen_image_2.1_vae.safetensors";
    write_safetensors(files.vae, v);
  }
  std::unique_ptr<Session> open(const std::filesystem::path& model_dir, const ComponentFiles& components) const {
    EngineOptions options;
    options.backend = "cpu";
    options.threads = 2;
    options.components = components;
    options.tokenizer = kTokenizer;
    return Session::open(model_dir, options);
  }
};

std::string refusal(const std::function<void()>& open) {
  try {
    open();
  } catch (const InvalidModel& e) {
    return e.what();
  }
  return "no refusal";
}

TEST(SingleFilesNoModel, TheConfigsAreTheConfigJsonsWithTheBuiltInLatents) {
  ComfyFiles f;
  const ModelDirectory opened = ModelDirectory::open({}, f.files, kTokenizer);
  const auto& root = f.model.dir();
  EXPECT_EQ(opened.text_encoder_config(), load_text_encoder_config(root / "text_encoder" / "config.json"));
  EXPECT_EQ(opened.dit_config(), load_dit_config(root / "transformer" / "config.json"));
  VaeConfig vae = load_vae_config(root / "vae" / "config.json");
  EXPECT_NE(opened.vae_config().latents_mean, vae.latents_mean);  // the tiny model's own are not ComfyUI's
  vae.latents_mean = opened.vae_config().latents_mean;
  vae.latents_std = opened.vae_config().latents_std;
  EXPECT_EQ(opened.vae_config(), vae);
  // The hand-checked tiny dimensions, and ComfyUI's QwenImage21 constants (first, most negative, last).
  EXPECT_EQ(opened.dit_config().dim(), 256);
  EXPECT_EQ(opened.text_encoder_config().kv_heads, 1);
  EXPECT_EQ(opened.vae_config().temporal_downsample, (std::vector<bool>{false, true, true, true}));
  ASSERT_EQ(opened.vae_config().latents_mean.size(), 64u);
  EXPECT_EQ(opened.vae_config().latents_mean[0], 0.5126f);
  EXPECT_EQ(opened.vae_config().latents_mean[52], -5.0179f);
  EXPECT_EQ(opened.vae_config().latents_std[63], 3.8161f);
  EXPECT_EQ(opened.vae_config().latents_std[52], 5.5614f);

  EXPECT_TRUE(opened.root().empty());
  EXPECT_TRUE(opened.builtin_vae_latents());
  EXPECT_EQ(opened.tokenizer_json(), kTokenizer);
  EXPECT_EQ(opened.scheduler().sample_sigmas, host::turbo_sample_sigmas());
  EXPECT_EQ(opened.sampler_description(), "FlowMatch Euler, 8 fixed sigmas, the Turbo's published ones (no model directory)");
  const auto notes = opened.notes();
  ASSERT_EQ(notes.size(), 4u);
  EXPECT_HAS(notes[1], "built-in");
  EXPECT_HAS(notes[2], kTokenizer.string());
  ASSERT_EQ(opened.reports().size(), 3u);
  EXPECT_EQ(opened.reports()[1].linear_formats.at("int8-convrot G64"), 22);  // every Linear: 64 divides each width
  EXPECT_EQ(opened.reports()[2].ignored, 7);  // the encoder's conv1, the 3 time_convs' weights and biases
  EXPECT_FALSE(ModelDirectory::open(root).builtin_vae_latents());
  EXPECT_TRUE(ModelDirectory::open(root).notes().empty());

  // The identity is the three files': a changed file is a new model.
  const std::string identity = model_identity({}, f.files);
  EXPECT_NE(identity, model_identity(root, f.files));
  // The tokenizer the session reads counts too (another tokenizer file, another model).
  TempDir other;
  const auto tokenizer_copy = other.path() / "tokenizer.json";
  std::filesystem::copy_file(kTokenizer, tokenizer_copy);
  const std::string with_tokenizer = model_identity({}, f.files, tokenizer_copy);
  EXPECT_NE(with_tokenizer, identity);
  std::ofstream(tokenizer_copy, std::ios::app) << " ";
  EXPECT_NE(model_identity({}, f.files, tokenizer_copy), with_tokenizer);
  write_safetensors(f.files.text_encoder, {{"model.embed_tokens.weight", Tensor::zeros(DType::kBF16, {4, 4})}});
  EXPECT_NE(model_identity({}, f.files), identity);
}

TEST(SingleFilesNoModel, RendersAsTheDirectoryWithTheBuiltInLatentsWrittenIn) {
  ComfyFiles f;
  const RenderRequest request{"a red fox, game asset", 7, {128, 128}};
  auto alone = f.open({}, f.files);
  EXPECT_EQ(alone->model_dir(), std::filesystem::path());
  EXPECT_EQ(alone->model_notes().size(), 4u);
  const RenderResult a = alone->render(request);
  EXPECT_EQ(a.sigmas.size(), 9u);
  const auto with_dir = f.open(f.model.dir(), f.files)->render(request).rgba;
  EXPECT_NE(a.rgba, with_dir);  // the tiny model's own latent constants give another image

  const auto vae_config = f.model.dir() / "vae" / "config.json";
  nlohmann::json config = read_json_object(vae_config);
  config["latents_mean"] = family::vae_latents_mean();
  config["latents_std"] = family::vae_latents_std();
  std::ofstream(vae_config) << config.dump(2);
  auto directory = f.open(f.model.dir(), ComponentFiles{f.files.dit, {}, {}});  // its own text encoder and VAE
  EXPECT_TRUE(directory->model_notes().empty());
  EXPECT_EQ(directory->render(request).rgba, a.rgba);
}

TEST(SingleFilesNoModel, AMissingComponentOrTokenizerIsRefusedByName) {
  ComfyFiles f;
  for (const auto& [flag, files] : {std::pair{"--dit", ComponentFiles{{}, f.files.text_encoder, f.files.vae}},
                                    {"--text-encoder", ComponentFiles{f.files.dit, {}, f.files.vae}},
                                    {"--vae", ComponentFiles{f.files.dit, f.files.text_encoder, {}}}}) {
    const std::string message = refusal([&] { ModelDirectory::open({}, files, kTokenizer); });
    EXPECT_HAS(message, std::string("no model directory and no ") + flag + " FILE");
  }
  EXPECT_HAS(refusal([&] { ModelDirectory::open({}, f.files); }), "no tokenizer.json");
  const auto absent = f.out.path() / "absent" / "tokenizer.json";
  EXPECT_HAS(refusal([&] { ModelDirectory::open({}, f.files, absent); }), absent.string() + ": no such tokenizer.json");
  // The session refuses the same way.
  EngineOptions options;
  options.backend = "cpu";
  options.components = ComponentFiles{f.files.dit, f.files.text_encoder, {}};
  options.tokenizer = kTokenizer;
  EXPECT_THROW(Session::open({}, options), InvalidModel);
}

TEST(SingleFilesNoModel, ADitWithAGapOrAnIllShapedBlockIsRefusedNamingTheTensor) {
  ComfyFiles f;
  const WeightStore ours = WeightStore::open(f.model.dir() / "transformer");
  const auto dit_file = f.out.path() / "gap.safetensors";
  const auto write_dit = [&](const std::function<std::string(const std::string&)>& rename, const std::string& reshaped) {
    Named t;
    for (const std::string& name : ours.names()) {
      Tensor w = ours.get(name);
      if (name == reshaped) w = Tensor::zeros(DType::kBF16, {w.dim(0) / 2, w.dim(1)});
      t.emplace_back("model.diffusion_model." + rename(name), w);
    }
    write_safetensors(dit_file, t);
  };
  const ComponentFiles files{dit_file, f.files.text_encoder, f.files.vae};
  // Blocks 0 and 2, no 1.
  write_dit([](std::string n) { return n.starts_with("transformer_blocks.1.") ? "transformer_blocks.2." + n.substr(21) : n; }, "");
  EXPECT_HAS(refusal([&] { ModelDirectory::open({}, files, kTokenizer); }),
             dit_file.string() + ": tensor \"transformer_blocks.1.attn.to_q.weight\" is missing (the file holds "
                                 "transformer_blocks.0 to transformer_blocks.2, 2 blocks");
  // Block 1's MLP half as wide as block 0's (which gave mlp_ratio 3).
  write_dit([](std::string n) { return n; }, "transformer_blocks.1.img_mlp.proj.weight");
  EXPECT_HAS(refusal([&] { ModelDirectory::open({}, files, kTokenizer); }), "\"transformer_blocks.1.img_mlp.proj.weight\"");
  // Block 0's: its rows are not a multiple of the width.
  write_dit([](std::string n) { return n; }, "transformer_blocks.0.img_mlp.proj.weight");
  EXPECT_HAS(refusal([&] { ModelDirectory::open({}, files, kTokenizer); }),
             dit_file.string() + ": tensor \"transformer_blocks.0.img_mlp.proj.weight\" has 384 rows, not a multiple of 256");
}

}  // namespace
}  // namespace rgbaq::engine
