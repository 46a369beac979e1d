// The fused attention kernel (engine/cuda/flash_attention.h) against a float64 softmax attention and
// against the GEMM-based attention it may replace (attention.h), over the masks and shapes the
// sessions use: the encoder's causal GQA, the DiT's block-causal text prefix, key counts that are not a
// multiple of its 64-key blocks, one query; its bf16 output against its fp32 one rounded; then whole renders and velocities with --attention fused
// against gemm. CTest label gpu; each case skips where no CUDA device is visible, which is every machine
// this was written on: none of the device cases has run yet. The refusals run everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "engine/cuda/attention.h"
#include "engine/cuda/attention_plan.h"
#include "engine/cuda/flash_attention.h"
#include "engine/model/dtype.h"
#include "engine/session.h"
#include "tests/engine/cuda_device_test.h"
#include "tests/engine/reference_math.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

namespace rgbaq::engine::cuda {
namespace {

struct Shape {
  const char* name;
  int64_t q_rows, kv_rows, causal_rows;
  int heads, kv_heads, d;
  int64_t pad = 0;  // row strides wider than the heads by this many elements (NaN there)
};

// Tight rows [rows, width] laid out at row stride width + pad, the padding NaN (bf16 0x7fc0).
std::vector<uint16_t> strided(const std::vector<uint16_t>& tight, int64_t rows, int64_t width, int64_t pad) {
  std::vector<uint16_t> out(static_cast<size_t>(rows * (width + pad)), 0x7fc0);
  for (int64_t r = 0; r < rows; ++r) std::copy_n(tight.begin() + r * width, width, out.begin() + r * (width + pad));
  return out;
}

template <typename T>
std::vector<T> tight(const std::vector<T>& rows_strided, int64_t rows, int64_t width, int64_t pad) {
  std::vector<T> out(static_cast<size_t>(rows * width));
  for (int64_t r = 0; r < rows; ++r) std::copy_n(rows_strided.begin() + r * (width + pad), width, out.begin() + r * width);
  return out;
}

// The largest error of any one head's output row relative to that row's own largest value: a row far
// smaller than the first (a causal row averaging many values) is held to its own scale.
double worst_row_error(const std::vector<float>& got, const testing::Vec& want, int64_t vectors, int d) {
  double worst = 0;
  for (int64_t i = 0; i < vectors; ++i) {
    double diff = 0, scale = 1e-6;
    for (int c = 0; c < d; ++c) {
      diff = std::max(diff, std::abs(got[i * d + c] - want[i * d + c]));
      scale = std::max(scale, std::abs(want[i * d + c]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

// bf16 values (as the sessions' q, k, v are) and the same values widened, for the reference.
struct Bf16Values {
  Bf16Values(size_t n, uint32_t seed, float scale) : bits(n), exact(n) {
    const std::vector<float> f = testing::random_floats(n, seed, scale);
    for (size_t i = 0; i < n; ++i) bits[i] = f32_to_bf16(f[i]), exact[i] = bf16_to_f32(bits[i]);
  }
  std::vector<uint16_t> bits;
  testing::Vec exact;
};

TEST(CudaAttention, FusedMatchesFloat64AndTheGemmPathOverEveryMask) {
  SKIP_WITHOUT_DEVICE(80);
  const Shape shapes[] = {
      {"encoder causal GQA, tiny", 77, 77, 77, 2, 1, 32},
      {"encoder causal GQA, real heads", 200, 200, 200, 32, 8, 128},
      {"DiT block-causal, text 13 + image 150", 163, 163, 13, 2, 2, 128},
      {"DiT block-causal, text 64 + image 256", 320, 320, 64, 4, 4, 128},
      {"no mask, 65 keys (one past a block)", 65, 65, 0, 3, 3, 64},
      {"one query", 1, 1, 1, 2, 2, 64},
      {"more keys than queries", 40, 300, 0, 4, 2, 64},
      {"strided rows, GQA", 90, 90, 90, 4, 2, 32, 16},
  };
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), 0, "stream");
  {
    DeviceArena arena(0, 0);
    Gemm gemm(arena, stream);
    for (const Shape& s : shapes) {
      SCOPED_TRACE(s.name);
      const int64_t q_width = int64_t{s.heads} * s.d, kv_width = int64_t{s.kv_heads} * s.d;
      const Bf16Values q(s.q_rows * q_width, 1, 1.5f), k(s.kv_rows * kv_width, 2, 1.5f), v(s.kv_rows * kv_width, 3, 1.0f);
      const double scale = 1.0 / std::sqrt(double(s.d));
      const testing::Vec want =
          testing::attention(q.exact, k.exact, v.exact, s.q_rows, s.kv_rows, s.heads, s.kv_heads, s.d, s.causal_rows, scale);
      DeviceBuffer dq = upload_values(arena, strided(q.bits, s.q_rows, q_width, s.pad)),
                   dk = upload_values(arena, strided(k.bits, s.kv_rows, kv_width, s.pad)),
                   dv = upload_values(arena, strided(v.bits, s.kv_rows, kv_width, s.pad));
      const int64_t out_elements = s.q_rows * (q_width + s.pad);
      DeviceBuffer fused_out = arena.allocate(out_elements * 4, "fused"), gemm_out = arena.allocate(out_elements * 4, "gemm"),
                   fused_bf16 = arena.allocate(out_elements * 2, "fused, bf16");
      // NaN everywhere first: a row the kernel never writes shows as NaN, not as a near miss.
      for (auto* b : {&fused_out, &gemm_out, &fused_bf16}) check(cudaMemset(b->get(), 0xff, b->bytes()), 0, "NaN fill");
      AttentionArgs a;
      a.q = dq.get(), a.k = dk.get(), a.v = dv.get();
      a.ldq = a.ldo = q_width + s.pad, a.ldk = a.ldv = kv_width + s.pad;
      a.q_rows = s.q_rows, a.kv_rows = s.kv_rows, a.causal_rows = s.causal_rows;
      a.q_heads = s.heads, a.kv_heads = s.kv_heads, a.head_dim = s.d;
      a.scale = static_cast<float>(scale);
      a.out = fused_out.as<float>();
      flash_attention(a, stream);
      check(cudaGetLastError(), 0, "flash_attention launch");
      a.out_bf16 = fused_bf16.get();  // the sessions' form: straight into the next GEMM's input
      flash_attention(a, stream);
      check(cudaGetLastError(), 0, "flash_attention launch (bf16 out)");
      a.out_bf16 = nullptr;
      const int64_t elements = attention_score_elements(s.heads, s.q_rows, s.kv_rows, int64_t{1} << 24);
      DeviceBuffer scores = arena.allocate(elements * 4, "scores"), probs = arena.allocate(elements * 2, "probs");
      a.out = gemm_out.as<float>();
      attention(gemm, ElementType::kBf16, a, {scores.as<float>(), probs.get(), elements}, stream);
      check(cudaStreamSynchronize(stream), 0, "attention");
      const std::vector<float> fused = tight(download<float>(fused_out, out_elements), s.q_rows, q_width, s.pad),
                               reference = tight(download<float>(gemm_out, out_elements), s.q_rows, q_width, s.pad);
      const double fused_error = testing::relative_error(fused, want), gemm_error = testing::relative_error(reference, want);
      const double row_error = worst_row_error(fused, want, s.q_rows * s.heads, s.d);
      std::cout << s.name << ": fused " << fused_error << " (worst head row " << row_error << "), gemm " << gemm_error
                << " relative to float64, fused vs gemm cosine " << testing::cosine(fused, reference) << "\n";
      // P is rounded to bf16 before P V: about 2e-3 of the output's scale (a desk emulation of the kernel).
      EXPECT_LE(fused_error, 5e-3);
      EXPECT_LE(row_error, 2e-2);
      std::vector<uint16_t> rounded(fused.size());
      for (size_t i = 0; i < fused.size(); ++i) rounded[i] = f32_to_bf16(fused[i]);
      EXPECT_EQ(tight(download<uint16_t>(fused_bf16, out_elements), s.q_rows, q_width, s.pad), rounded)
          << "the bf16 output is the fp32 one rounded";
      EXPECT_GE(testing::cosine(fused, reference), 0.9999);
      std::vector<float> want_f(want.begin(), want.end());
      EXPECT_GE(testing::cosine(fused, want_f), 0.9999);
    }
  }
  cudaStreamDestroy(stream);
}

std::unique_ptr<Session> open_cuda(const std::filesystem::path& model, AttentionKernel attention) {
  EngineOptions o;
  o.backend = "cuda";
  o.attention = attention;
  return Session::open(model, o);
}

TEST(CudaAttention, AFusedRenderIsWithin30DbOfTheGemmOne) {
  SKIP_WITHOUT_DEVICE(80);
  TempDir dir;
  tools::TinyModelOptions options;
  options.tokenizer_json = std::filesystem::path(RGBAQ_SOURCE_DIR_PATH) / "tokenizer/data/qwen3/tokenizer.json";
  tools::write_tiny_model(dir.path() / "model", options);
  const RenderRequest request{"a red fox, game asset", 7, {256, 192}};
  auto fused = open_cuda(dir.path() / "model", AttentionKernel::kFused);
  EXPECT_NE(fused->device_description().find("fused attention"), std::string::npos) << fused->device_description();
  const auto got = fused->render(request);
  const auto want = open_cuda(dir.path() / "model", AttentionKernel::kGemm)->render(request);
  const double db = testing::psnr(got.rgba, want.rgba);
  std::cout << "fused attention render vs gemm: " << db << " dB PSNR\n";
  EXPECT_GE(db, 30.0);
}

// What require_fused_attention throws for `shape` in `type`, or "accepted".
std::string open_refusal(const AttentionArgs& shape, ElementType type, const std::string& graph) {
  try {
    require_fused_attention(shape, type, graph);
    return "accepted";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

// Host side: what the kernel cannot take is refused at session open, naming the graph and the reason.
TEST(CudaAttention, WhatTheFusedKernelCannotTakeIsRefusedByName) {
  AttentionArgs a;
  a.ldq = a.ldk = a.ldv = a.ldo = 256;
  a.q_heads = a.kv_heads = 2, a.head_dim = 128;
  EXPECT_EQ(flash_attention_refusal(a), "");
  EXPECT_EQ(open_refusal(a, ElementType::kBf16, "the DiT"), "accepted");
  EXPECT_EQ(open_refusal(a, ElementType::kF32, "the DiT"), "the DiT: fused attention takes bf16 (not the fp32 precision)");
  AttentionArgs odd = a;
  odd.head_dim = 96;
  EXPECT_EQ(open_refusal(odd, ElementType::kBf16, "the text encoder"),
            "the text encoder: fused attention cannot take head dim 96 (it takes 32, 64 or 128)");
  AttentionArgs grouped = a;
  grouped.kv_heads = 3;
  EXPECT_EQ(flash_attention_refusal(grouped), "2 query heads over 3 key/value heads");
  AttentionArgs strided = a;
  strided.ldk = 260;
  EXPECT_EQ(flash_attention_refusal(strided), "row strides 256, 260, 256 (each a multiple of 8 elements)");
  AttentionArgs narrow = a;
  narrow.ldv = 128;
  EXPECT_EQ(flash_attention_refusal(narrow), "row strides narrower than the heads (q 256, out 256 for 256; k 256, v 128 for 256)");
  alignas(16) static const uint16_t values[16] = {};
  AttentionArgs misaligned = a;
  misaligned.q = values + 1;
  EXPECT_EQ(flash_attention_refusal(misaligned), "q, k or v not 16-byte aligned");
  AttentionArgs odd_out = a;
  odd_out.ldo = 257;
  EXPECT_EQ(flash_attention_refusal(odd_out), "") << "fp32 output: any stride";
  alignas(4) static uint16_t out[4] = {};
  odd_out.out_bf16 = out;
  EXPECT_EQ(flash_attention_refusal(odd_out), "a bf16 output not in aligned pairs (ldo odd)");
}

}  // namespace
}  // namespace rgbaq::engine::cuda
