// The CUDA backend's weight formats (issue 22) on a GPU, CTest label gpu: the fp8 row quantizer and the
// int8 dequantizer against the host's functions bit for bit, the FP8 GEMM's per-row scales against a
// float64 product, int8 kept against int8 widened (the same bits) and against the cpu engine's int8
// path, fp8 against bf16 (a tiny render and a real-dims velocity), fp8 streamed against resident, and
// each session's own count of its weights against engine/cuda/weight_plan.h. Each test skips where no
// CUDA device is visible, which is every machine this was written on: none of these has run yet.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>

#include "engine/cuda/cuda_graphs.h"
#include "engine/cuda/device_memory.h"
#include "engine/cuda/gemm.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/weight_plan.h"
#include "engine/model/dtype.h"
#include "engine/model/fp8_e4m3.h"
#include "engine/model/int8_blocks.h"
#include "engine/session.h"
#include "tests/engine/cuda_device_test.h"
#include "tests/engine/cuda_session_test.h"
#include "tests/engine/reference_math.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

namespace rgbaq::engine::cuda {
namespace {

// Rows of very different magnitudes (2^-12 .. 2^12), one all zero; odd column count.
std::vector<float> awkward_rows(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = r == 5 ? 0.0f : std::ldexp(normal(rng), static_cast<int>(r % 25) - 12);
  return x;
}

TEST(CudaFormats, Fp8RowQuantizerMatchesTheHostBitForBit) {
  SKIP_WITHOUT_DEVICE(0);
  const int64_t rows = 37, cols = 1001;
  std::vector<float> x = awkward_rows(rows, cols, 1);
  DeviceArena arena(0, 0);
  for (const ElementType type : {ElementType::kF32, ElementType::kBf16}) {
    std::vector<float> host;
    DeviceBuffer in = upload_rows(arena, type, x, host);
    DeviceBuffer codes = arena.allocate(x.size(), "codes"), scales = arena.allocate(rows * 4, "scales");
    quantize_fp8_rows(in.get(), type, rows, cols, codes.as<uint8_t>(), scales.as<float>(), nullptr);
    check(cudaDeviceSynchronize(), 0, "quantize_fp8_rows");
    std::vector<uint8_t> want_codes(x.size());
    std::vector<float> want_scales(rows);
    fp8::quantize_rows(host.data(), rows, cols, want_codes.data(), want_scales.data());
    EXPECT_EQ(download<uint8_t>(codes, x.size()), want_codes);
    EXPECT_EQ(download<float>(scales, rows), want_scales);
  }
}

TEST(CudaFormats, Int8DequantizationMatchesTheHost) {
  SKIP_WITHOUT_DEVICE(0);
  const int64_t rows = 19, in = 77;  // a short last block in each row
  const std::vector<float> w = awkward_rows(rows, in, 2);
  std::vector<int8_t> q(w.size());
  std::vector<uint16_t> scales(static_cast<size_t>(rows * int8_scale_columns(in)));
  quantize_int8_rows(w.data(), rows, in, q.data(), scales.data());
  std::vector<float> want(w.size());
  dequantize_int8_rows(q.data(), scales.data(), rows, in, want.data());
  DeviceArena arena(0, 0);
  DeviceBuffer dq = upload_values(arena, q), ds = upload_values(arena, scales);
  DeviceBuffer f32 = arena.allocate(w.size() * 4, "f32"), b16 = arena.allocate(w.size() * 2, "bf16");
  dequantize_int8(dq.as<int8_t>(), ds.as<uint16_t>(), rows, in, f32.get(), ElementType::kF32, nullptr);
  dequantize_int8(dq.as<int8_t>(), ds.as<uint16_t>(), rows, in, b16.get(), ElementType::kBf16, nullptr);
  check(cudaDeviceSynchronize(), 0, "dequantize_int8");
  EXPECT_EQ(download<float>(f32, w.size()), want);
  std::vector<uint16_t> want_bf16(want.size());
  for (size_t i = 0; i < want.size(); ++i) want_bf16[i] = f32_to_bf16(want[i]);  // what widening at upload makes
  EXPECT_EQ(download<uint16_t>(b16, w.size()), want_bf16);
}

// Both forms of the FP8 GEMM: cuBLASLt's per-row (outer-vector) scales, and the fallback (an unscaled
// FP8 GEMM and scale_fp8_product) that shapes without such an algorithm take, forced here. Each element
// is held to its own scale, xs[r] ws[o] sum_k |x w| (the rows span 2^48 in magnitude): 1e-3 of it, as
// Hopper's FP8 tensor cores accumulate in fewer bits than fp32. y starts as NaN: beta 0 must not read it.
TEST(CudaFormats, Fp8GemmScalesEachRowOfBothOperandsAgainstFloat64) {
  SKIP_WITHOUT_DEVICE(89);
  const int64_t rows = 96, out = 80, in = 256;
  const std::vector<float> x = awkward_rows(rows, in, 3), w = awkward_rows(out, in, 4);
  std::vector<uint8_t> xc(x.size()), wc(w.size());
  std::vector<float> xs(rows), ws(out);
  fp8::quantize_rows(x.data(), rows, in, xc.data(), xs.data());
  fp8::quantize_rows(w.data(), out, in, wc.data(), ws.data());
  std::vector<double> want(rows * out), magnitude(rows * out);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = 0, abs_sum = 0;
      for (int64_t k = 0; k < in; ++k) {
        const double p = double(fp8::e4m3_to_float(xc[r * in + k])) * fp8::e4m3_to_float(wc[o * in + k]);
        sum += p, abs_sum += std::abs(p);
      }
      want[r * out + o] = sum * xs[r] * ws[o];
      magnitude[r * out + o] = abs_sum * xs[r] * ws[o];
    }
  }
  // The worst error of any element relative to its own magnitude (0 where the row is all zero: exact).
  const auto worst = [&](const std::vector<float>& got, double factor) {
    double e = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const double diff = std::abs(got[i] - factor * want[i]);
      e = std::max(e, magnitude[i] > 0 ? diff / (factor * magnitude[i]) : diff);
      if (std::isnan(got[i])) return double(INFINITY);
    }
    return e;
  };
  DeviceArena arena(0, 0);
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), 0, "stream");
  for (const bool fallback : {false, true}) {
    SCOPED_TRACE(fallback ? "the fallback" : "outer-vector scales (or the fallback where cuBLASLt has none)");
    Gemm gemm(arena, stream);
    gemm.force_fp8_fallback(fallback);
    const bool falls_back = gemm.fp8_falls_back(rows, out, in);
    std::cout << (fallback ? "forced: " : "not forced: ") << (falls_back ? "the fallback" : "outer-vector scales") << "\n";
    EXPECT_TRUE(!fallback || falls_back);
    DeviceBuffer dx = upload_values(arena, xc), dxs = upload_values(arena, xs), dw = upload_values(arena, wc),
                 dws = upload_values(arena, ws), y = arena.allocate(rows * out * 4, "y"),
                 acc = arena.allocate(rows * out * 4, "accumulator");
    check(cudaMemset(y.get(), 0xff, y.bytes()), 0, "NaN fill");
    gemm.linear_fp8(dx.as<uint8_t>(), dxs.as<float>(), rows, dw.as<uint8_t>(), dws.as<float>(), out, in, y.as<float>(), 0.0f,
                    nullptr, 0);
    check(cudaStreamSynchronize(stream), 0, "fp8 GEMM");
    const std::vector<float> got = download<float>(y, rows * out);
    gemm.linear_fp8(dx.as<uint8_t>(), dxs.as<float>(), rows, dw.as<uint8_t>(), dws.as<float>(), out, in, y.as<float>(), 1.0f,
                    acc.as<float>(), rows * out);
    check(cudaStreamSynchronize(stream), 0, "fp8 GEMM, beta 1");
    const std::vector<float> twice = download<float>(y, rows * out);
    std::cout << "  worst element error " << worst(got, 1) << " (beta 1: " << worst(twice, 2) << ") of its magnitude\n";
    EXPECT_LE(worst(got, 1), 1e-3) << "per-row scales applied to the right operand, y not read";
    EXPECT_LE(worst(twice, 2), 1e-3) << "beta 1 accumulates";
    if (fallback) {
      EXPECT_THROW(gemm.linear_fp8(dx.as<uint8_t>(), dxs.as<float>(), rows, dw.as<uint8_t>(), dws.as<float>(), out, in,
                                   y.as<float>(), 1.0f, acc.as<float>(), rows * out - 1),
                   std::logic_error)
          << "an accumulator too small for the fallback is refused, not overrun";
    }
  }
  cudaStreamDestroy(stream);
}

TEST(CudaFormats, Int8KeptRendersTheBytesOfInt8WidenedAndMatchesTheCpuPerGraph) {
  SKIP_WITHOUT_DEVICE(0);
  TempDir dir;
  const auto model = write_model(dir, true);
  const RenderRequest request{"a red fox, game asset", 7, {128, 192}};
  auto kept = open_cuda(model, Precision::kBf16, GpuInt8::kKeep);
  EXPECT_NE(kept->device_description().find("int8 weights kept"), std::string::npos) << kept->device_description();
  // The dequantizer writes bf16(q * s), the bits widening at upload writes: the same GEMMs, the same image.
  EXPECT_EQ(kept->render(request).rgba, open_cuda(model, Precision::kBf16, GpuInt8::kWiden)->render(request).rgba);
  auto cpu = Session::open(model, "cpu", 2);
  const VelocityCase v(13, 64, {128, 128}, 1.0f);
  const auto got = v.velocity(*kept), want = v.velocity(*cpu);
  std::cout << "int8 kept velocity vs cpu int8: relative " << testing::relative_error(got, testing::widen(want)) << ", cosine "
            << testing::cosine(got, want) << "\n";
  EXPECT_LE(testing::relative_error(got, testing::widen(want)), 2e-2);
  EXPECT_GE(testing::cosine(got, want), 0.9999);
}

TEST(CudaFormats, EachSessionsWeightCountIsThePlan) {
  SKIP_WITHOUT_DEVICE(0);
  TempDir a, b;
  const auto bf16 = write_model(a, false), int8 = write_model(b, true);
  struct Case {
    std::filesystem::path model;
    Precision precision;
    GpuInt8 gpu_int8;
  };
  std::vector<Case> cases = {{bf16, Precision::kBf16, GpuInt8::kWiden}, {bf16, Precision::kFp32, GpuInt8::kWiden},
                             {int8, Precision::kBf16, GpuInt8::kWiden}, {int8, Precision::kBf16, GpuInt8::kKeep}};
  std::string why;
  if (device_sm(&why) >= 89) cases.push_back({int8, Precision::kFp8, GpuInt8::kKeep}), cases.push_back({bf16, Precision::kFp8, GpuInt8::kWiden});
  for (const Case& c : cases) {
    auto session = open_cuda(c.model, c.precision, c.gpu_int8);
    const auto& graphs = dynamic_cast<const CudaGraphs&>(session->graphs());
    const auto planned = session_weight_bytes(ModelDirectory::open(c.model), c.precision == Precision::kFp32 ? 4 : 2,
                                              {c.precision == Precision::kFp8, c.gpu_int8 == GpuInt8::kKeep});
    EXPECT_EQ(graphs.weight_bytes(), graphs.planned_weight_bytes()) << session->device_description();
    EXPECT_EQ(static_cast<int64_t>(graphs.weight_bytes()), planned.total()) << session->device_description();
  }
}

TEST(CudaFormats, Fp8RendersWithin30DbOfBf16AndStreamsTheSameBytes) {
  SKIP_WITHOUT_DEVICE(89);
  TempDir dir;
  const auto model = write_model(dir, false);
  const RenderRequest request{"a red fox, game asset", 7, {256, 256}};
  auto fp8 = open_cuda(model, Precision::kFp8, GpuInt8::kWiden);
  EXPECT_EQ(fp8->precision(), "fp8");
  const auto a = fp8->render(request);
  const auto want = open_cuda(model, Precision::kBf16, GpuInt8::kWiden)->render(request);
  const double db = testing::psnr(a.rgba, want.rgba);
  std::cout << "cuda fp8 render vs bf16: " << db << " dB PSNR\n";
  EXPECT_GE(db, 30.0);
  EXPECT_NE(a.rgba, want.rgba) << "fp8 changed nothing: the fp8 path did not run";
  // Streamed blocks are quantized on the host (fp8::quantize_rows), resident ones on the device.
  EXPECT_EQ(open_cuda(model, Precision::kFp8, GpuInt8::kWiden, true)->render(request).rgba, a.rgba);
}

TEST(CudaFormats, Fp8VelocityAtRealDimsHasCosine0_999ToBf16) {
  SKIP_WITHOUT_DEVICE(89);
  TempDir dir;
  const auto model = write_model(dir, false, true);
  const VelocityCase v(64, 4096, {256, 256}, 0.5f);
  // One real-dims session at a time: each is dropped once its velocity is in.
  const auto bf16 = v.velocity(*open_cuda(model, Precision::kBf16, GpuInt8::kWiden, false, 7));
  const auto fp8 = v.velocity(*open_cuda(model, Precision::kFp8, GpuInt8::kWiden, false, 7));
  const double c = testing::cosine(fp8, bf16);
  std::cout << "real dims, random weights: fp8 velocity vs bf16 cosine " << c << "\n";
  EXPECT_GE(c, 0.999);
}

}  // namespace
}  // namespace rgbaq::engine::cuda
