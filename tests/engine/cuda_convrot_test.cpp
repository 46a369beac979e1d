// The CUDA backend's W8A8 path for ConvRot Linears (--gpu-int8 w8a8, issue 39) on a GPU, CTest label gpu:
// the fused rotate-and-quantize kernel against its host twin (engine/cuda/convrot_rows.h) bit for bit,
// the int8 GEMM (IMMA) against exact int32 sums, a whole W8A8 Linear against the cpu backend's
// w8a8_linear and the float64 W8A8 reference, and a tiny ConvRot DiT file rendered against the cpu
// engine. Each test skips where no CUDA device is visible, which is every machine this was written on:
// none of these has run yet.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>

#include "engine/cpu/thread_pool.h"
#include "engine/cpu/w8a8_linear.h"
#include "engine/cuda/convrot_kernels.h"
#include "engine/cuda/convrot_rows.h"
#include "engine/cuda/device_linear.h"
#include "engine/cuda/device_memory.h"
#include "engine/cuda/gemm.h"
#include "engine/model/comfy_quantizer.h"
#include "engine/model/dtype.h"
#include "engine/session.h"
#include "tests/engine/comfy_writer_reference.h"
#include "tests/engine/cuda_device_test.h"
#include "tests/engine/cuda_session_test.h"
#include "tests/engine/reference_math.h"
#include "tests/engine/render_reference.h"
#include "tests/engine/w8a8_reference.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::engine::cuda {
namespace {

// Rows of very different magnitudes, one all zero, an outlier channel.
std::vector<float> activation_rows(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = r == 3 ? 0.0f : std::ldexp(normal(rng), static_cast<int>(r % 11) - 5) * (c == 5 ? 30.0f : 1.0f);
  return x;
}

TEST(CudaConvRot, RotateQuantizeKernelMatchesItsHostTwinBitForBit) {
  SKIP_WITHOUT_DEVICE(0);
  DeviceArena arena(0, 0);
  // 12288 inputs (the DiT's MLP width) are 48 KiB with the block's partial maxima past it; 18944 (the
  // encoder's MLP width) far past it: both must opt in to more shared memory.
  for (const auto& [cols, group] : {std::pair<int64_t, int>{1024, 256}, {768, 64}, {64, 4}, {12288, 256}, {18944, 256}}) {
    const int64_t rows = 37;
    const std::vector<float> x = activation_rows(rows, cols, static_cast<uint32_t>(cols + group));
    for (const ElementType type : {ElementType::kF32, ElementType::kBf16}) {
      std::vector<float> host;
      DeviceBuffer in = upload_rows(arena, type, x, host);
      DeviceBuffer codes = arena.allocate(x.size(), "codes"), scales = arena.allocate(rows * 4, "scales");
      convrot_quantize_rows(in.get(), type, rows, cols, group, codes.as<int8_t>(), scales.as<float>(), 0, nullptr);
      check(cudaDeviceSynchronize(), 0, "convrot_quantize_rows");
      std::vector<int8_t> want_q(x.size());
      std::vector<float> want_s(rows), row(cols);
      convrot_quantize_rows_host(host.data(), rows, cols, cols, group, row.data(), want_q.data(), want_s.data());
      EXPECT_EQ(download<int8_t>(codes, x.size()), want_q) << cols << " cols, G " << group;
      EXPECT_EQ(download<float>(scales, rows), want_s) << cols << " cols, G " << group;
    }
  }
}

TEST(CudaConvRot, Int8GemmIsTheExactInt32Product) {
  SKIP_WITHOUT_DEVICE(0);
  DeviceArena arena(0, 0);
  Gemm gemm(arena, nullptr);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> code(-127, 127);
  for (const auto& [rows, out, in] : {std::tuple<int64_t, int64_t, int64_t>{37, 68, 512}, {1, 4, 4}, {256, 96, 3072}}) {
    std::vector<int8_t> x(rows * in), w(out * in);
    for (auto& v : x) v = static_cast<int8_t>(code(rng));
    for (auto& v : w) v = static_cast<int8_t>(code(rng));
    DeviceBuffer dx = upload_values(arena, x), dw = upload_values(arena, w), acc = arena.allocate(rows * out * 4, "acc");
    gemm.linear_int8(dx.as<int8_t>(), rows, dw.as<int8_t>(), out, in, acc.as<int32_t>());
    check(cudaDeviceSynchronize(), 0, "linear_int8");
    const auto got = download<int32_t>(acc, rows * out);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < out; ++o) {
        int32_t want = 0;
        for (int64_t k = 0; k < in; ++k) want += int32_t{x[r * in + k]} * int32_t{w[o * in + k]};
        ASSERT_EQ(got[r * out + o], want) << rows << "x" << out << "x" << in << " at " << r << ", " << o;
      }
  }
  EXPECT_THROW(gemm.linear_int8(nullptr, 1, nullptr, 6, 256, nullptr), std::invalid_argument);  // 6 outputs
}

// A W8A8 Linear through LinearRunner (fp32 inputs, as the parity mode's GEMMs take them) against the cpu
// backend's w8a8_linear and the float64 W8A8 math, the 1e-5 relative bound, overwriting and
// accumulating into y.
TEST(CudaConvRot, W8A8LinearMatchesTheCpuAndTheFloat64Reference) {
  SKIP_WITHOUT_DEVICE(0);
  for (const int group : {256, 64}) {
    const int64_t rows = 29, out = 96, in = 1024;
    const std::vector<float> x = activation_rows(rows, in, 9), w = testing::random_floats(out * in, 4, 0.05f);
    const testing::ConvRotWeight cw = testing::convrot_reference(w, out, in, group);
    const testing::Vec want = testing::w8a8_linear(testing::widen(x), rows, cw);
    cpu::ThreadPool pool(2);
    cpu::ConvRotRows packed;
    cpu::pack_convrot_rows(x.data(), rows, in, in, group, packed, pool);
    std::vector<float> cpu_y(rows * out);
    cpu::w8a8_linear(packed, cw.q.data(), cw.scales.data(), out, cpu_y.data(), out, pool);

    DeviceArena arena(0, 0);
    Gemm gemm(arena, nullptr);
    LinearRunner runner(arena, gemm, ElementType::kF32, nullptr);
    DeviceLinear l;
    l.format = LinearFormat::kInt8ConvRot;
    l.group = group;
    l.values = upload_values(arena, cw.q);
    l.scales = upload_values(arena, cw.scales);
    DeviceBuffer dx = upload_values(arena, x), y = arena.allocate(rows * out * 4, "y");
    runner.run(l.view(), dx.get(), rows, out, in, y.as<float>());
    check(cudaDeviceSynchronize(), 0, "W8A8 Linear");
    const auto got = download<float>(y, rows * out);
    std::cout << "G " << group << ": W8A8 vs float64 relative " << testing::relative_error(got, want) << ", vs cpu "
              << testing::relative_error(got, testing::widen(cpu_y)) << "\n";
    EXPECT_LE(testing::relative_error(got, want), 1e-5) << "G " << group;
    EXPECT_LE(testing::relative_error(got, testing::widen(cpu_y)), 1e-6) << "G " << group;
    runner.run(l.view(), dx.get(), rows, out, in, y.as<float>(), 1.0f);  // y += W8A8(x): twice the product
    check(cudaDeviceSynchronize(), 0, "W8A8 Linear, accumulating");
    testing::Vec twice = want;
    for (double& v : twice) v *= 2;
    EXPECT_LE(testing::relative_error(download<float>(y, rows * out), twice), 1e-5) << "G " << group;
  }
}

// A tiny model's DiT as a ConvRot file (rgbaq model quantize --format int8-convrot), G 64: the cuda
// engine with --gpu-int8 w8a8 (fp32 activations, as the cpu engine quantizes them) against the cpu
// engine on the same file, per velocity call and per image; and the same file widened on cuda, within
// 30 dB of it.
TEST(CudaConvRot, TinyConvRotDitRendersAsTheCpuEngineDoes) {
  SKIP_WITHOUT_DEVICE(0);
  TempDir dir;
  const auto model = write_model(dir, false);
  ComfyQuantizeOptions q;
  q.format = ComfyFormat::kInt8ConvRot;
  q.convrot_group = 64;
  q.roles = {"transformer"};
  quantize_model_comfy(model, dir.path() / "comfy", q);
  EngineOptions o;
  o.backend = "cuda";
  o.precision = Precision::kFp32;
  o.gpu_int8 = GpuInt8::kW8A8;
  o.components.dit = dir.path() / "comfy" / "transformer.safetensors";
  auto w8a8 = Session::open(model, o);
  EXPECT_NE(w8a8->device_description().find("ConvRot Linears W8A8"), std::string::npos) << w8a8->device_description();
  EngineOptions c = o;
  c.backend = "cpu";
  c.gpu_int8 = GpuInt8::kWiden;
  c.threads = 2;
  auto cpu = Session::open(model, c);
  const VelocityCase v(13, tools::tiny_text_encoder_config().hidden, {128, 128}, 1.0f);
  const auto got = v.velocity(*w8a8), want = v.velocity(*cpu);
  std::cout << "W8A8 velocity vs cpu W8A8: relative " << testing::relative_error(got, testing::widen(want)) << "\n";
  EXPECT_LE(testing::relative_error(got, testing::widen(want)), 2e-3);  // int8 rounding flips carry (issue 39)
  const RenderRequest request{"a red fox, game asset", 7, {128, 192}};
  const auto image = w8a8->render(request).rgba, reference = cpu->render(request).rgba;
  EXPECT_GE(testing::pixels_within(image, reference, 1), 0.99);
  o.gpu_int8 = GpuInt8::kWiden;  // the same file widened, (q s) R, and the session says so
  auto widened = Session::open(model, o);
  EXPECT_NE(widened->device_description().find("ConvRot Linears widened"), std::string::npos) << widened->device_description();
  // Only the activations' quantization parts them: the 30 dB between W8A8 and the unquantized model.
  EXPECT_GE(testing::psnr(widened->render(request).rgba, reference), 30.0);
}

}  // namespace
}  // namespace rgbaq::engine::cuda
