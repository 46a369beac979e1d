// The CPU text encoder's determinism and input checks. (The encoder against its float64 reference
// runs for every backend in graphs_reference_test.cpp.)
#include "engine/cpu/text_encoder.h"

#include <gtest/gtest.h>

#include <iostream>

#include "engine/model/model_directory.h"
#include "tests/engine/reference_math.h"
#include "tests/engine/tiny_model_fixture.h"
#include <fstream>
#include "tokenizer/prompt_template.h"
#include "tokenizer/tokenizer.h"

namespace rgbaq::engine::cpu {
namespace {

std::vector<int32_t> prompt_ids(const TinyModel& model, const std::string& prompt) {
  const auto tk = tokenizer::Tokenizer::from_file(model.dir() / "tokenizer" / "tokenizer.json");
  return tokenizer::PromptTemplate(tk).apply(prompt).ids;
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
