// The text encoder on the tiny checkpoint against a float64 naive implementation of the Qwen3 layer
// math (written here from the model's definition), plus determinism and input checks.
#include "engine/cpu/text_encoder.h"

#include <gtest/gtest.h>

#include <iostream>

#include "engine/model_directory.h"
#include "tests/engine/reference_math.h"
#include "tests/engine/tiny_model_fixture.h"
#include <fstream>
#include "tokenizer/prompt_template.h"
#include "tokenizer/tokenizer.h"

namespace rgbaq::engine::cpu {
namespace {

using testing::Vec;

// The Qwen3 text stack in float64, straight from the definition.
Vec reference_encode(const WeightStore& w, const TextEncoderConfig& c, const std::vector<int32_t>& ids) {
  const std::string p = "model.language_model.";
  const int64_t n = static_cast<int64_t>(ids.size()), h = c.hidden, d = c.head_dim;
  auto get = [&](const std::string& name) { return testing::widen(w.get(p + name).to_f32_vector()); };
  const Vec embed = get("embed_tokens.weight");
  Vec x(static_cast<size_t>(n * h));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < h; ++j) x[i * h + j] = embed[ids[i] * h + j];
  auto rope = [&](Vec& t, int heads) {
    for (int64_t i = 0; i < n; ++i)
      for (int hh = 0; hh < heads; ++hh)
        for (int64_t j = 0; j < d / 2; ++j) {
          const double angle = i * std::pow(c.rope_theta, -2.0 * j / d);
          double& a = t[(i * heads + hh) * d + j];
          double& b = t[(i * heads + hh) * d + j + d / 2];
          const double a0 = a, b0 = b;
          a = a0 * std::cos(angle) - b0 * std::sin(angle);
          b = b0 * std::cos(angle) + a0 * std::sin(angle);
        }
  };
  for (int layer = 0; layer < c.layers; ++layer) {
    const std::string l = "layers." + std::to_string(layer) + ".";
    Vec hn = testing::rms_norm(x, n, h, get(l + "input_layernorm.weight"), 0, c.rms_eps);
    Vec q = testing::matmul_nt(hn, n, h, get(l + "self_attn.q_proj.weight"), c.heads * d);
    Vec k = testing::matmul_nt(hn, n, h, get(l + "self_attn.k_proj.weight"), c.kv_heads * d);
    Vec v = testing::matmul_nt(hn, n, h, get(l + "self_attn.v_proj.weight"), c.kv_heads * d);
    q = testing::rms_norm(q, n * c.heads, d, get(l + "self_attn.q_norm.weight"), 0, c.rms_eps);
    k = testing::rms_norm(k, n * c.kv_heads, d, get(l + "self_attn.k_norm.weight"), 0, c.rms_eps);
    rope(q, c.heads);
    rope(k, c.kv_heads);
    const Vec a = testing::attention(q, k, v, n, n, c.heads, c.kv_heads, static_cast<int>(d), n, 1 / std::sqrt(double(d)));
    const Vec o = testing::matmul_nt(a, n, c.heads * d, get(l + "self_attn.o_proj.weight"), h);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    hn = testing::rms_norm(x, n, h, get(l + "post_attention_layernorm.weight"), 0, c.rms_eps);
    Vec g = testing::matmul_nt(hn, n, h, get(l + "mlp.gate_proj.weight"), c.intermediate);
    const Vec u = testing::matmul_nt(hn, n, h, get(l + "mlp.up_proj.weight"), c.intermediate);
    for (size_t i = 0; i < g.size(); ++i) g[i] = testing::silu(g[i]) * u[i];
    const Vec down = testing::matmul_nt(g, n, c.intermediate, get(l + "mlp.down_proj.weight"), h);
    for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
  }
  return x;
}

std::vector<int32_t> prompt_ids(const TinyModel& model, const std::string& prompt) {
  const auto tk = tokenizer::Tokenizer::from_file(model.dir() / "tokenizer" / "tokenizer.json");
  return tokenizer::PromptTemplate(tk).apply(prompt).ids;
}

TEST(TextEncoder, MatchesFloat64ReferenceOnTheTinyModel) {
  for (DType dtype : {DType::kBF16, DType::kF32}) {
    const TinyModel model(dtype);
    const auto weights = WeightStore::open(model.dir() / "text_encoder");
    const auto config = load_text_encoder_config(model.dir() / "text_encoder" / "config.json");
    const TextEncoder encoder(weights, config);
    const auto ids = prompt_ids(model, "a red fox in the snow, game asset, transparent background");
    ThreadPool pool(2);
    const Tensor hidden = encoder.encode(ids, pool);
    ASSERT_EQ(hidden.shape(), (Shape{static_cast<int64_t>(ids.size()), config.hidden}));
    const double err = testing::relative_error(hidden.to_f32_vector(), reference_encode(weights, config, ids));
    EXPECT_LT(err, 1e-4) << dtype_name(dtype);
    std::cout << "text encoder, " << dtype_name(dtype) << " weights: relative error " << err << "\n";
  }
}

TEST(TextEncoder, DeterministicAcrossRunsAndThreadCounts) {
  const TinyModel model(DType::kBF16);
  const auto weights = WeightStore::open(model.dir() / "text_encoder");
  const TextEncoder encoder(weights, load_text_encoder_config(model.dir() / "text_encoder" / "config.json"));
  std::vector<int32_t> ids = prompt_ids(model, "");
  for (int i = 0; i < 200; ++i) ids.push_back(1000 + i * 7);  // a longer sequence: several attention blocks
  ThreadPool one(1), two(2), five(5);
  const auto a = encoder.encode(ids, one).to_f32_vector();
  EXPECT_EQ(a, encoder.encode(ids, two).to_f32_vector());
  EXPECT_EQ(a, encoder.encode(ids, five).to_f32_vector());
  EXPECT_EQ(a, encoder.encode(ids, two).to_f32_vector());
}

TEST(TextEncoder, RejectsIdsOutsideTheVocabulary) {
  const TinyModel model(DType::kBF16);
  const auto weights = WeightStore::open(model.dir() / "text_encoder");
  const TextEncoder encoder(weights, load_text_encoder_config(model.dir() / "text_encoder" / "config.json"));
  ThreadPool pool(1);
  const std::vector<int32_t> ids = {1, 2, 151936, 4};
  try {
    encoder.encode(ids, pool);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "token id 151936 at position 2 is outside the encoder's vocabulary of 151936");
  }
  EXPECT_THROW(encoder.encode(std::vector<int32_t>{-1}, pool), std::invalid_argument);
}

TEST(TextEncoder, WrongShapeNamesFileAndTensor) {
  const TinyModel model(DType::kBF16);
  const auto weights = WeightStore::open(model.dir() / "text_encoder");
  auto config = load_text_encoder_config(model.dir() / "text_encoder" / "config.json");
  config.intermediate = 100;
  try {
    TextEncoder encoder(weights, config);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("model-00002-of-00002.safetensors: tensor \"model.language_model.layers.0.mlp.gate_proj.weight\" has shape [128, 64], expected [100, 64]"),
              std::string::npos)
        << e.what();
  }
}

TEST(ModelDirectory, MissingPartsAreNamed) {
  const TinyModel model(DType::kBF16);
  EXPECT_NO_THROW(ModelDirectory::open(model.dir()));
  std::filesystem::remove(model.dir() / "vae" / "config.json");
  try {
    ModelDirectory::open(model.dir());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("vae/config.json is missing"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ModelDirectory::open("/nonexistent/model"), std::runtime_error);
}

TEST(ModelConfig, FieldErrorsNameFileAndField) {
  TempDir dir;
  std::ofstream(dir.path() / "config.json") << R"({"text_config": {"hidden_size": 64, "num_hidden_layers": "two"}})";
  try {
    load_text_encoder_config(dir.path() / "config.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("config.json: field \"num_hidden_layers\" has the wrong type"), std::string::npos) << e.what();
  }
  // A plain Qwen3 config (no text_config) reads the same fields at the top level.
  std::ofstream(dir.path() / "config.json", std::ios::trunc)
      << R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
            "head_dim": 32, "intermediate_size": 128, "vocab_size": 1000})";
  const auto c = load_text_encoder_config(dir.path() / "config.json");
  EXPECT_EQ(c.kv_heads, 1);
  EXPECT_EQ(c.rope_theta, 5e6);
}

}  // namespace
}  // namespace rgbaq::engine::cpu
