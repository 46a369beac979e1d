#pragma once
// What the gpu tests that open whole cuda sessions on the tiny model share: the model written into a
// temporary folder, a session at the options a test varies, and one velocity call's random inputs.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "engine/engine_options.h"
#include "engine/session.h"
#include "host/rope.h"
#include "tests/engine/reference_math.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

namespace rgbaq::engine::cuda {

// The tiny model in dir/model: its Linears int8 when asked; `real`: the real dims, hollow (headers only).
inline std::filesystem::path write_model(const TempDir& dir, bool int8, bool real = false) {
  tools::TinyModelOptions options;
  options.int8_linears = int8;
  options.real_dims = options.hollow = real;
  options.tokenizer_json = std::filesystem::path(RGBAQ_SOURCE_DIR_PATH) / "tokenizer/data/qwen3/tokenizer.json";
  tools::write_tiny_model(dir.path() / "model", options);
  return dir.path() / "model";
}

inline std::unique_ptr<Session> open_cuda(const std::filesystem::path& model, Precision p, GpuInt8 g, bool stream_blocks = false,
                                          std::optional<uint64_t> random = std::nullopt, bool fused_blocks = false) {
  EngineOptions o;
  o.backend = "cuda";
  o.precision = p;
  o.gpu_int8 = g;
  o.force_block_streaming = stream_blocks;
  o.random_weights = random;
  o.fused_blocks = fused_blocks;
  return Session::open(model, o);
}

// One velocity call's inputs: L text rows of width `dim` and a size's image tokens, random.
struct VelocityCase {
  VelocityCase(int64_t l, int64_t dim, const host::ImageSize& size, float scale = 1.0f)
      : txt(Tensor::from_f32({l, dim}, testing::random_floats(l * dim, 6, 3.0f * scale))),
        img(Tensor::from_f32({size.tokens(), 64}, testing::random_floats(size.tokens() * 64, 5, 1.7f * scale))),
        rope(host::build_rope(host::RopeTables::from_formula(), static_cast<int>(l), size)) {}
  std::vector<float> velocity(Session& s) const { return s.graphs().velocity({&img, &txt, 0.7f, &rope}).to_f32_vector(); }
  Tensor txt, img;
  host::RopeTensors rope;
};

}  // namespace rgbaq::engine::cuda
