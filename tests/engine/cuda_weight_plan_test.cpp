// What a CUDA session's weights take on the device (engine/cuda/weight_plan.h), per precision and int8
// handling, against sums worked out by hand from the models' dimensions: the tiny model (bf16 and int8)
// Linear by Linear, and the real model's dimensions (hollow checkpoints: headers only), with the table
// of what fits resident, streamed or not at all in 16, 20, 24, 40 and 80 GiB for a 1024 x 1024 render.
// `rgbaq model check`'s cuda rows are these numbers.
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <stdexcept>

#include "engine/cuda/weight_plan.h"
#include "engine/cuda/workspace_plan.h"
#include "engine/model/model_directory.h"
#include "engine/render_memory.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

namespace rgbaq::engine::cuda {
namespace {

ModelDirectory write_model(const TempDir& dir, bool real, bool int8) {
  tools::TinyModelOptions options;
  options.real_dims = real;
  options.hollow = real;  // the real dims' files as headers over holes: made in moments
  options.int8_linears = int8;
  options.tokenizer_json = std::filesystem::path(RGBAQ_SOURCE_DIR_PATH) / "tokenizer/data/qwen3/tokenizer.json";
  tools::write_tiny_model(dir.path() / "model", options);
  return ModelDirectory::open(dir.path() / "model");
}

// Bytes of one Linear [out, in] by format, as worked out for these tests: dense e each; int8 one byte
// and a bf16 scale per 32 inputs; fp8 one byte and an fp32 scale per output row.
int64_t dense(int64_t out, int64_t in, int64_t e = 2) { return out * in * e; }
int64_t int8(int64_t out, int64_t in) { return out * in + out * ((in + 31) / 32) * 2; }
int64_t fp8(int64_t out, int64_t in) { return out * in + out * 4; }

TEST(CudaWeightPlan, TheTinyModelLinearByLinear) {
  // Encoder: hidden 64, 2 layers, q 2 x 32, k/v 1 x 32, MLP 128, vocab 151936 (bf16 embedding);
  // per layer four norms (64, 64, 32, 32 floats). DiT: dim 256 (2 heads of 128), MLP 768, context 64,
  // 2 blocks; globals img_in 256x64, txt_in 256x64, txt_out, time_2, norm_out 256x256, time_1 256x256,
  // modulation 1024x256, proj_out 64x256; norms: txt_in's 64, each block's two of 128.
  const int64_t embed = 151936 * 64 * 2, enc_norms = 2 * (64 + 64 + 32 + 32) * 4, dit_norms = (64 + 2 * 2 * 128) * 4;
  const auto encoder = [&](auto f) { return embed + enc_norms + 2 * (2 * f(64, 64) + 2 * f(32, 64) + 2 * f(128, 64) + f(64, 128)); };
  const auto blocks = [&](auto f) { return 2 * (4 * f(256, 256) + 2 * f(768, 256) + f(256, 768)); };
  const auto others = [&](auto f) {
    return dit_norms + 2 * f(256, 64) + 4 * f(256, 256) + f(1024, 256) + f(64, 256);
  };
  const auto d2 = [](int64_t o, int64_t i) { return dense(o, i); };
  TempDir a, b;
  const ModelDirectory bf16 = write_model(a, false, false), quantized = write_model(b, false, true);
  struct Case {
    const char* name;
    const ModelDirectory& model;
    LinearFormats formats;
    int64_t text_encoder, dit_blocks, dit_other;
  };
  const Case cases[] = {
      {"bf16", bf16, {}, encoder(d2), blocks(d2), others(d2)},
      {"bf16, keep int8 (none stored)", bf16, {false, true}, encoder(d2), blocks(d2), others(d2)},
      {"fp8", bf16, {true, false}, encoder(fp8), blocks(fp8), others(d2)},
      {"int8 model widened", quantized, {}, encoder(d2), blocks(d2), others(d2)},
      {"int8 model kept", quantized, {false, true}, encoder(int8), blocks(int8), others(int8)},
      {"int8 model, fp8", quantized, {true, false}, encoder(fp8), blocks(fp8), others(d2)},
      {"int8 model, fp8, globals kept", quantized, {true, true}, encoder(fp8), blocks(fp8), others(int8)},
  };
  for (const Case& c : cases) {
    const SessionWeightBytes w = session_weight_bytes(c.model, 2, c.formats);
    EXPECT_EQ(w.text_encoder, c.text_encoder) << c.name;
    EXPECT_EQ(w.dit_blocks, c.dit_blocks) << c.name;
    EXPECT_EQ(w.dit_other, c.dit_other) << c.name;
    EXPECT_EQ(w.vae, session_weight_bytes(bf16, 2, {}).vae) << c.name << ": the VAE is bf16 whatever the Linears are";
  }
  // fp32 (the parity mode) doubles every dense element, norms stay fp32.
  const SessionWeightBytes w32 = session_weight_bytes(bf16, 4, {});
  EXPECT_EQ(w32.dit_blocks, 2 * blocks(d2));
  EXPECT_EQ(w32.text_encoder, 2 * (encoder(d2) - enc_norms) + enc_norms);
}

// What making an fp8 Linear holds on the device for a moment (the per-prompt encoder's fit check counts
// it), for the real encoder's largest Linear, gate/up [12288, 4096]: bf16 2 bytes a value; int8 1 byte,
// 128 bf16 scales a row and the fp32 dequantization; f32 4 bytes.
TEST(CudaWeightPlan, Fp8StagingAndTheShapesItTakes) {
  EXPECT_EQ(fp8_staging_bytes(false, true, 12288, 4096), int64_t{100663296});
  EXPECT_EQ(fp8_staging_bytes(true, false, 12288, 4096), int64_t{50331648} + 3145728 + 201326592);
  EXPECT_EQ(fp8_staging_bytes(false, false, 12288, 4096), int64_t{201326592});
  EXPECT_NO_THROW(check_fp8_shape(12288, 4096, "encoder layer 0 gate_proj"));
  EXPECT_NO_THROW(check_fp8_shape(4, 16, "smallest"));
  try {
    check_fp8_shape(64, 72, "DiT block 3 linears");
    ADD_FAILURE() << "72 inputs accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "DiT block 3 linears [64, 72] cannot be an fp8 Linear: its 72 inputs are not a multiple of 16 (use bf16)");
  }
  EXPECT_THROW(check_fp8_shape(66, 64, "x"), std::invalid_argument) << "fp32 output rows of 66 floats are not 16-byte aligned";
}

// The real model's dimensions: encoder hidden 4096, 36 layers, 32 query and 8 key/value heads of 128,
// MLP 12288, vocab 151936; DiT dim 4096, MLP 12288, 32 blocks; the VAE's decoder (base 144, z 64).
struct RealWeights {
  int64_t encoder, blocks, others;
};
RealWeights real_by_hand(int kind) {  // 0 bf16, 1 int8 kept, 2 fp8
  auto f = [kind](int64_t o, int64_t i) { return kind == 0 ? dense(o, i) : kind == 1 ? int8(o, i) : fp8(o, i); };
  auto g = [kind](int64_t o, int64_t i) { return kind == 1 ? int8(o, i) : dense(o, i); };  // globals: never fp8
  const int64_t layer = 2 * f(4096, 4096) + 2 * f(1024, 4096) + 2 * f(12288, 4096) + f(4096, 12288);
  const int64_t encoder = int64_t{151936} * 4096 * 2 + 36 * (layer + (2 * 4096 + 2 * 128) * 4);
  const int64_t blocks = 32 * (4 * f(4096, 4096) + 2 * f(12288, 4096) + f(4096, 12288));
  const int64_t others = g(4096, 64) + 4 * g(4096, 4096) + g(4096, 256) + g(16384, 4096) + g(64, 4096) +
                         (4096 + 32 * 2 * 128) * 4;
  return {encoder, blocks, others};
}

// The VAE decoder at the real dims, conv by conv: post_quant 64x64x1; conv_in 1152x64x3x3; the mid
// block's two res blocks of 1152 (two 3x3 convs each) and its attention (to_qkv 3456x1152, proj
// 1152x1152); up blocks 1152->1152, 1152->1152, 1152->576, 576->288, 288->144 of three res blocks each (a
// 1x1 shortcut where the channels change), the first four with a 3x3 upsampling conv; conv_out 4x144x3x3.
// Floats: every bias, norm and the 2 x 64 latent statistics.
int64_t real_vae_by_hand() {
  const auto res = [](int64_t in, int64_t out) { return out * in * 9 + out * out * 9 + (in != out ? out * in : 0); };
  const auto res_floats = [](int64_t in, int64_t out) { return in + out + out + out + (in != out ? out : 0); };
  int64_t convs = 64 * 64 + 1152 * 64 * 9 + 2 * res(1152, 1152) + 3456 * 1152 + 1152 * 1152 + 4 * 144 * 9;
  int64_t floats = 64 + 1152 + 2 * res_floats(1152, 1152) + 1152 + 3456 + 1152 + 144 + 4 + 2 * 64;
  const int64_t ups[][2] = {{1152, 1152}, {1152, 1152}, {1152, 576}, {576, 288}, {288, 144}};
  for (int i = 0; i < 5; ++i) {
    const int64_t in = ups[i][0], out = ups[i][1];
    convs += res(in, out) + 2 * res(out, out);
    floats += res_floats(in, out) + 2 * res_floats(out, out);
    if (i < 4) convs += out * out * 9, floats += out;
  }
  return convs * 2 + floats * 4;
}

TEST(CudaWeightPlan, TheRealDimsAndWhatFitsWhereAt1024) {
  TempDir a, b;
  const ModelDirectory bf16 = write_model(a, true, false), quantized = write_model(b, true, true);
  const TextEncoderConfig t = tools::real_text_encoder_config();
  const DitConfig d = tools::real_dit_config();
  const VaeConfig v = tools::real_vae_config();
  EXPECT_EQ(session_weight_bytes(bf16, 2, {}).vae, real_vae_by_hand());
  struct Case {
    const char* name;
    const ModelDirectory& model;
    LinearFormats formats;
    int kind;
    SessionFit at[5];  // 16, 20, 24, 40, 80 GiB
    bool lean = false;  // --vae-tiles on --attention fused
  };
  using F = SessionFit;
  // Worked out from the sums below with the 6.43 GiB workspace at 1024 x 1024 (CudaWorkspacePlan):
  // bf16 27.82 GiB of weights, resident from 40 GiB, streamed (encoder 14.10 GiB per prompt) in 24;
  // int8 kept 15.55 GiB + 0.125 GiB of dequantization scratch, resident in 24, streamed in 16 and 20;
  // fp8 14.86 GiB + 56 MiB of input codes and accumulator, resident in 24, streamed in 16 and 20.
  // Lean (the tiled VAE's 0.98 GiB for the untiled 4.75, and fused attention without the 504 MiB of
  // scores and fp32 attention outputs): a 2.17 GiB workspace, so int8 kept and fp8 are resident in 20
  // (17.8 and 17.1 GiB in all) and bf16 streams there.
  const Case cases[] = {
      {"bf16", bf16, {}, 0, {F::kDoesNotFit, F::kDoesNotFit, F::kStreamed, F::kResident, F::kResident}},
      {"int8 kept", quantized, {false, true}, 1, {F::kStreamed, F::kStreamed, F::kResident, F::kResident, F::kResident}},
      {"fp8", bf16, {true, false}, 2, {F::kStreamed, F::kStreamed, F::kResident, F::kResident, F::kResident}},
      {"bf16, lean", bf16, {}, 0, {F::kDoesNotFit, F::kStreamed, F::kStreamed, F::kResident, F::kResident}, true},
      {"int8 kept, lean", quantized, {false, true}, 1, {F::kStreamed, F::kResident, F::kResident, F::kResident, F::kResident}, true},
      {"fp8, lean", bf16, {true, false}, 2, {F::kStreamed, F::kResident, F::kResident, F::kResident, F::kResident}, true},
  };
  // The lean workspace: fused attention drops the DiT's scores (64 Mi elements, fp32 and bf16) and its
  // fp32 attention output (4096 x 4096), the encoder's scores (32 heads x 512 x 512) and its output
  // (512 x 4096); the VAE's share is its tiled plan's (engine/vae_tile_plan.h, held to 1 GiB there).
  const int64_t fused_saves = int64_t{64 << 20} * 6 + int64_t{4096} * 4096 * 4 + int64_t{32} * 512 * 512 * 6 + 512 * 4096 * 4;
  EXPECT_EQ(fused_saves, int64_t{528482304});
  const int64_t vae_untiled = bytes_of(vae_workspace(v, 2, vae_session_plan(v, 2, 4096, false)));
  const int64_t vae_tiled = bytes_of(vae_workspace(v, 2, vae_session_plan(v, 2, 4096, true)));
  EXPECT_LE(vae_tiled, int64_t{1} << 30);
  for (const Case& c : cases) {
    const SessionWeightBytes w = session_weight_bytes(c.model, 2, c.formats);
    const RealWeights hand = real_by_hand(c.kind);
    EXPECT_EQ(w.text_encoder, hand.encoder) << c.name;
    EXPECT_EQ(w.dit_blocks, hand.blocks) << c.name;
    EXPECT_EQ(w.dit_other, hand.others) << c.name;
    const bool int8_stored = &c.model == &quantized;
    const int64_t reserve =
        session_workspace_bytes(t, d, v, 2, 512, 512, 4096, {c.formats, int8_stored, int8_stored, c.lean, c.lean});
    // int8: the widest Linear (modulation 16384 x 4096) in bf16; fp8: the DiT's widest input (4096 rows of
    // the MLP's 12288) as codes and row scales, and the encoder's o/down_proj output (512 x 4096 floats).
    const int64_t scratch = c.kind == 1   ? int64_t{16384} * 4096 * 2
                            : c.kind == 2 ? int64_t{4096} * 12288 + 4096 * 4 + 512 * 4096 * 4
                                          : 0;
    const int64_t lean_saves = c.lean ? fused_saves + vae_untiled - vae_tiled : 0;
    EXPECT_EQ(reserve, int64_t{6901204992} + scratch - lean_saves) << c.name;
    std::cout << c.name << ": weights " << w.total() / double(1 << 30) << " GiB (encoder " << w.text_encoder / double(1 << 30)
              << "), with the 1024x1024 workspace " << (w.total() + reserve) / double(1 << 30) << " GiB\n";
    const int budgets[] = {16, 20, 24, 40, 80};
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(fit_session(w, d.layers, reserve, int64_t{budgets[i]} << 30), c.at[i]) << c.name << " in " << budgets[i] << " GiB";
    }
  }
}

// --fused-blocks: an int8 DiT kept dequantizes its stacks, gate|up [24576, 4096] the widest (192 MiB in
// bf16, where modulation's 16384 x 4096 was: 128 MiB); fp8's widest input stays the down projection's
// 4096 rows of 12288 (the stacks take 1024-row chunks of 4096).
TEST(CudaWeightPlan, FusedBlocksScratchHoldsTheStacks) {
  const TextEncoderConfig t = tools::real_text_encoder_config();
  const DitConfig d = tools::real_dit_config();
  EXPECT_EQ(linear_scratch(t, d, 2, {false, true}, true, true, 4096, 512, true)[0].bytes, int64_t{24576} * 4096 * 2);
  EXPECT_EQ(linear_scratch(t, d, 2, {false, true}, true, true, 4096, 512, false)[0].bytes, int64_t{16384} * 4096 * 2);
  EXPECT_EQ(linear_scratch(t, d, 2, {true, false}, false, false, 4096, 512, true)[1].bytes, int64_t{4096} * 12288);
}

// Issue 21's memory goal, in the plan: with the VAE tiled, the attention fused and the blocks fused, a
// bf16 session's 1024x1024 workspace at real dims is within 2 GiB: the lean 2.17 GiB less the fused
// blocks' 352 MiB (CudaWorkspacePlan), 1.83 GiB. Int8 kept adds its stacks' 192 MiB of scratch.
TEST(CudaWeightPlan, EveryOptInTogetherKeepsTheWorkspaceWithin2GiB) {
  const TextEncoderConfig t = tools::real_text_encoder_config();
  const DitConfig d = tools::real_dit_config();
  const VaeConfig v = tools::real_vae_config();
  const int64_t lean = session_workspace_bytes(t, d, v, 2, 512, 512, 4096, {{}, false, false, true, true, false});
  const int64_t all = session_workspace_bytes(t, d, v, 2, 512, 512, 4096, {{}, false, false, true, true, true});
  EXPECT_EQ(all, lean - (int64_t{352} << 20));
  EXPECT_EQ(all, int64_t{1961822208});
  EXPECT_LE(all, int64_t{2} << 30);
  const int64_t int8 = session_workspace_bytes(t, d, v, 2, 512, 512, 4096, {{false, true}, true, true, true, true, true});
  EXPECT_EQ(int8, all + int64_t{24576} * 4096 * 2);
}

// `rgbaq model check`'s cuda rows are the plan's: weights as the session makes them at the precision asked.
TEST(CudaWeightPlan, TheModelCheckEstimateIsThePlan) {
  TempDir a;
  const ModelDirectory quantized = write_model(a, true, true);
  for (const auto& [precision, gpu_int8, lean, formats, label] :
       {std::tuple{Precision::kBf16, GpuInt8::kWiden, false, LinearFormats{}, "bf16"},
        std::tuple{Precision::kBf16, GpuInt8::kKeep, false, LinearFormats{false, true}, "bf16, int8 kept"},
        std::tuple{Precision::kFp8, GpuInt8::kWiden, false, LinearFormats{true, false}, "fp8"},
        std::tuple{Precision::kBf16, GpuInt8::kKeep, true, LinearFormats{false, true},
                   "bf16, int8 kept, fused attention, VAE tiled"}}) {
    EngineOptions cuda;
    cuda.precision = precision, cuda.gpu_int8 = gpu_int8, cuda.vae_tiles = lean;
    cuda.attention = lean ? AttentionKernel::kFused : AttentionKernel::kGemm;
    for (const auto& m : estimate_render_memory(quantized, 1, cuda)) {
      if (m.engine != "cuda") continue;
      EXPECT_EQ(m.precision, label);
      EXPECT_EQ(static_cast<int64_t>(m.weights), session_weight_bytes(quantized, 2, formats).total()) << label;
      if (m.size == 1024) {
        EXPECT_EQ(static_cast<int64_t>(m.total() - m.weights),
                  session_workspace_bytes(quantized.text_encoder_config(), quantized.dit_config(), quantized.vae_config(), 2,
                                          512, 512, 4096, {formats, true, true, lean, lean}))
            << label;
      }
    }
  }
}

}  // namespace
}  // namespace rgbaq::engine::cuda
