// Every CPU kernel against a float64 naive implementation, on random inputs of awkward sizes (not
// multiples of the block sizes): error relative to the reference's scale within 1e-5.
#include <gtest/gtest.h>

#include "engine/cpu/attention.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/linear.h"
#include "engine/cpu/vector_exp.h"
#include "tests/engine/reference_math.h"

namespace rgbaq::engine::cpu {
namespace {

using testing::random_floats;
using testing::relative_error;
using testing::widen;

Tensor weight_as(DType dtype, const std::vector<float>& values, Shape shape) {
  Tensor t = Tensor::zeros(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kF32) static_cast<float*>(t.mutable_data())[i] = values[i];
    if (dtype == DType::kBF16) static_cast<uint16_t*>(t.mutable_data())[i] = f32_to_bf16(values[i]);
  }
  return t;
}

// Runs `check` with the AVX2 kernels (where the CPU has them) and with the portable ones.
template <typename F>
void on_both_paths(F&& check) {
  for (bool portable : {false, true}) {
    SCOPED_TRACE(portable ? "portable path" : "AVX2 path where available");
    avx2_paths_disabled() = portable;
    check();
  }
  avx2_paths_disabled() = false;
}

TEST(Kernels, LinearAllDtypesAwkwardSizes) {
  ThreadPool pool(3);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const int64_t rows = 37, in = 131, out = 300;  // out crosses the 256-row widening tile
    const auto x = random_floats(rows * in, 1);
    const auto w = random_floats(out * in, 2);
    const Tensor wt = weight_as(dtype, w, {out, in});
    std::vector<float> y(rows * out);
    linear(x.data(), rows, wt, y.data(), pool);
    // The reference multiplies by the weights as stored (bf16-rounded for BF16).
    EXPECT_LT(relative_error(y, testing::matmul_nt(widen(x), rows, in, widen(wt.to_f32_vector()), out)), 1e-5)
        << dtype_name(dtype);
  }
  Tensor f16 = Tensor::zeros(DType::kF16, {3, 2});
  auto* h = static_cast<uint16_t*>(f16.mutable_data());
  h[0] = 0x3c00, h[1] = 0x4000, h[2] = 0xbc00, h[3] = 0, h[4] = 0x3800, h[5] = 0x3800;  // [[1, 2], [-1, 0], [.5, .5]]
  const std::vector<float> x = {3, 4};
  std::vector<float> y(3);
  linear(x.data(), 1, f16, y.data(), pool);
  EXPECT_EQ(y, (std::vector<float>{11, -3, 3.5f}));
}

TEST(Kernels, NormsAndActivations) {
  ThreadPool pool(2);
  const int64_t rows = 13, dim = 97;
  const auto x = random_floats(rows * dim, 3, 3.0f);
  const auto w = random_floats(dim, 4);
  std::vector<float> y(x.size());
  rms_norm(x.data(), rows, dim, w.data(), 0.0f, 1e-6f, y.data(), pool);
  EXPECT_LT(relative_error(y, testing::rms_norm(widen(x), rows, dim, widen(w), 0.0, 1e-6)), 1e-5);
  rms_norm(x.data(), rows, dim, w.data(), 1.0f, 1e-6f, y.data(), pool);
  EXPECT_LT(relative_error(y, testing::rms_norm(widen(x), rows, dim, widen(w), 1.0, 1e-6)), 1e-5);
  layer_norm(x.data(), rows, dim, 1e-6f, y.data(), pool);
  EXPECT_LT(relative_error(y, testing::layer_norm(widen(x), rows, dim, 1e-6)), 1e-5);

  const auto u = random_floats(x.size(), 5);
  testing::Vec want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = testing::silu(x[i]) * u[i];
  on_both_paths([&] {  // 1261 values: the vector loop's tail too
    auto g = x;
    swiglu(g.data(), u.data(), static_cast<int64_t>(g.size()), pool);
    EXPECT_LT(relative_error(g, want), 1e-5);
  });
  auto t = x;
  gelu_tanh(t.data(), static_cast<int64_t>(t.size()), pool);
  for (size_t i = 0; i < x.size(); ++i) want[i] = testing::gelu_tanh(x[i]);
  EXPECT_LT(relative_error(t, want), 1e-5);
}

TEST(Kernels, RopeBothLayouts) {
  ThreadPool pool(2);
  const int64_t rows = 11;
  const int heads = 3, d = 10;
  const auto x = random_floats(rows * heads * d, 6);
  std::vector<float> cos(rows * d / 2), sin(cos.size());
  for (size_t i = 0; i < cos.size(); ++i) cos[i] = static_cast<float>(std::cos(0.37 * i)), sin[i] = static_cast<float>(std::sin(0.37 * i));
  testing::Vec half(x.size()), inter(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h)
      for (int j = 0; j < d / 2; ++j) {
        const double c = cos[r * d / 2 + j], s = sin[r * d / 2 + j];
        const int64_t base = (r * heads + h) * d;
        // rotate-half: (x_j, x_{j+d/2}) as a complex number times e^{i angle}
        half[base + j] = x[base + j] * c - x[base + j + d / 2] * s;
        half[base + j + d / 2] = x[base + j + d / 2] * c + x[base + j] * s;
        inter[base + 2 * j] = x[base + 2 * j] * c - x[base + 2 * j + 1] * s;
        inter[base + 2 * j + 1] = x[base + 2 * j] * s + x[base + 2 * j + 1] * c;
      }
  auto a = x, b = x;
  rope_rotate_half(a.data(), rows, heads * d, heads, d, cos.data(), sin.data(), pool);
  rope_interleaved(b.data(), rows, heads * d, heads, d, cos.data(), sin.data(), pool);
  EXPECT_LT(relative_error(a, half), 1e-6);
  EXPECT_LT(relative_error(b, inter), 1e-6);
}

void check_attention(int64_t q_rows, int64_t kv_rows, int heads, int kv_heads, int d, int64_t causal_rows, int threads) {
  ThreadPool pool(threads);
  const auto q = random_floats(q_rows * heads * d, 7, 2.0f);
  const auto k = random_floats(kv_rows * kv_heads * d, 8, 2.0f);
  const auto v = random_floats(kv_rows * kv_heads * d, 9);
  std::vector<float> out(q.size());
  AttentionShape s;
  s.q_rows = q_rows, s.kv_rows = kv_rows, s.q_heads = heads, s.kv_heads = kv_heads, s.head_dim = d;
  s.q_stride = s.out_stride = heads * d;
  s.k_stride = s.v_stride = kv_heads * d;
  s.causal_rows = causal_rows;
  s.scale = static_cast<float>(1 / std::sqrt(double(d)));
  attention(q.data(), k.data(), v.data(), out.data(), s, pool);
  const auto want = testing::attention(widen(q), widen(k), widen(v), q_rows, kv_rows, heads, kv_heads, d, causal_rows, s.scale);
  EXPECT_LT(relative_error(out, want), 1e-5) << q_rows << "x" << kv_rows << " causal " << causal_rows;
}

TEST(Kernels, AttentionCausalGroupedAndBlockCausal) {
  on_both_paths([] {
    check_attention(77, 77, 4, 2, 40, 77, 2);     // causal, grouped-query, awkward sizes
    check_attention(300, 300, 2, 1, 64, 300, 3);  // several key blocks
    check_attention(150, 181, 2, 2, 24, 31, 2);   // the DiT's block-causal: 31 causal text rows, then all keys
    check_attention(5, 333, 1, 1, 128, 0, 1);     // few queries over many keys
    // Past one 256 x 256 block both ways, neither a multiple of it nor of 8; causal rows end mid-block.
    check_attention(517, 581, 2, 1, 33, 259, 2);
  });
}

#if RGBAQ_HAVE_AVX2_PATH
RGBAQ_AVX2_FMA void vector_exp_for_test(const float* x, float* e, float* s) {
  const __m256 v = _mm256_loadu_ps(x);
  _mm256_storeu_ps(e, exp8(v));
  _mm256_storeu_ps(s, silu8(v));
}
#endif

// exp and SiLU, scalar and eight at a time, against float64 over the range softmax and SiLU reach.
TEST(Kernels, VectorExpAndSiluMatchFloat64) {
  std::vector<float> xs;
  for (double x = -87.0; x <= 88.0; x += 0.0137) xs.push_back(static_cast<float>(x));
  xs.insert(xs.end(), {0.0f, -0.0f, 1e-7f, -1e-7f, 88.0f, -87.0f});
  double worst_exp = 0, worst_silu = 0;
  auto check = [&](float x, float e, float s) {
    worst_exp = std::max(worst_exp, std::abs(e - std::exp(double(x))) / std::exp(double(x)));
    const double silu = x / (1.0 + std::exp(-double(x)));
    worst_silu = std::max(worst_silu, std::abs(s - silu) / std::max(1.0, std::abs(silu)));
  };
  for (float x : xs) check(x, exp_clamped(x), silu_fast(x));
  EXPECT_LT(worst_exp, 1e-6);
  EXPECT_LT(worst_silu, 1e-6);
  // Outside the range exp clamps: tiny, never 0 or a denormal; large, never inf.
  EXPECT_EQ(exp_clamped(-1000.0f), exp_clamped(-87.0f));
  EXPECT_TRUE(std::isfinite(exp_clamped(1000.0f)));
  EXPECT_NEAR(silu_fast(-1000.0f), 0.0f, 1e-30f);
  EXPECT_EQ(silu_fast(1000.0f), 1000.0f);
#if RGBAQ_HAVE_AVX2_PATH
  if (!avx2_fma_available()) GTEST_SKIP() << "this CPU has no AVX2 + FMA: the eight-wide kernels are not used here";
  worst_exp = worst_silu = 0;
  for (size_t i = 0; i + 8 <= xs.size(); i += 8) {
    float e[8], s[8];
    vector_exp_for_test(xs.data() + i, e, s);
    for (int j = 0; j < 8; ++j) check(xs[i + j], e[j], s[j]);
  }
  EXPECT_LT(worst_exp, 1e-6);
  EXPECT_LT(worst_silu, 1e-6);
#endif
}

TEST(Kernels, AttentionIsIdenticalAcrossThreadCounts) {
  const int64_t n = 2048;
  const auto q = random_floats(n * 128, 10), k = random_floats(n * 128, 11), v = random_floats(n * 128, 12);
  AttentionShape s;
  s.q_rows = s.kv_rows = n, s.q_heads = s.kv_heads = 1, s.head_dim = 128;
  s.q_stride = s.k_stride = s.v_stride = s.out_stride = 128;
  s.scale = 0.088f;
  std::vector<float> a(q.size()), b(q.size());
  ThreadPool one(1), three(3);
  attention(q.data(), k.data(), v.data(), a.data(), s, one);
  attention(q.data(), k.data(), v.data(), b.data(), s, three);
  EXPECT_EQ(a, b);
}

TEST(ThreadPool, RunsEveryTaskOnce) {
  ThreadPool pool(4);
  std::vector<int> hits(1000, 0);
  for (int round = 0; round < 20; ++round) pool.run(1000, [&](int64_t t) { ++hits[t]; });
  for (int h : hits) ASSERT_EQ(h, 20);
  std::atomic<int64_t> total{0};
  pool.parallel_for(12345, 100, [&](int64_t a, int64_t b) { total += b - a; });
  EXPECT_EQ(total.load(), 12345);
}

}  // namespace
}  // namespace rgbaq::engine::cpu
