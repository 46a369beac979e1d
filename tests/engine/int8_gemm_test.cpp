// The int8 GEMM (engine/cpu/int8_gemm.h) and the ConvRot W8A8 Linear (engine/cpu/w8a8_linear.h) against
// independent references: every kernel this CPU supports against a naive int64 product, exactly, on
// shapes that are not multiples of any block (m, n, k odd; k not a multiple of 4 or 64; strided rows),
// with the extreme codes (+-127 and -128: an I8 weight file can hold -128, and the kernels take the full
// int8 range, exactly); the W8A8 Linear against a float64 reference that does the same math (rotation by
// the Kronecker-defined R, both row quantizations, exact integer products, the two scales) within 1e-5
// relative, and with identical bits for 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/cpu/int8_gemm.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/w8a8_linear.h"
#include "tests/engine/w8a8_reference.h"

namespace rgbaq::engine::cpu {
namespace {

constexpr Int8GemmKernel kAllKernels[] = {Int8GemmKernel::kScalar, Int8GemmKernel::kAvx2, Int8GemmKernel::kAvxVnni,
                                          Int8GemmKernel::kAvx512Vnni};

struct Problem {
  int64_t m, n, k, lda, ldb, ldc;
  std::vector<int8_t> a, b;
};

Problem random_problem(int64_t m, int64_t n, int64_t k, int64_t pad, std::mt19937& rng) {
  Problem p{m, n, k, k + pad, k + 2 * pad, n + pad, {}, {}};
  std::uniform_int_distribution<int> byte(-128, 127);
  p.a.resize(static_cast<size_t>(std::max<int64_t>(1, m * p.lda)));
  p.b.resize(static_cast<size_t>(std::max<int64_t>(1, n * p.ldb)));
  for (int8_t& v : p.a) v = static_cast<int8_t>(byte(rng));
  for (int8_t& v : p.b) v = static_cast<int8_t>(byte(rng));
  return p;
}

std::vector<int64_t> naive_product(const Problem& p) {
  std::vector<int64_t> c(static_cast<size_t>(p.m * p.n));
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t j = 0; j < p.n; ++j) {
      int64_t s = 0;
      for (int64_t i = 0; i < p.k; ++i) s += int64_t{p.a[r * p.lda + i]} * int64_t{p.b[j * p.ldb + i]};
      c[r * p.n + j] = s;
    }
  return c;
}

// Runs one kernel; the output's padding must stay untouched.
void expect_exact(Int8GemmKernel kernel, const Problem& p) {
  const int32_t sentinel = 0x5a5a5a5a;
  std::vector<int32_t> c(static_cast<size_t>(std::max<int64_t>(1, p.m * p.ldc)), sentinel);
  int8_gemm_nt_with(kernel, p.m, p.n, p.k, p.a.data(), p.lda, p.b.data(), p.ldb, c.data(), p.ldc, nullptr);
  const std::vector<int64_t> want = naive_product(p);
  for (int64_t r = 0; r < p.m; ++r) {
    for (int64_t j = 0; j < p.n; ++j) {
      ASSERT_EQ(c[r * p.ldc + j], want[r * p.n + j]) << int8_gemm_kernel_name(kernel) << " m " << p.m << " n " << p.n
                                                     << " k " << p.k << " at (" << r << ", " << j << ")";
    }
    for (int64_t j = p.n; j < p.ldc; ++j) ASSERT_EQ(c[r * p.ldc + j], sentinel) << "wrote past n";
  }
}

TEST(Int8Gemm, TheChosenKernelIsSupportedAndNamed) {
  EXPECT_TRUE(int8_gemm_kernel_supported(int8_gemm_best_kernel()));
  EXPECT_TRUE(int8_gemm_kernel_supported(Int8GemmKernel::kScalar));
  EXPECT_STREQ(int8_gemm_kernel_name(), int8_gemm_kernel_name(int8_gemm_best_kernel()));
  std::printf("int8 GEMM kernel on this CPU: %s\n", int8_gemm_kernel_name());
}

TEST(Int8Gemm, EverySupportedKernelEqualsTheNaiveProductOnOddShapes) {
  std::mt19937 rng(39);
  const int64_t shapes[][4] = {{1, 1, 1, 0},    {7, 13, 5, 3},  {6, 64, 256, 0},   {13, 130, 67, 1},
                               {37, 93, 1001, 7}, {65, 200, 3, 0}, {11, 17, 4099, 2}, {2, 250, 130, 0}};
  for (Int8GemmKernel kernel : kAllKernels) {
    if (!int8_gemm_kernel_supported(kernel)) {
      std::printf("skipping %s: not supported on this CPU\n", int8_gemm_kernel_name(kernel));
      continue;
    }
    for (const auto& s : shapes) expect_exact(kernel, random_problem(s[0], s[1], s[2], s[3], rng));
  }
}

TEST(Int8Gemm, ExtremeCodesAreExact) {
  std::mt19937 rng(7);
  for (Int8GemmKernel kernel : kAllKernels) {
    if (!int8_gemm_kernel_supported(kernel)) continue;
    for (int a_value : {127, -127, -128}) {
      for (int b_value : {127, -127, -128}) {
        Problem p = random_problem(7, 70, 4096 + 3, 1, rng);
        std::fill(p.a.begin(), p.a.end(), static_cast<int8_t>(a_value));
        std::fill(p.b.begin(), p.b.end(), static_cast<int8_t>(b_value));
        expect_exact(kernel, p);
        // and by hand: every entry is a * b * k
        std::vector<int32_t> c(static_cast<size_t>(p.m * p.ldc));
        int8_gemm_nt_with(kernel, p.m, p.n, p.k, p.a.data(), p.lda, p.b.data(), p.ldb, c.data(), p.ldc, nullptr);
        ASSERT_EQ(c[0], a_value * b_value * p.k) << int8_gemm_kernel_name(kernel);
      }
    }
  }
}

TEST(Int8Gemm, GivenRowSumsMatchComputedOnes) {
  std::mt19937 rng(3);
  const Problem p = random_problem(19, 77, 515, 0, rng);
  std::vector<int32_t> sums(static_cast<size_t>(p.m)), c(static_cast<size_t>(p.m * p.ldc));
  int8_row_sums(p.a.data(), p.m, p.k, p.lda, sums.data());
  for (int64_t r = 0; r < p.m; ++r) {
    int64_t s = 0;
    for (int64_t i = 0; i < p.k; ++i) s += p.a[r * p.lda + i];
    ASSERT_EQ(sums[r], s);
  }
  int8_gemm_nt(p.m, p.n, p.k, p.a.data(), p.lda, p.b.data(), p.ldb, c.data(), p.ldc, sums.data());
  const std::vector<int64_t> want = naive_product(p);
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t j = 0; j < p.n; ++j) ASSERT_EQ(c[r * p.ldc + j], want[r * p.n + j]);
}

TEST(Int8Gemm, RefusesBadShapes) {
  int8_t a[4] = {}, b[4] = {};
  int32_t c[4] = {};
  EXPECT_THROW(int8_gemm_nt(1, 1, 4, a, 3, b, 4, c, 1), std::invalid_argument);  // lda < k
  EXPECT_THROW(int8_gemm_nt(1, 2, 4, a, 4, b, 4, c, 1), std::invalid_argument);  // ldc < n
}

// ---- The W8A8 Linear against float64.

struct Reference {
  std::vector<int> codes;  // [rows, cols]
  std::vector<float> scales;
  std::vector<double> y;   // [rows, out]
};

// The W8A8 math in float64: the row scale is the fp32 value absmax / 127 (ComfyUI's, floored at 1e-30;
// the scale is an fp32 number by definition), codes = round half to even of x R / s, clamped to +-127,
// the products exact in int64 and the scales applied in float64.
Reference reference_w8a8(const std::vector<float>& x, int64_t rows, int64_t ldx, int64_t cols, int g,
                         const std::vector<int8_t>& w, const std::vector<float>& w_scales, int64_t out) {
  Reference ref;
  ref.codes.resize(static_cast<size_t>(rows * cols));
  ref.scales.resize(static_cast<size_t>(rows));
  ref.y.resize(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    // x R in float64, R the Kronecker power of H4 / 2 per group of g (tests/engine/w8a8_reference.h).
    const float* row = x.data() + r * ldx;
    const std::vector<double> xr = rgbaq::testing::rotate_rows(std::vector<double>(row, row + cols), 1, cols, g);
    double max_abs = 0;
    for (double v : xr) max_abs = std::max(max_abs, std::fabs(v));
    const float s = std::max(static_cast<float>(max_abs) / 127.0f, 1e-30f);
    ref.scales[r] = s;
    for (int64_t i = 0; i < cols; ++i) {
      // The quotient is fp32 by the format's definition (ComfyUI divides fp32 tensors): an exact quotient
      // of 63.4999999 that fp32 rounds to 63.5 is a tie, and goes to even.
      const double q = std::nearbyint(double(static_cast<float>(xr[i]) / s));  // ties to even
      ref.codes[r * cols + i] = static_cast<int>(std::clamp(q, -127.0, 127.0));
    }
    for (int64_t o = 0; o < out; ++o) {
      int64_t acc = 0;
      for (int64_t i = 0; i < cols; ++i) acc += int64_t{ref.codes[r * cols + i]} * w[o * cols + i];
      ref.y[r * out + o] = double(acc) * double(s) * double(w_scales[o]);
    }
  }
  return ref;
}

struct Case {
  int64_t rows, cols, out;
  int group;
};

TEST(W8A8Linear, MatchesTheFloat64W8A8Reference) {
  std::mt19937 rng(2039);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(-127, 127);
  std::uniform_real_distribution<float> scale(1e-4f, 1e-2f);
  ThreadPool pool(2);
  for (const Case& c : {Case{19, 512, 300, 64}, Case{19, 512, 300, 256}, Case{7, 64, 65, 4}, Case{33, 768, 129, 16}}) {
    const int64_t ldx = c.cols + 3;
    std::vector<float> x(static_cast<size_t>(c.rows * ldx));
    // Multiples of 1/64 below 2^6 in magnitude: each butterfly stage (a sum of four, halved) stays exact
    // in fp32, so the fp32 rotation equals the float64 one and both sides quantize the same numbers.
    for (float& v : x) v = std::round(normal(rng) * 64.0f) / 64.0f;
    x[5] = 40.0f;  // an outlier, what the rotation is for
    std::vector<int8_t> w(static_cast<size_t>(c.out * c.cols));
    for (int8_t& v : w) v = static_cast<int8_t>(byte(rng));
    std::vector<float> w_scales(static_cast<size_t>(c.out));
    for (float& v : w_scales) v = scale(rng);
    const Reference ref = reference_w8a8(x, c.rows, ldx, c.cols, c.group, w, w_scales, c.out);

    ConvRotRows packed;
    pack_convrot_rows(x.data(), c.rows, ldx, c.cols, c.group, packed, pool);
    ASSERT_EQ(packed.rows, c.rows);
    ASSERT_EQ(packed.cols, c.cols);
    ASSERT_EQ(packed.group, c.group);
    for (int64_t r = 0; r < c.rows; ++r) {
      ASSERT_EQ(packed.scales[r], ref.scales[r]) << "row " << r << " G " << c.group;
      int64_t sum = 0;
      for (int64_t i = 0; i < c.cols; ++i) {
        ASSERT_EQ(packed.values[r * c.cols + i], ref.codes[r * c.cols + i]) << "row " << r << " col " << i;
        sum += packed.values[r * c.cols + i];
      }
      ASSERT_EQ(packed.row_sums[r], sum);
    }

    const int64_t ldy = c.out + 2;
    std::vector<float> y(static_cast<size_t>(c.rows * ldy), -7.0f);
    w8a8_linear(packed, w.data(), w_scales.data(), c.out, y.data(), ldy, pool);
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t o = 0; o < c.out; ++o) {
        const double want = ref.y[r * c.out + o];
        ASSERT_NEAR(y[r * ldy + o], want, 1e-5 * std::fabs(want) + 1e-30) << "(" << r << ", " << o << ") G " << c.group;
      }
      ASSERT_EQ(y[r * ldy + c.out], -7.0f) << "wrote past out";
    }
  }
}

TEST(W8A8Linear, ResultsDoNotDependOnTheThreadCount) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> byte(-128, 127);
  const int64_t rows = 70, cols = 1024, out = 700;
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (float& v : x) v = normal(rng);
  std::vector<int8_t> w(static_cast<size_t>(out * cols));
  for (int8_t& v : w) v = static_cast<int8_t>(byte(rng));
  std::vector<float> w_scales(static_cast<size_t>(out), 0.003f);
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    ConvRotRows packed;
    pack_convrot_rows(x.data(), rows, cols, cols, 256, packed, pool);
    std::vector<float> y(static_cast<size_t>(rows * out));
    w8a8_linear(packed, w.data(), w_scales.data(), out, y.data(), out, pool);
    results.push_back(std::move(y));
  }
  EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(results[0].data(), results[2].data(), results[0].size() * sizeof(float)), 0);
}

TEST(W8A8Linear, PackRefusesABadGroup) {
  ThreadPool pool(1);
  ConvRotRows packed;
  std::vector<float> x(96, 1.0f);
  EXPECT_THROW(pack_convrot_rows(x.data(), 1, 96, 96, 64, packed, pool), std::invalid_argument);
  EXPECT_THROW(pack_convrot_rows(x.data(), 1, 96, 96, 8, packed, pool), std::invalid_argument);
}

}  // namespace
}  // namespace rgbaq::engine::cpu
