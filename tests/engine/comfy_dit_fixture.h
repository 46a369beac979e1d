#pragma once
// The tiny model's DiT written as a ComfyUI single file by the independent writer
// (comfy_writer_reference.h), a session that renders with it (EngineOptions::components), and the
// float64 render of the same DiT for the comparisons (render_reference.h).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/comfy_keys.h"
#include "engine/model/model_directory.h"
#include "engine/model/safetensors.h"
#include "engine/model/weight_schema.h"
#include "engine/model/weight_store.h"
#include "engine/session.h"
#include "tests/engine/comfy_writer_reference.h"
#include "tests/engine/render_reference.h"
#include "tests/engine/tiny_model_fixture.h"

namespace rgbaq::testing {

inline constexpr const char* kDitPrefix = "model.diffusion_model.";
// What the ConvRot and FP8 render tests render.
inline const std::string kComfyPrompt = "a red fox in the snow, game asset";
inline const host::ImageSize kComfySize{128, 128};

// A file `rgbaq model quantize --format` wrote against the independent writer's tensors: the same names,
// and each tensor the same dtype, shape and bytes. `what` goes into the failure messages.
inline void expect_same_tensors(const std::filesystem::path& file, const ComfyFileReference::Named& want,
                                const std::string& what) {
  const engine::SafetensorsFile got = engine::SafetensorsFile::open(file);
  EXPECT_EQ(got.names().size(), want.size());
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.contains(name)) << name;
    const engine::Tensor g = got.tensor(name);
    EXPECT_EQ(g.dtype(), t.dtype()) << name;
    EXPECT_EQ(g.shape(), t.shape()) << name;
    ASSERT_EQ(g.nbytes(), t.nbytes()) << name;
    EXPECT_EQ(std::memcmp(g.data(), t.data(), t.nbytes()), 0) << name << ": " << what;
  }
}

struct ComfyDit {
  TinyModel model;
  TempDir out;
  engine::ModelDirectory dir = engine::ModelDirectory::open(model.dir());
  engine::WeightStore weights = engine::WeightStore::open(dir.transformer_dir());
  ComfyFileReference::Named source;  // the schema's tensors, in its order
  std::set<std::string> linears;     // the schema's Linear weights

  ComfyDit() {
    for (const auto& spec : engine::dit_schema(dir.dit_config()).tensors) {
      source.emplace_back(spec.name, weights.get(spec.name));
      if (spec.role == engine::WeightRole::kLinear) linears.insert(spec.name);
    }
  }
  // The Linears a ConvRot file of group g quantizes: those whose width g divides.
  std::set<std::string> convrot_linears(int g) const {
    std::set<std::string> s;
    for (const auto& [name, t] : source)
      if (linears.count(name) && t.dim(1) % g == 0) s.insert(name);
    return s;
  }
  std::unique_ptr<engine::Session> open(const std::filesystem::path& dit_file) const {
    engine::EngineOptions options;
    options.backend = "cpu";
    options.threads = 2;
    options.components.dit = dit_file;
    return engine::Session::open(model.dir(), options);
  }
  // The DiT file's weights through ComfyUI's key table, as a session reads them.
  static engine::WeightStore store(const std::filesystem::path& dit_file) {
    return engine::WeightStore::open_file(dit_file, [](const std::string& key) {
      return engine::comfy_key_to_engine(engine::ComfyComponent::kDit, key);
    });
  }
  // Why a session refuses the DiT file: its error, empty when it opened.
  std::string open_error(const std::filesystem::path& dit_file) const {
    try {
      open(dit_file);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }
  // The float64 render of the DiT `dit` (this model's other components) from text features `text`.
  std::vector<uint8_t> reference(const DitReference& dit, const engine::Tensor& text, uint64_t seed,
                                 const host::ImageSize& size) const {
    const auto vae_weights = engine::WeightStore::open(dir.vae_dir());
    return reference_render(dit, VaeReference{vae_weights}, dir.vae_config(), dir.scheduler(), text.to_f32_vector(),
                            text.dim(0), seed, size);
  }
};

}  // namespace rgbaq::testing
