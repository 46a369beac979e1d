// ComfyUI FP8-scaled files (float8_e4m3fn + weight_scale, engine/model/comfy_quant.h): a DiT file written by
// the independent writer (comfy_writer_reference.h: the E4M3 code nearest to W / s found by comparing
// values from the format's definition) loads as a single file; each Linear, with one scale for the tensor
// (ComfyUI's 0-d weight_scale) or one a row, is within 1e-5 of a float64 product with the dequantized
// weight; a render is within one level on >= 99% of the pixels of the float64 render of the dequantized
// DiT and >= 30 dB from the unquantized model's; `model quantize --format fp8-scaled` writes the
// independent writer's bytes; broken scales are refused at open naming the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "engine/cpu/linear.h"
#include "engine/model/safetensors.h"
#include "tests/engine/comfy_dit_fixture.h"
#include "tests/run_process.h"

namespace rgbaq::engine {
namespace {

using testing::ComfyDit;
using testing::ComfyFileReference;
using testing::kComfyPrompt;
using testing::kComfySize;
using testing::kDitPrefix;
using testing::Vec;

TEST(Fp8ScaledFile, EachLinearMatchesTheDequantizedWeightInFloat64PerTensorAndPerRow) {
  ComfyDit dit;
  cpu::ThreadPool pool(2);
  for (bool per_row : {false, true}) {
    ComfyFileReference writer{ComfyFileReference::Format::kFp8};
    writer.fp8_per_row = per_row;
    const auto file = dit.out.path() / (per_row ? "rows.safetensors" : "tensor.safetensors");
    writer.write(file, dit.source, dit.linears, kDitPrefix);
    const WeightStore store = ComfyDit::store(file);
    double worst = 0;
    for (const auto& [name, ref] : writer.fp8) {
      const Tensor w = store.require(name, {ref.out, ref.in});
      ASSERT_EQ(w.quant(), WeightQuant::kFp8Scaled) << name;
      const int64_t rows = 37;
      const auto x = testing::random_floats(static_cast<size_t>(rows * ref.in), static_cast<uint32_t>(ref.out), 2.0f);
      std::vector<float> y(static_cast<size_t>(rows * ref.out));
      cpu::linear(x.data(), rows, w, y.data(), pool);
      const double err = testing::relative_error(y, testing::matmul_nt(testing::widen(x), rows, ref.in, ref.dequantized(), ref.out));
      EXPECT_LT(err, 1e-5) << name << (per_row ? " per row" : " per tensor");
      worst = std::max(worst, err);
    }
    EXPECT_EQ(writer.fp8.size(), 22u);  // the tiny DiT's Linears: 7 in each of its 2 blocks, 8 outside them
    std::cout << "FP8 scaled " << (per_row ? "per row" : "per tensor") << ": " << writer.fp8.size()
              << " Linears, largest relative error against the dequantized weight in float64 " << worst << "\n";
  }
}

TEST(Fp8ScaledFile, RendersWithinALevelOfTheDequantizedFloat64DitAndNearTheUnquantizedModel) {
  ComfyDit dit;
  ComfyFileReference writer{ComfyFileReference::Format::kFp8};
  const auto file = dit.out.path() / "dit.safetensors";
  writer.write(file, dit.source, dit.linears, kDitPrefix);
  auto plain = Session::open(dit.model.dir(), "cpu", 2);
  const Tensor text = plain->encode(plain->tokenize(kComfyPrompt));
  const RenderRequest request{kComfyPrompt, 7, kComfySize};
  const auto unquantized = plain->render_embedded(text, request, {}).rgba;
  const auto got = dit.open(file)->render_embedded(text, request, {}).rgba;
  // The float64 DiT with each Linear value(q) s: the reference's deltas are (dequantized - stored).
  std::map<std::string, Vec> deltas;
  for (const auto& [name, ref] : writer.fp8) {
    Vec d = ref.dequantized();
    const std::vector<float> stored = dit.weights.get(name).to_f32_vector();
    for (size_t i = 0; i < d.size(); ++i) d[i] -= stored[i];
    deltas[name] = std::move(d);
  }
  const auto want = dit.reference(testing::DitReference{dit.weights, dit.dir.dit_config(), &deltas}, text, request.seed, kComfySize);
  const double within = testing::pixels_within(got, want, 1), db = testing::psnr(got, unquantized);
  std::cout << "FP8 scaled render: " << 100 * within << "% of pixels within 1 level of the float64 render of the "
            << "dequantized DiT, " << db << " dB from the unquantized model's\n";
  EXPECT_GE(within, 0.99);
  EXPECT_GE(db, 30.0);
  EXPECT_NE(got, unquantized);
}

TEST(Fp8ScaledFile, ModelQuantizeWritesTheIndependentWritersFile) {
  ComfyDit dit;
  const auto dst = dit.out.path() / "quantized";
  const auto r = run_process({RGBAQ_CLI_PATH, "model", "quantize", dit.model.dir().string(), dst.string(), "--format",
                              "fp8-scaled", "--components", "transformer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("transformer: " + std::to_string(dit.linears.size()) + " Linear weights to fp8-scaled"),
            std::string::npos) << r.out;
  ComfyFileReference writer{ComfyFileReference::Format::kFp8};
  testing::expect_same_tensors(dst / "transformer.safetensors", writer.tensors(dit.source, dit.linears, kDitPrefix),
                               "codes or scale differ");
  const SafetensorsFile got = SafetensorsFile::open(dst / "transformer.safetensors");
  EXPECT_EQ(got.metadata(), writer.metadata());
  const std::string m = std::string(kDitPrefix) + "transformer_blocks.0.img_mlp.proj";
  const Tensor q = got.tensor(m + ".comfy_quant");
  EXPECT_EQ(std::string(static_cast<const char*>(q.data()), q.nbytes()), "{\"format\": \"float8_e4m3fn\"}");
  EXPECT_EQ(got.tensor(m + ".weight_scale").shape(), Shape{});  // ComfyUI's 0-d per-tensor scale
}

TEST(Fp8ScaledFile, BrokenScalesAreRefusedAtOpenNamingTheTensor) {
  ComfyDit dit;
  ComfyFileReference writer{ComfyFileReference::Format::kFp8};
  const auto good = writer.tensors(dit.source, dit.linears, kDitPrefix);
  const std::string scale = std::string(kDitPrefix) + "transformer_blocks.0.attn.to_k.weight_scale";
  const std::vector<std::pair<Tensor, std::string>> cases = {
      {Tensor::from_f32({}, {0.0f}), "0.000000 at index 0"},
      {Tensor::from_f32({}, {std::nanf("")}), "nan at index 0"},
      {Tensor::from_f32({2}, {1e-3f, 1e-3f}), "[2]"},
  };
  int n = 0;
  for (const auto& [value, field] : cases) {
    auto tensors = good;
    for (auto& [name, t] : tensors)
      if (name == scale) t = value;
    const auto file = dit.out.path() / ("broken-" + std::to_string(n++) + ".safetensors");
    write_safetensors(file, tensors, writer.metadata());
    const std::string error = dit.open_error(file);
    ASSERT_FALSE(error.empty()) << field << ": opened";
    EXPECT_NE(error.find(scale), std::string::npos) << error;
    EXPECT_NE(error.find(field), std::string::npos) << field << ": " << error;
  }
}

}  // namespace
}  // namespace rgbaq::engine
