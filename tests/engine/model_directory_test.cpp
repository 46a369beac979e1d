// Model discovery: our layout and the published one (processor/, the whole Qwen3-VL text encoder, the
// VAE encoder, 4-D convolutions) render the same bytes from the same weights; a directory that is a
// different model, lacks a component or holds a tensor of the wrong shape is refused naming it.
#include "engine/model/model_directory.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/render_memory.h"
#include "engine/model/safetensors.h"
#include "engine/session.h"
#include "tests/engine/tiny_model_fixture.h"

namespace rgbaq::engine {
namespace {

using nlohmann::json;

std::string open_error(const std::filesystem::path& dir) {
  try {
    ModelDirectory::open(dir);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(opened)";
}

void edit_index(const std::filesystem::path& dir, const std::function<void(json&)>& edit) {
  json index;
  {
    std::ifstream in(dir / "model_index.json");
    index = json::parse(in);
  }
  edit(index);
  std::ofstream(dir / "model_index.json") << index.dump(2);
}

// The GPU benchmarks' model: every real-dims tensor present with its shape, in files that are holes.
TEST(ModelDirectory, AHollowRealDimsModelOpensWithEveryTensorAndTakesNoDisk) {
  TempDir dir;
  tools::TinyModelOptions options;
  options.real_dims = true;
  options.hollow = true;
  options.tokenizer_json = std::filesystem::path(RGBAQ_SOURCE_DIR_PATH) / "tokenizer/data/qwen3/tokenizer.json";
  tools::write_tiny_model(dir.path() / "real", options);
  const ModelDirectory model = ModelDirectory::open(dir.path() / "real");  // checks every tensor's name, shape, dtype
  EXPECT_EQ(model.dit_config().layers, 32);
  uint64_t apparent = 0, allocated = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (!entry.is_regular_file() || entry.path().extension() != ".safetensors") continue;
    struct stat st {};
    ASSERT_EQ(stat(entry.path().c_str(), &st), 0);
    apparent += static_cast<uint64_t>(st.st_size);
    allocated += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  EXPECT_GT(apparent, uint64_t{28} << 30) << "the real model's bf16 bytes";
  EXPECT_LT(allocated, uint64_t{16} << 20);
  // `rgbaq model check`'s cuda row at 1024x1024 is what a session's fit check counts beside the weights
  // (engine/cuda/workspace_plan.h; CudaWorkspacePlan works the 6.43 GiB out by hand).
  bool found = false;
  for (const auto& m : estimate_render_memory(model, 1)) {
    if (m.engine != "cuda" || m.size != 1024) continue;
    found = true;
    EXPECT_EQ(m.total() - m.weights, uint64_t{6901204992});
  }
  EXPECT_TRUE(found);
  // With --vae-tiles the VAE's share is the tiled plan's (engine/vae_tile_plan.h): within 1 GiB, where
  // untiled it is 4.75 GiB.
  EngineOptions tiled;
  tiled.vae_tiles = true;
  for (const auto& m : estimate_render_memory(model, 1, tiled)) {
    if (m.engine != "cuda" || m.size != 1024) continue;
    EXPECT_LE(m.vae, uint64_t{1} << 30);
    EXPECT_LT(m.total() - m.weights, uint64_t{6901204992} - (uint64_t{7} << 29));  // 3.5 GiB less
  }
  // With --fused-blocks the DiT's projections and up buffers go and its gate buffer takes a chunk of 1024
  // rows: 352 MiB less (CudaWorkspacePlan).
  EngineOptions fused;
  fused.fused_blocks = true;
  for (const auto& m : estimate_render_memory(model, 1, fused)) {
    if (m.engine != "cuda" || m.size != 1024) continue;
    EXPECT_EQ(m.total() - m.weights, uint64_t{6901204992} - (uint64_t{352} << 20));
    EXPECT_NE(m.precision.find("fused blocks"), std::string::npos) << m.precision;
  }
}

TEST(ModelDirectory, PublishedLayoutRendersTheSameBytesAsOurs) {
  const TinyModel ours(DType::kBF16, 3), published(DType::kBF16, 3, tools::Layout::kPublished);
  ASSERT_FALSE(std::filesystem::exists(published.dir() / "tokenizer"));
  const auto dir = ModelDirectory::open(published.dir());
  EXPECT_EQ(dir.tokenizer_json(), published.dir() / "processor" / "tokenizer.json");
  EXPECT_EQ(dir.text_encoder_prefix(), "model.language_model.");
  ASSERT_EQ(dir.reports().size(), 3u);
  // Ignored: the final norm, lm_head and four vision tensors; the VAE's encoder, quant_conv and time_convs.
  EXPECT_EQ(dir.reports()[0].ignored, 6);
  EXPECT_EQ(dir.reports()[1].ignored, 0);
  EXPECT_EQ(dir.reports()[2].ignored, 19);
  EXPECT_EQ(ModelDirectory::open(ours.dir()).reports()[2].ignored, 6);  // the time_convs' weights and biases

  const RenderRequest request{"a lighthouse at dusk, game asset", 11, {256, 256}};
  const auto a = Session::open(ours.dir(), "cpu", 2)->render(request);
  const auto b = Session::open(published.dir(), "cpu", 2)->render(request);
  EXPECT_EQ(a.rgba, b.rgba);
  EXPECT_EQ(a.full_tokens, b.full_tokens);
}

TEST(ModelDirectory, ShardedWeightsWithAnIndexRenderTheSameBytes) {
  // The writer that streams real-size checkpoints to shards, on the tiny DiT: same weights, many files.
  const TinyModel one_file(DType::kBF16, 4), sharded(DType::kBF16, 4);
  std::filesystem::remove_all(sharded.dir() / "transformer");
  tools::write_dit(sharded.dir() / "transformer", tools::tiny_dit_config(), 4, DType::kBF16, 1 << 20);
  ASSERT_TRUE(std::filesystem::exists(sharded.dir() / "transformer" / "diffusion_pytorch_model.safetensors.index.json"));
  int shards = 0;
  for (const auto& e : std::filesystem::directory_iterator(sharded.dir() / "transformer")) {
    shards += e.path().filename().string().starts_with("diffusion_pytorch_model-0000");
  }
  EXPECT_GE(shards, 2);
  EXPECT_EQ(ModelDirectory::open(sharded.dir()).reports()[1].used, 27);
  const RenderRequest request{"x", 3, {128, 128}};
  EXPECT_EQ(Session::open(one_file.dir(), "cpu", 2)->render(request).rgba,
            Session::open(sharded.dir(), "cpu", 2)->render(request).rgba);
}

TEST(ModelDirectory, TheBaseModelsSchedulerImpliesItsSampler) {
  const TinyModel model;
  EXPECT_NE(ModelDirectory::open(model.dir()).sampler_description().find("8 fixed sigmas"), std::string::npos);
  edit_index(model.dir(), [](json& index) { index.erase("sample_sigmas"); });
  json scheduler;
  {
    std::ifstream in(model.dir() / "scheduler" / "scheduler_config.json");
    scheduler = json::parse(in);
  }
  scheduler["use_dynamic_shifting"] = true;
  scheduler["shift_terminal"] = 0.02;
  std::ofstream(model.dir() / "scheduler" / "scheduler_config.json") << scheduler.dump();
  const auto base = ModelDirectory::open(model.dir());
  EXPECT_EQ(base.sampler_description(), "FlowMatch Euler, 40 steps on a linspace, dynamic shift, terminal 0.02 (base)");
}

TEST(ModelDirectory, RefusesAnotherPipelineNamingWhatItFound) {
  const TinyModel model;
  edit_index(model.dir(), [](json& index) { index["_class_name"] = "QwenImagePipeline"; });
  std::string e = open_error(model.dir());
  EXPECT_NE(e.find("model_index.json"), std::string::npos) << e;
  EXPECT_NE(e.find("Qwen-Image v1"), std::string::npos) << e;
  EXPECT_NE(e.find("transformer (QwenImage21Transformer2DModel)"), std::string::npos) << e;
  edit_index(model.dir(), [](json& index) { index["_class_name"] = "StableDiffusionXLPipeline"; });
  e = open_error(model.dir());
  EXPECT_NE(e.find("\"StableDiffusionXLPipeline\" is another pipeline"), std::string::npos) << e;
  // A v1 transformer under a 2.1 pipeline name is refused by its class.
  edit_index(model.dir(), [](json& index) {
    index["_class_name"] = "QwenImage21Pipeline";
    index["transformer"] = {"diffusers", "QwenImageTransformer2DModel"};
  });
  e = open_error(model.dir());
  EXPECT_NE(e.find("component \"transformer\" is a QwenImageTransformer2DModel"), std::string::npos) << e;
}

TEST(ModelDirectory, RefusesAMissingComponent) {
  const TinyModel model;
  edit_index(model.dir(), [](json& index) { index.erase("vae"); });
  std::string e = open_error(model.dir());
  EXPECT_NE(e.find("no vae component"), std::string::npos) << e;
  EXPECT_NE(e.find("components found: "), std::string::npos) << e;
  edit_index(model.dir(), [](json& index) { index["vae"] = {"diffusers", "AutoencoderKLQwenImage21"}; });
  std::filesystem::remove(model.dir() / "tokenizer" / "tokenizer.json");
  e = open_error(model.dir());
  EXPECT_NE(e.find("no tokenizer component (processor/ or tokenizer/ with a tokenizer.json)"), std::string::npos) << e;
  std::filesystem::remove(model.dir() / "model_index.json");
  EXPECT_NE(open_error(model.dir()).find("model_index.json is missing"), std::string::npos);
}

TEST(ModelDirectory, RefusesATensorOfTheWrongShapeNamingFileAndTensor) {
  const TinyModel model;
  const auto file = model.dir() / "transformer" / "diffusion_pytorch_model.safetensors";
  std::vector<std::pair<std::string, Tensor>> tensors;
  {
    const auto st = SafetensorsFile::open(file);
    for (const auto& name : st.names()) {
      Tensor t = st.tensor(name);
      if (name == "transformer_blocks.1.attn.to_k.weight") t = Tensor::zeros(DType::kBF16, {t.dim(0), t.dim(1) - 1});
      tensors.emplace_back(name, std::move(t));
    }
  }
  write_safetensors(file, tensors);
  const std::string e = open_error(model.dir());
  EXPECT_NE(e.find(file.string()), std::string::npos) << e;
  EXPECT_NE(e.find("\"transformer_blocks.1.attn.to_k.weight\" has shape [256, 255], expected [256, 256]"), std::string::npos) << e;
}

}  // namespace
}  // namespace rgbaq::engine
