// ComfyUI's single files and quantized Linears as the engine reads them (engine/model/comfy_quant.h,
// comfy_keys.h, component_files.h): every refusal names the tensor and the field; a ConvRot / FP8 file
// with ComfyUI's prefixes loads through the key table; the effective weights against float64 references
// built from the formats' definitions (the Kronecker-power Hadamard, the E4M3 code table by hand).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cpu/linear.h"
#include "engine/model/comfy_keys.h"
#include "engine/model/comfy_quant.h"
#include "engine/model/component_files.h"
#include "engine/model/model_directory.h"
#include "engine/model/model_identity.h"
#include "engine/model/safetensors.h"
#include "engine/model/weight_schema.h"
#include "engine/model/weight_store.h"
#include "tests/engine/comfy_vae_names.h"
#include "tests/engine/comfy_writer_reference.h"
#include "tests/engine/tiny_model_fixture.h"
#include "tests/engine/w8a8_reference.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::engine {
namespace {

using Named = std::vector<std::pair<std::string, Tensor>>;

using testing::u8_bytes;

Tensor i8_values(int64_t out, int64_t in, int seed) {
  Tensor t = Tensor::zeros(DType::kI8, {out, in});
  auto* q = static_cast<int8_t*>(t.mutable_data());
  for (int64_t i = 0; i < out * in; ++i) q[i] = static_cast<int8_t>((i * 37 + seed * 11) % 255 - 127);
  return t;
}

Tensor f32(Shape shape, std::vector<float> v) { return Tensor::from_f32(std::move(shape), std::move(v)); }

std::vector<float> row_scales(int64_t out) {
  std::vector<float> s;
  for (int64_t o = 0; o < out; ++o) s.push_back(0.001f * static_cast<float>(o + 1));
  return s;
}

// One ConvRot module "M" [out, in]: weight, [out, 1] scales (ComfyUI's form), comfy_quant.
void add_convrot(Named& t, const std::string& m, int64_t out, int64_t in, int group, int seed = 0) {
  t.emplace_back(m + ".weight", i8_values(out, in, seed));
  t.emplace_back(m + ".weight_scale", f32({out, 1}, row_scales(out)));
  t.emplace_back(m + ".comfy_quant",
                 u8_bytes(testing::convrot_config_json(group)));
}

// The error opening `file` as a one-file store with names as they are, or "" when it opens.
std::string open_error(const std::filesystem::path& file) {
  try {
    WeightStore::open_file(file, [](const std::string& k) { return k; });
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

class ComfyRefusal : public ::testing::Test {
 protected:
  // Writes M = "blk.lin" as ConvRot [8, 16] G4 with `edit` applied to the tensors first, and opens it.
  std::string refusal(const std::function<void(Named&)>& edit, const std::map<std::string, std::string>& metadata = {}) {
    Named t;
    add_convrot(t, "blk.lin", 8, 16, 4);
    edit(t);
    const auto file = dir_.path() / ("f" + std::to_string(n_++) + ".safetensors");
    write_safetensors(file, t, metadata);
    return open_error(file);
  }
  static void replace(Named& t, const std::string& name, Tensor value) {
    for (auto& [n, v] : t)
      if (n == name) v = std::move(value);
  }
  static void erase(Named& t, const std::string& name) {
    std::erase_if(t, [&](const auto& e) { return e.first == name; });
  }
  TempDir dir_;
  int n_ = 0;
};

#define EXPECT_HAS(message, part) EXPECT_NE((message).find(part), std::string::npos) << (message)

TEST_F(ComfyRefusal, TheUntouchedModuleOpens) { EXPECT_EQ(refusal([](Named&) {}), ""); }

TEST_F(ComfyRefusal, ComfyQuantThatIsNotJsonOrNotAnObject) {
  std::string e = refusal([](Named& t) { replace(t, "blk.lin.comfy_quant", u8_bytes("{\"format\": int8")); });
  EXPECT_HAS(e, "tensor \"blk.lin.comfy_quant\"");
  EXPECT_HAS(e, "is not JSON");
  e = refusal([](Named& t) { replace(t, "blk.lin.comfy_quant", u8_bytes("[\"int8_tensorwise\"]")); });
  EXPECT_HAS(e, "tensor \"blk.lin.comfy_quant\": is not a JSON object");
  e = refusal([](Named& t) { replace(t, "blk.lin.comfy_quant", u8_bytes("{\"convrot\": true}")); });
  EXPECT_HAS(e, "tensor \"blk.lin.comfy_quant\": field \"format\" is missing");
  e = refusal([](Named& t) { replace(t, "blk.lin.comfy_quant", Tensor::zeros(DType::kI8, {4})); });
  EXPECT_HAS(e, "tensor \"blk.lin.comfy_quant\": is I8 [4], expected U8");
}

TEST_F(ComfyRefusal, AComfyQuantOver64KiB) {
  const std::string big = R"({"format": "float8_e4m3fn", "pad": ")" + std::string(64 * 1024, 'x') + "\"}";
  const std::string e = refusal([&](Named& t) { replace(t, "blk.lin.comfy_quant", u8_bytes(big)); });
  EXPECT_HAS(e, "tensor \"blk.lin.comfy_quant\": holds 65");
  EXPECT_HAS(e, "a comfy_quant is 1 to 65536");
}

TEST_F(ComfyRefusal, UnknownFormats) {
  std::string e = refusal([](Named& t) { replace(t, "blk.lin.comfy_quant", u8_bytes(R"({"format": "nvfp4"})")); });
  EXPECT_HAS(e, "tensor \"blk.lin.comfy_quant\": field \"format\": \"nvfp4\" is not a format rgbaq reads");
  e = refusal([](Named& t) { replace(t, "blk.lin.comfy_quant", u8_bytes(R"({"format": "int8_tensorwise", "convrot": 1})")); });
  EXPECT_HAS(e, "tensor \"blk.lin.comfy_quant\": field \"convrot\" is not true or false");
}

// int8_tensorwise without ConvRot (what a ConvRot writer leaves where G does not divide the width): q * s.
TEST(ComfyRowInt8, IsWidenedToQTimesS) {
  TempDir dir;
  Named t;
  t.emplace_back("lin.weight", i8_values(3, 6, 5));
  t.emplace_back("lin.weight_scale", f32({3, 1}, {0.5f, 0.25f, 2.0f}));
  t.emplace_back("lin.comfy_quant", u8_bytes(R"({"format": "int8_tensorwise"})"));
  write_safetensors(dir.path() / "rows.safetensors", t);
  const WeightStore store = WeightStore::open_file(dir.path() / "rows.safetensors", [](const std::string& k) { return k; });
  const Tensor w = store.require("lin.weight", {3, 6});
  ASSERT_EQ(w.dtype(), DType::kF32);
  const auto* q = static_cast<const int8_t*>(t[0].second.data());
  const float s[3] = {0.5f, 0.25f, 2.0f};
  for (int64_t i = 0; i < 18; ++i) EXPECT_EQ(w.f32()[i], q[i] * s[i / 6]) << i;
}

TEST_F(ComfyRefusal, GroupSizesThatAreNotPowersOfFourOrDoNotDivideTheWidth) {
  for (int g : {0, 1, 2, 8, 32, 48, -4}) {
    const std::string e = refusal([&](Named& t) {
      replace(t, "blk.lin.comfy_quant",
              u8_bytes(R"({"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": )" + std::to_string(g) + "}"));
    });
    EXPECT_HAS(e, "tensor \"blk.lin.comfy_quant\": field \"convrot_groupsize\": " + std::to_string(g) + " is not a power of four");
  }
  const std::string e = refusal([](Named& t) {  // 64 is a power of four, but the width is 16
    replace(t, "blk.lin.comfy_quant", u8_bytes(R"({"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 64})"));
  });
  EXPECT_HAS(e, "tensor \"blk.lin.weight\": field \"convrot_groupsize\": 64 does not divide the width 16");
}

TEST_F(ComfyRefusal, ScalesOfTheWrongShapeOrDtype) {
  std::string e = refusal([](Named& t) { replace(t, "blk.lin.weight_scale", f32({9}, row_scales(9))); });
  EXPECT_HAS(e, "tensor \"blk.lin.weight_scale\": has shape [9], expected [8], [8, 1] or one scale");
  e = refusal([](Named& t) { replace(t, "blk.lin.weight_scale", f32({8, 2}, std::vector<float>(16, 0.1f))); });
  EXPECT_HAS(e, "tensor \"blk.lin.weight_scale\": has shape [8, 2]");
  e = refusal([](Named& t) { replace(t, "blk.lin.weight_scale", i8_values(8, 1, 3)); });
  EXPECT_HAS(e, "tensor \"blk.lin.weight_scale\": dtype I8 is not a floating-point scale");
  e = refusal([](Named& t) { erase(t, "blk.lin.weight_scale"); });
  EXPECT_HAS(e, "tensor \"blk.lin.weight_scale\" is missing (int8_tensorwise module \"blk.lin\")");
}

TEST_F(ComfyRefusal, NanInfZeroAndNegativeScales) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 0.0f, -0.5f}) {
    const std::string e = refusal([&](Named& t) {
      std::vector<float> s = row_scales(8);
      s[5] = bad;
      replace(t, "blk.lin.weight_scale", f32({8, 1}, s));
    });
    EXPECT_HAS(e, "tensor \"blk.lin.weight_scale\": value ");
    EXPECT_HAS(e, " at index 5 is not a finite positive scale");
  }
}

TEST_F(ComfyRefusal, Int8WeightsOfTheWrongShapeOrDtype) {
  std::string e = refusal([](Named& t) { replace(t, "blk.lin.weight", f32({8, 16}, std::vector<float>(128, 0.5f))); });
  EXPECT_HAS(e, "tensor \"blk.lin.weight\": is F32 [8, 16], expected I8 [out, in] (int8_tensorwise module \"blk.lin\")");
  e = refusal([](Named& t) {
    Tensor flat = Tensor::zeros(DType::kI8, {128});
    replace(t, "blk.lin.weight", flat);
  });
  EXPECT_HAS(e, "tensor \"blk.lin.weight\": is I8 [128], expected I8 [out, in]");
  // An FP8 module whose weight is int8.
  e = refusal([](Named& t) {
    replace(t, "blk.lin.comfy_quant", u8_bytes(R"({"format": "float8_e4m3fn"})"));
    replace(t, "blk.lin.weight_scale", f32({}, {0.5f}));
  });
  EXPECT_HAS(e, "tensor \"blk.lin.weight\": is I8 [8, 16], expected F8_E4M3 [out, in] (float8_e4m3fn module \"blk.lin\")");
}

TEST_F(ComfyRefusal, QuantizationMetadataIsCheckedTheSameWay) {
  const auto drop_config = [](Named& t) { erase(t, "blk.lin.comfy_quant"); };
  std::string e = refusal(drop_config, {{"_quantization_metadata", "{layers"}});
  EXPECT_HAS(e, "__metadata__ field \"_quantization_metadata\": is not JSON");
  e = refusal(drop_config, {{"_quantization_metadata", R"({"format_version": "1.0", "layers": {"blk.lin": {"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 8}}})"}});
  EXPECT_HAS(e, "layers[\"blk.lin\"]: field \"convrot_groupsize\": 8 is not a power of four");
  e = refusal(drop_config, {{"_quantization_metadata", R"({"layers": {"other": {"format": "float8_e4m3fn"}}})"}});
  EXPECT_HAS(e, "layers[\"other\"]: names a layer whose weight \"other.weight\" the file does not hold");
  // Named with or without the file's prefix, a layer is found.
  EXPECT_EQ(refusal(drop_config, {{"_quantization_metadata", R"({"layers": {"blk.lin": {"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 4}}})"}}), "");
  EXPECT_EQ(refusal(drop_config, {{"_quantization_metadata", R"({"layers": {"lin": {"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 16}}})"}}), "");
}

TEST_F(ComfyRefusal, AQuantizedWeightWhoseShapeIsNotTheSchemas) {
  Named t;
  add_convrot(t, "blk.lin", 8, 16, 4);
  const auto file = dir_.path() / "shape.safetensors";
  write_safetensors(file, t);
  const WeightStore store = WeightStore::open_file(file, [](const std::string& k) { return k; });
  try {
    store.require("blk.lin.weight", {8, 32});
    FAIL() << "no refusal";
  } catch (const std::runtime_error& e) {
    EXPECT_HAS(std::string(e.what()), "tensor \"blk.lin.weight\" has shape [8, 16], expected [8, 32]");
  }
}

TEST(ComfyConvRot, TheEffectiveWeightIsQTimesSTimesR) {
  for (int group : {4, 16, 64}) {
    const int64_t out = 5, in = 64;
    const Tensor q = i8_values(out, in, group);
    const Tensor w = Tensor::with_scales(q, f32({out, 1}, row_scales(out)), WeightQuant::kInt8ConvRot, group);
    EXPECT_EQ(w.scales()->shape(), Shape{out});
    const std::vector<float> got = w.to_f32_vector();
    const auto* codes = static_cast<const int8_t*>(q.data());
    const std::vector<double> effective =
        testing::convrot_dequantized({out, in, group, std::vector<int8_t>(codes, codes + out * in), row_scales(out)});
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t j = 0; j < in; ++j) {
        const double want = effective[o * in + j];
        ASSERT_NEAR(got[o * in + j], want, 1e-6 * std::max(1.0, std::fabs(want))) << "G" << group << " row " << o << " col " << j;
      }
    }
  }
}

TEST(ComfyFp8, DequantizationIsTheCodesValueTimesTheScale) {
  // By hand: 0x38 is exponent 7 (2^0), mantissa 0: 1.0; 0x3c: 1 + 4/8 = 1.5; 0x40: 2^1 = 2.0; 0x01: the
  // smallest subnormal 2^-9; 0xb8: -1.0; 0x7e: 2^8 * (1 + 6/8) = 448; 0x00: 0.
  const std::vector<uint8_t> codes = {0x38, 0x3c, 0x40, 0x01, 0xb8, 0x7e, 0x00, 0x30};
  const std::vector<double> value = {1.0, 1.5, 2.0, 0.001953125, -1.0, 448.0, 0.0, 0.5};
  Tensor raw = Tensor::zeros(DType::kF8E4M3, {2, 4});
  std::memcpy(raw.mutable_data(), codes.data(), codes.size());
  const std::vector<float> per_tensor = Tensor::with_scales(raw, f32({}, {0.25f}), WeightQuant::kFp8Scaled).to_f32_vector();
  const std::vector<float> per_row = Tensor::with_scales(raw, f32({2, 1}, {0.5f, 3.0f}), WeightQuant::kFp8Scaled).to_f32_vector();
  for (size_t i = 0; i < codes.size(); ++i) {
    EXPECT_EQ(per_tensor[i], value[i] * 0.25) << i;
    EXPECT_EQ(per_row[i], value[i] * (i < 4 ? 0.5 : 3.0)) << i;
  }
  // The CPU Linear dequantizes a tile at a time: y = x W^T with W as above.
  const Tensor w = Tensor::with_scales(raw, f32({2}, {0.5f, 3.0f}), WeightQuant::kFp8Scaled);
  const std::vector<float> x = {1.0f, -2.0f, 0.5f, 4.0f};
  std::vector<float> y(2);
  cpu::ThreadPool pool(2);
  cpu::linear(x.data(), 1, w, y.data(), pool);
  EXPECT_FLOAT_EQ(y[0], 0.5f * (1.0f * 1.0f - 2.0f * 1.5f + 0.5f * 2.0f + 4.0f * 0.001953125f));
  EXPECT_FLOAT_EQ(y[1], 3.0f * (-1.0f * 1.0f - 2.0f * 448.0f + 0.0f + 4.0f * 0.5f));
}

TEST(ComfyConvRot, LinearsThatShareAnInputGiveWhatEachGivesAlone) {
  const int64_t rows = 7, in = 64;
  std::vector<float> x(static_cast<size_t>(rows * in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * (i % 9 == 0 ? 6.0f : 1.0f);
  const std::vector<Tensor> weights = {
      Tensor::with_scales(i8_values(12, in, 1), f32({12}, row_scales(12)), WeightQuant::kInt8ConvRot, 16),
      Tensor::with_scales(i8_values(20, in, 2), f32({20}, row_scales(20)), WeightQuant::kInt8ConvRot, 64),
      f32({3, in}, std::vector<float>(3 * in, 0.25f)),
      Tensor::with_scales(i8_values(9, in, 3), f32({9}, row_scales(9)), WeightQuant::kInt8ConvRot, 16),
  };
  cpu::ThreadPool pool(2);
  cpu::ConvRotRows packed;
  cpu::SharedInput shared(x.data(), rows, in, packed, pool);
  for (const Tensor& w : weights) {
    std::vector<float> alone(static_cast<size_t>(rows * w.dim(0))), together(alone.size());
    cpu::linear(x.data(), rows, w, alone.data(), pool);
    shared.linear(w, together.data(), w.dim(0));
    EXPECT_EQ(alone, together) << weight_quant_name(w.quant());
  }
}

TEST(ComfyKeys, WanVaeNamesMapToDiffusersNames) {
  const std::map<std::string, std::string> expected = {
      {"conv2.weight", "post_quant_conv.weight"},
      {"conv1.bias", "quant_conv.bias"},
      {"decoder.conv1.weight", "decoder.conv_in.weight"},
      {"decoder.middle.0.residual.0.gamma", "decoder.mid_block.resnets.0.norm1.gamma"},
      {"decoder.middle.0.residual.2.weight", "decoder.mid_block.resnets.0.conv1.weight"},
      {"decoder.middle.1.to_qkv.bias", "decoder.mid_block.attentions.0.to_qkv.bias"},
      {"decoder.middle.1.norm.gamma", "decoder.mid_block.attentions.0.norm.gamma"},
      {"decoder.middle.2.residual.3.gamma", "decoder.mid_block.resnets.1.norm2.gamma"},
      {"decoder.middle.2.residual.6.bias", "decoder.mid_block.resnets.1.conv2.bias"},
      {"decoder.upsamples.1.upsamples.0.shortcut.weight", "decoder.up_blocks.1.resnets.0.conv_shortcut.weight"},
      {"decoder.upsamples.2.upsamples.2.residual.6.weight", "decoder.up_blocks.2.resnets.2.conv2.weight"},
      {"decoder.upsamples.0.upsamples.3.resample.1.weight", "decoder.up_blocks.0.upsampler.resample.1.weight"},
      {"decoder.upsamples.0.upsamples.3.time_conv.bias", "decoder.up_blocks.0.upsampler.time_conv.bias"},
      {"decoder.head.0.gamma", "decoder.norm_out.gamma"},
      {"decoder.head.2.weight", "decoder.conv_out.weight"},
      {"first_stage_model.decoder.head.2.bias", "decoder.conv_out.bias"},
      {"encoder.downsamples.0.downsamples.0.residual.0.gamma", "encoder.downsamples.0.downsamples.0.residual.0.gamma"},
  };
  for (const auto& [wan, ours] : expected) EXPECT_EQ(comfy_key_to_engine(ComfyComponent::kVae, wan), ours) << wan;
  for (const char* unknown : {"decoder.middle.3.residual.0.gamma", "decoder.upsamples.0.residual.0.gamma",
                              "decoder.middle.0.residual.1.gamma", "decoder.head.1.weight", "model.diffusion_model.x"}) {
    EXPECT_EQ(comfy_key_to_engine(ComfyComponent::kVae, unknown), std::nullopt) << unknown;
  }
  EXPECT_EQ(comfy_key_to_engine(ComfyComponent::kDit, "model.diffusion_model.transformer_blocks.3.attn.to_q.comfy_quant"),
            "transformer_blocks.3.attn.to_q.comfy_quant");
  EXPECT_EQ(comfy_key_to_engine(ComfyComponent::kDit, "diffusion_model.proj_out.weight"), "proj_out.weight");
  EXPECT_EQ(comfy_key_to_engine(ComfyComponent::kDit, "model.diffusion_model.pos_embed.weight"), std::nullopt);
  EXPECT_EQ(comfy_key_to_engine(ComfyComponent::kTextEncoder, "text_encoders.qwen3vl.transformer.model.layers.0.mlp.up_proj.weight"),
            "model.layers.0.mlp.up_proj.weight");
  EXPECT_EQ(comfy_key_to_engine(ComfyComponent::kTextEncoder, "model.visual.blocks.0.attn.qkv.weight"),
            "model.visual.blocks.0.attn.qkv.weight");
  EXPECT_EQ(comfy_key_to_engine(ComfyComponent::kTextEncoder, "logit_scale"), std::nullopt);
}

// The tiny model's VAE written in Wan's names (built here from the layout, not from the table): every
// schema tensor is found through the table.
TEST(ComfyKeys, ATinyWanVaeFileCoversTheVaeSchema) {
  TinyModel model;
  const WeightStore ours = WeightStore::open(model.dir() / "vae");
  const VaeConfig config = load_vae_config(model.dir() / "vae" / "config.json");
  Named wan;
  for (const std::string& name : ours.names())
    wan.emplace_back("first_stage_model." + rgbaq::testing::wan_vae_name(name, config.num_res_blocks), ours.get(name));
  TempDir dir;
  write_safetensors(dir.path() / "wan_vae.safetensors", wan);
  const WeightStore store = open_component_file("vae", dir.path() / "wan_vae.safetensors");
  const ComponentReport report = check_component(store, vae_schema(config));
  EXPECT_EQ(report.used, static_cast<int64_t>(vae_schema(config).tensors.size()));
  EXPECT_EQ(report.tensors, static_cast<int64_t>(ours.size()));
}

// The tiny model's DiT as a ComfyUI file: "model.diffusion_model." before every name, the blocks'
// Linears ConvRot G64, the other Linears FP8 with a per-tensor scale, the rest as stored.
std::filesystem::path write_comfy_dit(const std::filesystem::path& model_dir, const std::filesystem::path& file,
                                      bool unknown_tensor = false) {
  const WeightStore ours = WeightStore::open(model_dir / "transformer");
  const DitConfig config = load_dit_config(model_dir / "transformer" / "config.json");
  std::map<std::string, WeightRole> roles;
  for (const WeightSpec& s : dit_schema(config).tensors) roles[s.name] = s.role;
  Named t;
  const std::string p = "model.diffusion_model.";
  for (const std::string& name : ours.names()) {
    const Tensor w = ours.get(name);
    if (roles.count(name) == 0 || roles.at(name) != WeightRole::kLinear) {
      t.emplace_back(p + name, w);
      continue;
    }
    const std::string m = p + name.substr(0, name.size() - 7);
    if (name.starts_with("transformer_blocks.")) {
      add_convrot(t, m, w.dim(0), w.dim(1), 64, static_cast<int>(t.size()));
    } else {
      Tensor codes = Tensor::zeros(DType::kF8E4M3, w.shape());
      auto* c = static_cast<uint8_t*>(codes.mutable_data());
      for (int64_t i = 0; i < w.numel(); ++i) c[i] = static_cast<uint8_t>(0x30 + i % 16);
      t.emplace_back(m + ".weight", codes);
      t.emplace_back(m + ".weight_scale", f32({}, {0.01f}));
      t.emplace_back(m + ".input_scale", f32({}, {1.0f}));
      t.emplace_back(m + ".comfy_quant", u8_bytes(R"({"format": "float8_e4m3fn"})"));
    }
  }
  if (unknown_tensor) t.emplace_back(p + "pos_embed.weight", f32({2}, {1, 2}));
  write_safetensors(file, t);
  return file;
}

TEST(ComfySingleFile, AComfyDitFileStandsInForTheTransformer) {
  TinyModel model;
  TempDir dir;
  const auto file = write_comfy_dit(model.dir(), dir.path() / "tiny_dit_int8_convrot.safetensors");
  const ModelDirectory opened = ModelDirectory::open(model.dir(), ComponentFiles{file, {}, {}});
  const ComponentReport& dit = opened.reports().at(1);
  ASSERT_EQ(dit.component, "transformer");
  EXPECT_EQ(dit.dir, file);
  // 2 blocks x 7 Linears ConvRot; img_in, txt_in (2), the time embedder (2), modulation, norm_out, proj_out FP8.
  EXPECT_EQ(dit.linear_formats, (std::map<std::string, int64_t>{{"int8-convrot G64", 14}, {"fp8-scaled", 8}}));
  EXPECT_EQ(linear_formats_summary(dit), "fp8-scaled: 8 linears, int8-convrot G64: 14 linears");
  EXPECT_EQ(dit.ignored, 0);
  EXPECT_TRUE(dit.int8_linears.empty());  // not rgbaq's int8 blocks
  const WeightStore store = opened.open_weights("transformer");
  const Tensor q = store.require("transformer_blocks.1.attn.to_q.weight", {256, 256});
  EXPECT_EQ(q.quant(), WeightQuant::kInt8ConvRot);
  EXPECT_EQ(q.convrot_group(), 64);
  EXPECT_EQ(store.require("proj_out.weight", {64, 256}).quant(), WeightQuant::kFp8Scaled);

  const ComponentFileDescription d = describe_component_file(file);
  EXPECT_EQ(d.format, "fp8-scaled (8 linears) + int8-convrot G64 (14 linears) + bf16");
  EXPECT_EQ(d.bytes, std::filesystem::file_size(file));
  EXPECT_EQ(d.identity, file_identity(file));

  // The identities follow the file: with it, without it, and after it changes.
  const std::string with_file = model_identity(model.dir(), ComponentFiles{file, {}, {}});
  EXPECT_NE(with_file, model_identity(model.dir()));
  EXPECT_EQ(text_encoder_identity(model.dir(), ComponentFiles{file, {}, {}}), text_encoder_identity(model.dir()));
  write_comfy_dit(model.dir(), file, /*unknown_tensor=*/true);
  EXPECT_NE(model_identity(model.dir(), ComponentFiles{file, {}, {}}), with_file);
}

TEST(ComfySingleFile, UnknownAndMissingTensorsAreRefusedByName) {
  TinyModel model;
  TempDir dir;
  const auto file = write_comfy_dit(model.dir(), dir.path() / "dit.safetensors", /*unknown_tensor=*/true);
  try {
    ModelDirectory::open(model.dir(), ComponentFiles{file, {}, {}});
    FAIL() << "no refusal";
  } catch (const InvalidModel& e) {
    EXPECT_HAS(std::string(e.what()), file.string() + ": tensor \"model.diffusion_model.pos_embed.weight\" is not a tensor of this component");
  }
  // A file without proj_out.
  const WeightStore ours = WeightStore::open(model.dir() / "transformer");
  Named t;
  for (const std::string& name : ours.names())
    if (name != "proj_out.weight") t.emplace_back("model.diffusion_model." + name, ours.get(name));
  write_safetensors(file, t);
  try {
    ModelDirectory::open(model.dir(), ComponentFiles{file, {}, {}});
    FAIL() << "no refusal";
  } catch (const InvalidModel& e) {
    EXPECT_HAS(std::string(e.what()), file.string() + ": tensor \"proj_out.weight\" is missing");
  }
  EXPECT_THROW(ModelDirectory::open({}, ComponentFiles{file, file, file}), InvalidModel);
}

TEST(ComfySingleFile, AComfyTextEncoderFileStandsInForTheTextEncoder) {
  TinyModel model;
  TempDir dir;
  const WeightStore ours = WeightStore::open(model.dir() / "text_encoder");
  Named t;
  const std::string p = "text_encoders.qwen3vl.transformer.";
  int quantized = 0;
  for (const std::string& name : ours.names()) {
    const Tensor w = ours.get(name);
    if (name.find(".layers.") != std::string::npos && name.ends_with("_proj.weight")) {
      add_convrot(t, p + name.substr(0, name.size() - 7), w.dim(0), w.dim(1), 16, quantized++);
    } else {
      t.emplace_back(p + name, w);
    }
  }
  const auto file = dir.path() / "qwen3vl_tiny_int8_convrot.safetensors";
  write_safetensors(file, t);
  const ModelDirectory opened = ModelDirectory::open(model.dir(), ComponentFiles{{}, file, {}});
  const ComponentReport& text = opened.reports().at(0);
  ASSERT_EQ(text.component, "text_encoder");
  EXPECT_EQ(quantized, 2 * 7);  // 2 layers x q, k, v, o, gate, up, down
  EXPECT_EQ(text.linear_formats, (std::map<std::string, int64_t>{{"int8-convrot G16", 14}}));
  EXPECT_NE(text_encoder_identity(model.dir(), ComponentFiles{{}, file, {}}), text_encoder_identity(model.dir()));
}

TEST(ComfySafetensors, F8E4M3AndU8TensorsAndTheMetadataAreWrittenAndRead) {
  TempDir dir;
  Tensor codes = Tensor::zeros(DType::kF8E4M3, {2});
  static_cast<uint8_t*>(codes.mutable_data())[1] = 0x3c;  // 1.5
  const auto path = dir.path() / "f8.safetensors";
  write_safetensors(path, {{"w", codes}, {"w.comfy_quant", u8_bytes("{}")}}, {{"_quantization_metadata", "{\"layers\": {}}"}});
  // The header as the format defines it, parsed here: dtype names and __metadata__ strings.
  std::ifstream in(path, std::ios::binary);
  uint8_t len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  std::string header(n, ' ');
  in.read(header.data(), static_cast<std::streamsize>(n));
  const auto h = nlohmann::json::parse(header);
  EXPECT_EQ(h["w"]["dtype"], "F8_E4M3");
  EXPECT_EQ(h["w.comfy_quant"]["dtype"], "U8");
  EXPECT_EQ(h["__metadata__"]["_quantization_metadata"], "{\"layers\": {}}");
  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(file.metadata().at("_quantization_metadata"), "{\"layers\": {}}");
  EXPECT_EQ(file.tensor("w").to_f32_vector(), (std::vector<float>{0.0f, 1.5f}));
  EXPECT_EQ(file.tensor("w.comfy_quant").dtype(), DType::kU8);
}

}  // namespace
}  // namespace rgbaq::engine
