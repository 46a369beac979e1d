// --fused-blocks (engine/cuda/cuda_dit.h): the fused passes against the kernels they replace, bit for
// bit; then DiTs whose Q|K|V and gate|up are one GEMM each against the unfused cuda DiT and the cpu
// backend, in every Linear format, resident and streamed, with LoRAs on every stacked Linear. CTest
// label gpu; the device cases skip where no CUDA device is visible, which is every machine this was
// written on: none of them has run yet. The stacking of host bytes and the refusal of a stack that
// mixes formats run everywhere.
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>

#include "engine/cuda/cuda_graphs.h"
#include "engine/cuda/device_linear.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/weight_plan.h"
#include "engine/model/dtype.h"
#include "engine/model/fp8_e4m3.h"
#include "engine/model/int8_blocks.h"
#include "engine/lora.h"
#include "engine/session.h"
#include "tests/engine/cuda_device_test.h"
#include "tests/engine/cuda_session_test.h"
#include "tests/engine/reference_math.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

namespace rgbaq::engine::cuda {
namespace {

template <typename T>
std::vector<T> bits_of(const DeviceBuffer& b) {
  return download<T>(b, b.bytes() / sizeof(T));
}

// gated_residual_norm against gated_residual then layer_norm_modulate, and swiglu_rows and
// convert_rows against swiglu and convert on the same values laid out apart: the same math in the same
// order, so the same bits. The rows straddle both row splits (text gate rows 0..4, text scale rows
// 0..2), and the width is not a multiple of the 256 threads.
TEST(CudaFusedBlocks, FusedPassesEqualTheKernelsTheyReplaceBitForBit) {
  SKIP_WITHOUT_DEVICE(0);
  const int64_t rows = 7, dim = 300, half = 520;
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), 0, "stream");
  {
    DeviceArena arena(0, 0);
    const auto x = testing::random_floats(rows * dim, 1, 2.0f), delta = testing::random_floats(rows * dim, 2, 1.0f);
    const auto gates = testing::random_floats(2 * dim, 3, 1.0f), scales = testing::random_floats(2 * dim, 4, 0.5f);
    DeviceBuffer g = upload_values(arena, gates), s = upload_values(arena, scales), d = upload_values(arena, delta);
    for (ElementType type : {ElementType::kBf16, ElementType::kF32}) {
      SCOPED_TRACE(type == ElementType::kBf16 ? "bf16" : "fp32");
      DeviceBuffer x_apart = upload_values(arena, x), x_fused = upload_values(arena, x);
      DeviceBuffer h_apart = arena.allocate(rows * dim * element_size(type), "h"),
                   h_fused = arena.allocate(rows * dim * element_size(type), "h");
      gated_residual(x_apart.as<float>(), d.as<float>(), rows, dim, g.as<float>(), g.as<float>() + dim, 4, stream);
      layer_norm_modulate(x_apart.as<float>(), rows, dim, 1e-6f, s.as<float>(), s.as<float>() + dim, 2, h_apart.get(), type, stream);
      gated_residual_norm(x_fused.as<float>(), d.as<float>(), rows, dim, g.as<float>(), g.as<float>() + dim, 4, 1e-6f,
                          s.as<float>(), s.as<float>() + dim, 2, h_fused.get(), type, stream);
      check(cudaStreamSynchronize(stream), 0, "the passes");
      EXPECT_EQ(bits_of<float>(x_fused), bits_of<float>(x_apart));
      EXPECT_EQ(bits_of<uint8_t>(h_fused), bits_of<uint8_t>(h_apart));
      // The rows moved: a pass that wrote nothing would not compare equal to a pass that did.
      EXPECT_NE(bits_of<float>(x_fused), x);

      const auto gate_up = testing::random_floats(rows * 2 * half, 5, 3.0f);
      std::vector<float> gate(rows * half), up(rows * half);
      for (int64_t r = 0; r < rows; ++r) {
        std::copy_n(gate_up.begin() + r * 2 * half, half, gate.begin() + r * half);
        std::copy_n(gate_up.begin() + r * 2 * half + half, half, up.begin() + r * half);
      }
      DeviceBuffer stacked = upload_values(arena, gate_up), dg = upload_values(arena, gate), du = upload_values(arena, up);
      DeviceBuffer out_rows = arena.allocate(rows * half * element_size(type), "swiglu rows"),
                   out_apart = arena.allocate(rows * half * element_size(type), "swiglu");
      swiglu_rows(stacked.as<float>(), rows, half, out_rows.get(), type, stream);
      swiglu(dg.as<float>(), du.as<float>(), rows * half, out_apart.get(), type, stream);
      // The up half of each row through convert_rows (row stride 2 half in, half out) and convert.
      DeviceBuffer window = arena.allocate(rows * half * element_size(type), "window"),
                   whole = arena.allocate(rows * half * element_size(type), "whole");
      convert_rows(stacked.as<float>() + half, 2 * half, rows, half, window.get(), half, type, stream);
      convert(du.as<float>(), rows * half, whole.get(), type, stream);
      check(cudaStreamSynchronize(stream), 0, "swiglu and convert");
      EXPECT_EQ(bits_of<uint8_t>(out_rows), bits_of<uint8_t>(out_apart));
      EXPECT_EQ(bits_of<uint8_t>(window), bits_of<uint8_t>(whole));
    }
  }
  cudaStreamDestroy(stream);
}

// The velocity and the launches it took (kernels.h's count: every kernel and cuBLASLt call).
std::pair<std::vector<float>, uint64_t> counted_velocity(const VelocityCase& v, Session& s) {
  const uint64_t before = launch_count();
  auto vel = v.velocity(s);
  return {std::move(vel), launch_count() - before};
}

// The stacked GEMMs add the same products in cuBLASLt's order for a wider matrix: fp32 parity holds
// the fused DiT to 1e-5 of the cpu's and of the unfused one's; bf16 to the bf16 bounds. The launches
// say the fused path ran: per block (the tiny model's rows are one chunk) 7 GEMMs and 8 kernels become
// 4 and 6, attention aside, and each pass gains one norm before its first block while the step loses
// the final one: 5 per block a pass, less 1 for the text prefix, 10 L - 1 in a velocity call (L 2
// blocks); int8 kept also dequantizes 3 stacks' worth less a block a pass, 16 L - 1.
TEST(CudaFusedBlocks, VelocityMatchesTheUnfusedDiTAndTheCpuInEveryFormat) {
  SKIP_WITHOUT_DEVICE(0);
  TempDir a, b;
  const auto bf16 = write_model(a, false), int8 = write_model(b, true);
  struct Case {
    const char* name;
    std::filesystem::path model;
    Precision precision;
    GpuInt8 gpu_int8;
    double bound;
  };
  std::vector<Case> cases = {{"fp32", bf16, Precision::kFp32, GpuInt8::kWiden, 1e-5},
                             {"bf16", bf16, Precision::kBf16, GpuInt8::kWiden, 2e-2},
                             {"int8 kept", int8, Precision::kBf16, GpuInt8::kKeep, 2e-2}};
  std::string why;
  if (device_sm(&why) >= 89) cases.push_back({"fp8", bf16, Precision::kFp8, GpuInt8::kWiden, 2e-2});
  const VelocityCase v(13, 64, {192, 128});
  const int64_t layers = tools::tiny_dit_config().layers;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto fused = open_cuda(c.model, c.precision, c.gpu_int8, false, std::nullopt, true);
    EXPECT_NE(fused->device_description().find("fused blocks"), std::string::npos) << fused->device_description();
    auto apart = open_cuda(c.model, c.precision, c.gpu_int8);
    v.velocity(*fused), v.velocity(*apart);  // warm: workspaces and GEMM plans made
    const auto [got, fused_launches] = counted_velocity(v, *fused);
    const auto [unfused, unfused_launches] = counted_velocity(v, *apart);
    std::cout << c.name << " launches per velocity call: " << fused_launches << " fused, " << unfused_launches << " unfused\n";
    if (c.precision == Precision::kFp8) {  // fp8's scaling pass runs per GEMM only where cuBLASLt falls back
      EXPECT_LT(fused_launches, unfused_launches);
    } else {
      EXPECT_EQ(unfused_launches - fused_launches, static_cast<uint64_t>((c.gpu_int8 == GpuInt8::kKeep ? 16 : 10) * layers - 1));
    }
    const auto cpu = v.velocity(*Session::open(c.model, "cpu", 2));
    const double vs_unfused = testing::relative_error(got, testing::widen(unfused)), vs_cpu = testing::relative_error(got, testing::widen(cpu));
    std::cout << c.name << " fused blocks velocity: relative " << vs_unfused << " to unfused, " << vs_cpu << " to cpu, cosine "
              << testing::cosine(got, cpu) << "\n";
    EXPECT_LE(vs_unfused, c.bound);
    if (c.precision != Precision::kFp8) {  // the cpu has no fp8: its bounds are the fp8 tests'
      EXPECT_LE(vs_cpu, c.bound);
    }
    EXPECT_GE(testing::cosine(got, unfused), 0.9999);
    // Stacked Linears are the same bytes as the plan's, which counts them apart.
    const auto& graphs = dynamic_cast<const CudaGraphs&>(fused->graphs());
    EXPECT_EQ(graphs.weight_bytes(), graphs.planned_weight_bytes());
  }
}

TEST(CudaFusedBlocks, StreamedStacksRenderTheBytesOfResidentOnes) {
  SKIP_WITHOUT_DEVICE(0);
  TempDir a, b;
  const std::pair<std::filesystem::path, GpuInt8> models[] = {{write_model(a, false), GpuInt8::kWiden},
                                                              {write_model(b, true), GpuInt8::kKeep}};
  for (const auto& [model, g] : models) {
    const RenderRequest request{"a red fox, game asset", 3, {128, 192}};
    const auto resident = open_cuda(model, Precision::kBf16, g, false, std::nullopt, true)->render(request);
    auto streamed = open_cuda(model, Precision::kBf16, g, true, std::nullopt, true);
    EXPECT_NE(streamed->device_description().find("streamed"), std::string::npos) << streamed->device_description();
    EXPECT_EQ(streamed->render(request).rgba, resident.rgba);
    const double db = testing::psnr(resident.rgba, open_cuda(model, Precision::kBf16, g)->render(request).rgba);
    std::cout << "fused blocks render vs unfused: " << db << " dB PSNR\n";
    EXPECT_GE(db, 30.0);
  }
}

// The style LoRA has a term on every Linear, so on each part of every stack: each lands in its own
// columns of the stacked product (fp32 parity, against the unfused DiT, which lora_test holds to the
// merged float64 reference).
TEST(CudaFusedBlocks, LorasOnStackedLinearsMatchTheUnfusedDiT) {
  SKIP_WITHOUT_DEVICE(0);
  TempDir dir, loras;
  const auto model = write_model(dir, false);
  const DitConfig config = tools::tiny_dit_config();
  tools::write_tiny_loras(loras.path(), config);
  const auto style = load_lora(loras.path() / "style-kohya.safetensors", "style", config);
  ASSERT_EQ(style->modules.size(), dit_linear_modules(config).size());
  const VelocityCase v(11, 64, {192, 128});
  auto fused = open_cuda(model, Precision::kFp32, GpuInt8::kWiden, false, std::nullopt, true);
  auto unfused = open_cuda(model, Precision::kFp32, GpuInt8::kWiden);
  const auto plain = v.velocity(*fused);
  fused->graphs().set_loras({{style, 0.8f}});
  unfused->graphs().set_loras({{style, 0.8f}});
  const auto got = v.velocity(*fused), want = v.velocity(*unfused);
  std::cout << "fused blocks with a LoRA: relative " << testing::relative_error(got, testing::widen(want)) << " to unfused, "
            << testing::relative_error(got, testing::widen(plain)) << " from the plain model\n";
  EXPECT_LE(testing::relative_error(got, testing::widen(want)), 1e-5);
  EXPECT_GT(testing::relative_error(got, testing::widen(plain)), 1e-2);  // the LoRA moved it well past that bound
}

// Host side: a stack's staged bytes are those of the stacked matrix made whole, in every format (each
// row quantized on its own, so stacking rows commutes with making the format).
TEST(CudaFusedBlocks, AStacksStagedBytesAreTheStackedMatrixs) {
  const int64_t out = 4, in = 48;
  const auto a = testing::random_floats(out * in, 11, 1.0f), b = testing::random_floats(out * in, 12, 0.01f);
  std::vector<float> whole(a);
  whole.insert(whole.end(), b.begin(), b.end());
  const Tensor ta = Tensor::from_f32({out, in}, a), tb = Tensor::from_f32({out, in}, b);

  const auto dense = staged_stack({&ta, &tb}, LinearFormat::kDense, ElementType::kBf16, "dense");
  ASSERT_EQ(dense.size(), 1u);
  EXPECT_EQ(dense[0], host_bytes(whole, ElementType::kBf16));

  std::vector<uint8_t> codes(whole.size());
  std::vector<float> row_scales(2 * out);
  fp8::quantize_rows(whole.data(), 2 * out, in, codes.data(), row_scales.data());
  const auto fp8 = staged_stack({&ta, &tb}, LinearFormat::kFp8Rows, ElementType::kBf16, "fp8");
  ASSERT_EQ(fp8.size(), 2u);
  EXPECT_EQ(fp8[0], codes);
  std::vector<uint8_t> scale_bytes(row_scales.size() * 4);
  std::memcpy(scale_bytes.data(), row_scales.data(), scale_bytes.size());
  EXPECT_EQ(fp8[1], scale_bytes);

  const auto int8_of = [&](const std::vector<float>& w, int64_t rows) {
    Tensor q = Tensor::zeros(DType::kI8, {rows, in});
    Tensor s = Tensor::zeros(DType::kBF16, {rows, int8_scale_columns(in)});
    quantize_int8_rows(w.data(), rows, in, static_cast<int8_t*>(q.mutable_data()), static_cast<uint16_t*>(s.mutable_data()));
    return Tensor::with_block_scales(q, s);
  };
  const Tensor qa = int8_of(a, out), qb = int8_of(b, out), qwhole = int8_of(whole, 2 * out);
  const auto int8 = staged_stack({&qa, &qb}, LinearFormat::kInt8Blocks, ElementType::kBf16, "int8");
  ASSERT_EQ(int8.size(), 2u);
  EXPECT_EQ(int8[0], raw_bytes(qwhole));
  EXPECT_EQ(int8[1], raw_bytes(*qwhole.block_scales()));
}

TEST(CudaFusedBlocks, AStackThatMixesFormatsIsRefusedByName) {
  try {
    require_one_format({LinearFormat::kDense, LinearFormat::kInt8Blocks, LinearFormat::kDense}, "DiT block 3 to_q|to_k|to_v");
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "DiT block 3 to_q|to_k|to_v: --fused-blocks makes these Linears one GEMM, so they must share a format, but "
                 "they are dense, int8 kept, dense (quantize them alike, or --fused-blocks off)");
  }
  EXPECT_NO_THROW(require_one_format({LinearFormat::kFp8Rows, LinearFormat::kFp8Rows}, "DiT block 0 MLP gate|up"));
}

}  // namespace
}  // namespace rgbaq::engine::cuda
