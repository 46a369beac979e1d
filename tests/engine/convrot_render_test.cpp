// ComfyUI INT8 ConvRot files (engine/model/comfy_quant.h, engine/cpu/w8a8_linear.h): a DiT file written by
// the independent writer (comfy_writer_reference.h: explicit Hadamard in float64, absmax / 127, round half
// even) loads as a single file and renders; each of its Linears is within 1e-5 of a float64 W8A8
// reference; whole renders at group 64 and 256 are within one level on >= 99% of the pixels of a float64
// W8A8 render and >= 30 dB from the unquantized model's; a LoRA on it agrees with the same LoRA on the
// float64 W8A8 DiT and on the dequantized DiT; `model quantize --format int8-convrot` writes the
// independent writer's bytes; broken files are refused at open naming the tensor and the field.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <random>

#include "engine/cpu/linear.h"
#include "engine/model/safetensors.h"
#include "tests/engine/comfy_dit_fixture.h"
#include "tests/engine/lora_reference.h"
#include "tests/run_process.h"
#include "tools/tiny_model.h"

namespace rgbaq::engine {
namespace {

using testing::ComfyDit;
using testing::ComfyFileReference;
using testing::kComfyPrompt;
using testing::kComfySize;
using testing::kDitPrefix;
using testing::Vec;

// Rows whose rotation x R lands far from every int8 rounding boundary: x = z R with z = (k + u) step,
// |u| <= 0.3, and one entry of each row exactly +-127 step (step a power of two, so the row's scale is
// exactly step in fp32 and float64 alike). The engine's fp32 rotation then rounds every entry to the same
// integer as the float64 reference, and the Linear can be held to 1e-5: what is compared is the W8A8 math,
// not which side of a .5 an fp32 rounding falls.
std::vector<float> rows_away_from_rounding_boundaries(int64_t rows, int64_t in, int group, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> k(-120, 120);
  std::uniform_real_distribution<double> u(-0.3, 0.3);
  Vec z(static_cast<size_t>(rows * in));
  for (int64_t r = 0; r < rows; ++r) {
    const double step = std::ldexp(1.0, -7 - static_cast<int>(r % 3));
    for (int64_t i = 0; i < in; ++i) z[r * in + i] = (k(rng) + u(rng)) * step;
    z[r * in + (r * 7) % in] = (r % 2 ? -127 : 127) * step;
  }
  const Vec x = testing::rotate_rows(z, rows, in, group);  // R R = I: x R = z
  return std::vector<float>(x.begin(), x.end());
}

TEST(ConvRotFile, EachLinearMatchesFloat64W8A8) {
  ComfyDit dit;
  cpu::ThreadPool pool(2);
  for (int group : {64, 256}) {
    ComfyFileReference writer{ComfyFileReference::Format::kConvRot, group};
    const auto file = dit.out.path() / ("dit-" + std::to_string(group) + ".safetensors");
    writer.write(file, dit.source, dit.convrot_linears(group), kDitPrefix);
    const WeightStore store = ComfyDit::store(file);
    double worst = 0, least_weight_only = 1;
    for (const auto& [name, ref] : writer.convrot) {
      const Tensor w = store.require(name, {ref.out, ref.in});
      ASSERT_EQ(w.quant(), WeightQuant::kInt8ConvRot) << name;
      ASSERT_EQ(w.convrot_group(), group) << name;
      const int64_t rows = 37;  // odd, not a tile multiple
      const auto x = rows_away_from_rounding_boundaries(rows, ref.in, group, static_cast<uint32_t>(ref.out + ref.in));
      std::vector<float> y(static_cast<size_t>(rows * ref.out));
      cpu::linear(x.data(), rows, w, y.data(), pool);
      const double err = testing::relative_error(y, testing::w8a8_linear(testing::widen(x), rows, ref));
      EXPECT_LT(err, 1e-5) << name << " group " << group;
      worst = std::max(worst, err);
      // Without the activations' quantization (the dequantized weight in float64) the output is well
      // outside that bound: the comparison sees the W8A8 math.
      const double weight_only = testing::relative_error(
          y, testing::matmul_nt(testing::widen(x), rows, ref.in, testing::convrot_dequantized(ref), ref.out));
      EXPECT_GT(weight_only, 1e-4) << name;
      least_weight_only = std::min(least_weight_only, weight_only);
    }
    // The tiny DiT's Linears: 7 in each of its 2 blocks, 8 outside them; at G256 the two 64 inputs wide
    // (img_in, txt_in's first layer) stay bf16.
    EXPECT_EQ(writer.convrot.size(), group == 64 ? 22u : 20u);
    std::cout << "ConvRot G" << group << ": " << writer.convrot.size() << " Linears, largest relative error against "
              << "float64 W8A8 " << worst << " (against the dequantized weight without W8A8: at least "
              << least_weight_only << ")\n";
  }
}

TEST(ConvRotFile, RendersWithinALevelOfFloat64W8A8AndNearTheUnquantizedModel) {
  ComfyDit dit;
  auto plain = Session::open(dit.model.dir(), "cpu", 2);
  const Tensor text = plain->encode(plain->tokenize(kComfyPrompt));
  const RenderRequest request{kComfyPrompt, 7, kComfySize};
  const auto unquantized = plain->render_embedded(text, request, {}).rgba;
  for (int group : {64, 256}) {
    ComfyFileReference writer{ComfyFileReference::Format::kConvRot, group};
    const auto file = dit.out.path() / ("dit-" + std::to_string(group) + ".safetensors");
    writer.write(file, dit.source, dit.convrot_linears(group), kDitPrefix);
    const auto got = dit.open(file)->render_embedded(text, request, {}).rgba;
    const testing::DitReference w8a8{dit.weights, dit.dir.dit_config(), nullptr, &writer.convrot};
    const auto want = dit.reference(w8a8, text, request.seed, kComfySize);
    const double within = testing::pixels_within(got, want, 1), db = testing::psnr(got, unquantized);
    std::cout << "ConvRot G" << group << " render: " << 100 * within << "% of pixels within 1 level of the float64 "
              << "W8A8 render, " << db << " dB from the unquantized model's (" << testing::psnr(want, unquantized)
              << " dB float64)\n";
    EXPECT_GE(within, 0.99) << "group " << group;
    EXPECT_GE(db, 30.0) << "group " << group;
    EXPECT_NE(got, unquantized);  // the int8 path really ran
  }
}

// The DiT with every Linear (q s) R, widened to F32, as an ordinary model directory.
std::filesystem::path dequantized_model(const ComfyDit& dit, const ComfyFileReference& writer) {
  const auto dir = dit.out.path() / "dequantized";
  std::filesystem::copy(dit.model.dir(), dir, std::filesystem::copy_options::recursive);
  ComfyFileReference::Named tensors;
  for (const auto& [name, t] : dit.source) {
    const auto it = writer.convrot.find(name);
    if (it == writer.convrot.end()) {
      tensors.emplace_back(name, Tensor::from_f32(t.shape(), t.to_f32_vector()));
      continue;
    }
    const Vec w = testing::convrot_dequantized(it->second);
    tensors.emplace_back(name, Tensor::from_f32(t.shape(), std::vector<float>(w.begin(), w.end())));
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir / "transformer"))
    if (entry.path().extension() == ".safetensors") std::filesystem::remove(entry.path());
  write_safetensors(dir / "transformer" / "diffusion_pytorch_model.safetensors", tensors);
  return dir;
}

TEST(ConvRotFile, ALoraOnItMatchesTheSameLoraOnTheFloat64AndTheDequantizedDit) {
  ComfyDit dit;
  TempDir loras;
  tools::write_tiny_loras(loras.path(), dit.dir.dit_config());
  const int group = 256;
  ComfyFileReference writer{ComfyFileReference::Format::kConvRot, group};
  const auto file = dit.out.path() / "dit.safetensors";
  writer.write(file, dit.source, dit.convrot_linears(group), kDitPrefix);
  auto plain = Session::open(dit.model.dir(), "cpu", 2);
  const Tensor text = plain->encode(plain->tokenize(kComfyPrompt));
  RenderRequest request{kComfyPrompt, 7, kComfySize};
  const auto style = loras.path() / "style-diffusers.safetensors";
  request.loras = {{"style", style, 0.9f}};
  auto convrot = dit.open(file);
  const auto got = convrot->render_embedded(text, request, {}).rgba;
  const auto deltas = testing::merged_deltas({{load_lora(style, "style", dit.dir.dit_config()), 0.9}});
  const testing::DitReference w8a8{dit.weights, dit.dir.dit_config(), &deltas, &writer.convrot};
  const auto want = dit.reference(w8a8, text, request.seed, kComfySize);
  const auto dequantized = Session::open(dequantized_model(dit, writer), "cpu", 2)->render_embedded(text, request, {}).rgba;
  RenderRequest without = request;
  without.loras.clear();
  const auto no_lora = convrot->render_embedded(text, without, {}).rgba;
  const double within = testing::pixels_within(got, want, 1), db = testing::psnr(got, dequantized);
  std::cout << "ConvRot G256 with a LoRA: " << 100 * within << "% of pixels within 1 level of the float64 W8A8 render "
            << "with it, " << db << " dB from the dequantized DiT with it; " << testing::psnr(got, no_lora)
            << " dB from the ConvRot render without it\n";
  EXPECT_GE(within, 0.99);
  EXPECT_GE(db, 30.0);
  EXPECT_LT(testing::psnr(got, no_lora), db);  // the LoRA moves the image more than the quantization does
}

TEST(ConvRotFile, ModelQuantizeWritesTheIndependentWritersFile) {
  ComfyDit dit;
  for (int group : {64, 256}) {
    const auto dst = dit.out.path() / ("quantized-" + std::to_string(group));
    const auto r = run_process({RGBAQ_CLI_PATH, "model", "quantize", dit.model.dir().string(), dst.string(), "--format",
                                "int8-convrot", "--group", std::to_string(group), "--components", "transformer"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto quantize = dit.convrot_linears(group);
    EXPECT_NE(r.out.find("transformer: " + std::to_string(quantize.size()) + " Linear weights to int8-convrot"),
              std::string::npos) << r.out;
    ComfyFileReference writer{ComfyFileReference::Format::kConvRot, group};
    testing::expect_same_tensors(dst / "transformer.safetensors", writer.tensors(dit.source, quantize, kDitPrefix),
                                 "values or scales differ, group " + std::to_string(group));
    const SafetensorsFile got = SafetensorsFile::open(dst / "transformer.safetensors");
    EXPECT_EQ(got.metadata(), writer.metadata());
    // ComfyUI's json.dumps of comfy/ops.py's quant_conf, byte for byte.
    const Tensor q = got.tensor("model.diffusion_model.transformer_blocks.0.attn.to_q.comfy_quant");
    EXPECT_EQ(std::string(static_cast<const char*>(q.data()), q.nbytes()),
              "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": " + std::to_string(group) + "}");
    EXPECT_EQ(got.tensor("model.diffusion_model.transformer_blocks.0.attn.to_q.weight_scale").shape(), (Shape{256, 1}));
  }
  // A group that is not a power of four, and a group for FP8, are usage errors.
  auto r = run_process({RGBAQ_CLI_PATH, "model", "quantize", dit.model.dir().string(), (dit.out.path() / "g48").string(),
                        "--format", "int8-convrot", "--group", "48"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--group: \"48\" is not a power of four >= 4"), std::string::npos) << r.err;
  r = run_process({RGBAQ_CLI_PATH, "model", "quantize", dit.model.dir().string(), (dit.out.path() / "f").string(), "--format",
                   "fp8-scaled", "--group", "64"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--group is for --format int8-convrot"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dit.out.path() / "g48"));
}

// From an rgbaq int8 model (`model quantize` with no --format: int8 values with a bf16 scale per 32
// inputs), the ConvRot file is the one the independent writer makes from those weights dequantized here
// by the int8 form's own definition (q * bf16 scale), not from the raw int8 codes.
TEST(ConvRotFile, ModelQuantizeFromAnInt8ModelStartsFromItsDequantizedWeights) {
  ComfyDit dit;
  const auto int8_dir = dit.out.path() / "int8";
  auto r = run_process({RGBAQ_CLI_PATH, "model", "quantize", dit.model.dir().string(), int8_dir.string(), "--components",
                        "transformer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto int8_store = WeightStore::open(int8_dir / "transformer");
  ComfyFileReference::Named dequantized;
  for (const auto& [name, t] : dit.source) {
    const Tensor stored = int8_store.get(name);
    if (stored.dtype() != DType::kI8) {
      dequantized.emplace_back(name, stored);
      continue;
    }
    const Tensor scales = int8_store.get(name + "_scale");
    const int64_t rows = stored.dim(0), in = stored.dim(1), columns = scales.dim(1);
    const auto* q = static_cast<const int8_t*>(stored.data());
    const auto* s = static_cast<const uint16_t*>(scales.data());
    std::vector<float> w(static_cast<size_t>(rows * in));
    for (int64_t o = 0; o < rows; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        const uint32_t bits = uint32_t{s[o * columns + i / 32]} << 16;  // bf16 -> fp32: the high half
        float scale;
        std::memcpy(&scale, &bits, 4);
        w[static_cast<size_t>(o * in + i)] = float(q[o * in + i]) * scale;  // exact in fp32
      }
    }
    dequantized.emplace_back(name, Tensor::from_f32(stored.shape(), std::move(w)));
  }
  const auto dst = dit.out.path() / "from-int8";
  r = run_process({RGBAQ_CLI_PATH, "model", "quantize", int8_dir.string(), dst.string(), "--format", "int8-convrot", "--group",
                   "64", "--components", "transformer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ComfyFileReference writer{ComfyFileReference::Format::kConvRot, 64};
  testing::expect_same_tensors(dst / "transformer.safetensors",
                               writer.tensors(dequantized, dit.convrot_linears(64), kDitPrefix), "values or scales differ");
}

// The writer's file with one tensor replaced (or added), for the broken-file cases.
struct Broken {
  std::string tensor;  // the tensor at fault, as the file names it
  std::string field;   // what the error must also name
  std::function<void(ComfyFileReference::Named&)> edit;
};

void replace(ComfyFileReference::Named& t, const std::string& name, Tensor value) {
  for (auto& [n, v] : t)
    if (n == name) v = std::move(value);
}

TEST(ConvRotFile, BrokenFilesAreRefusedAtOpenNamingTheTensorAndTheField) {
  ComfyDit dit;
  const std::string m = std::string(kDitPrefix) + "transformer_blocks.1.img_mlp.out";  // [256, 768]
  const auto scales = [](std::vector<float> v, Shape s) { return Tensor::from_f32(std::move(s), std::move(v)); };
  const std::vector<Broken> cases = {
      {m + ".comfy_quant", "JSON", [&](auto& t) { replace(t, m + ".comfy_quant", testing::u8_bytes("{\"format\": int8")); }},
      {m + ".comfy_quant", "convrot_groupsize",
       [&](auto& t) { replace(t, m + ".comfy_quant", testing::u8_bytes(testing::convrot_config_json(48))); }},
      {m + ".weight", "convrot_groupsize",  // a power of four that does not divide 768
       [&](auto& t) { replace(t, m + ".comfy_quant", testing::u8_bytes(testing::convrot_config_json(1024))); }},
      {m + ".weight_scale", "shape", [&](auto& t) { replace(t, m + ".weight_scale", scales(std::vector<float>(257, 1e-3f), {257, 1})); }},
      {m + ".weight_scale", "nan at index 5",
       [&](auto& t) {
         std::vector<float> v(256, 1e-3f);
         v[5] = std::nanf("");
         replace(t, m + ".weight_scale", scales(v, {256, 1}));
       }},
      {m + ".weight_scale", "0.000000 at index 9",
       [&](auto& t) {
         std::vector<float> v(256, 1e-3f);
         v[9] = 0.0f;
         replace(t, m + ".weight_scale", scales(v, {256, 1}));
       }},
      {m + ".weight", "[256, 512]", [&](auto& t) { replace(t, m + ".weight", Tensor::zeros(DType::kI8, {256, 512})); }},
  };
  ComfyFileReference writer{ComfyFileReference::Format::kConvRot, 256};
  const auto good = writer.tensors(dit.source, dit.convrot_linears(256), kDitPrefix);
  write_safetensors(dit.out.path() / "good.safetensors", good, writer.metadata());
  ASSERT_NO_THROW(dit.open(dit.out.path() / "good.safetensors"));  // what each case changes is all that is wrong
  int n = 0;
  for (const Broken& c : cases) {
    auto tensors = good;
    c.edit(tensors);
    const auto file = dit.out.path() / ("broken-" + std::to_string(n++) + ".safetensors");
    write_safetensors(file, tensors, writer.metadata());
    const std::string error = dit.open_error(file);
    ASSERT_FALSE(error.empty()) << c.tensor << " (" << c.field << "): opened";
    std::cout << "refused: " << error << "\n";
    std::string lower = error;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    // The tensor by its name under the key prefix (the schema's checks name it as the engine does).
    EXPECT_NE(error.find(c.tensor.substr(std::string(kDitPrefix).size())), std::string::npos) << error;
    EXPECT_NE(error.find(file.string()), std::string::npos) << error;
    EXPECT_TRUE(error.find(c.field) != std::string::npos || lower.find(c.field) != std::string::npos) << c.field << ": " << error;
  }
}

}  // namespace
}  // namespace rgbaq::engine
