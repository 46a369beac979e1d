// engine/elementwise_math.h, the math the CUDA kernels run, on the host: against float64 formulas and
// against the CPU kernels that call it, so CI checks the GPU's elementwise math without a GPU.
#include "engine/elementwise_math.h"

#include <gtest/gtest.h>

#include "engine/cpu/kernels.h"
#include "tests/engine/reference_math.h"

namespace rgbaq::engine {
namespace {

constexpr double kFloatTolerance = 4e-7;  // a few fp32 ulps, relative

void expect_close(double got, double want, const char* what, double x) {
  EXPECT_LE(std::abs(got - want), kFloatTolerance * std::max(1.0, std::abs(want))) << what << " at " << x;
}

TEST(ElementwiseMath, ActivationsMatchFloat64) {
  for (float x : testing::random_floats(2000, 3, 12.0f)) {
    expect_close(math::silu(x), testing::silu(x), "silu", x);
    expect_close(math::gelu_tanh(x), testing::gelu_tanh(x), "gelu_tanh", x);
    const float up = x * 0.37f - 1.0f;
    expect_close(math::swiglu(x, up), testing::silu(x) * up, "swiglu", x);
    expect_close(math::modulated(x, 0.25f), double(x) * 1.25, "modulated", x);
    expect_close(math::gated_residual(1.5f, 0.5f, x), 1.5 + 0.5 * double(x), "gated_residual", x);
  }
}

TEST(ElementwiseMath, RopePairIsARotation) {
  const auto v = testing::random_floats(600, 5, 4.0f);
  for (size_t i = 0; i + 2 < v.size(); i += 3) {
    float a = v[i], b = v[i + 1];
    const double angle = v[i + 2];
    math::rope_pair(a, b, static_cast<float>(std::cos(angle)), static_cast<float>(std::sin(angle)));
    expect_close(a, v[i] * std::cos(angle) - v[i + 1] * std::sin(angle), "rope a", angle);
    expect_close(b, v[i + 1] * std::cos(angle) + v[i] * std::sin(angle), "rope b", angle);
  }
}

TEST(ElementwiseMath, NormsMatchFloat64AndTheCpuKernels) {
  const int64_t rows = 7, dim = 96;
  const auto x = testing::random_floats(rows * dim, 9, 3.0f);
  const auto w = testing::random_floats(dim, 10, 1.0f);
  cpu::ThreadPool pool(2);
  for (float offset : {0.0f, 1.0f}) {
    std::vector<float> kernel(x.size());
    cpu::rms_norm(x.data(), rows, dim, w.data(), offset, 1e-6f, kernel.data(), pool);
    const auto want = testing::rms_norm(testing::widen(x), rows, dim, testing::widen(w), offset, 1e-6);
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t i = 0; i < dim; ++i) sum += double(x[r * dim + i]) * x[r * dim + i];
      const float inv = math::rms_inverse(sum, dim, 1e-6);
      for (int64_t i = 0; i < dim; ++i) {
        const float got = math::rms_normed(x[r * dim + i], inv, w[i], offset);
        EXPECT_EQ(got, kernel[r * dim + i]);  // the CPU kernel is this function
        expect_close(got, want[r * dim + i], "rms_norm", double(r));
      }
    }
  }
  std::vector<float> kernel(x.size());
  cpu::layer_norm(x.data(), rows, dim, 1e-6f, kernel.data(), pool);
  const auto want = testing::layer_norm(testing::widen(x), rows, dim, 1e-6);
  for (size_t i = 0; i < x.size(); ++i) expect_close(kernel[i], want[i], "layer_norm", double(i));
}

TEST(ElementwiseMath, ChannelRmsScaleMatchesFloat64) {
  const auto v = testing::random_floats(144, 11, 2.0f);
  double sum = 0;
  for (float f : v) sum += double(f) * f;
  expect_close(math::channel_rms_scale(sum, 12.0f), 12.0 / std::sqrt(sum), "channel_rms_scale", sum);
  EXPECT_EQ(math::channel_rms_scale(0.0, 12.0f), static_cast<float>(12.0 / 1e-12));  // the clamp
}

}  // namespace
}  // namespace rgbaq::engine
