// The host side of the CUDA backend's W8A8 path for ConvRot Linears (--gpu-int8 w8a8; no GPU needed):
// the fused rotate-and-quantize kernel's schedule run by its host twin (engine/cuda/convrot_rows.h)
// against a float64 reference (R_G built as an explicit Kronecker power of H4 / 2) and against the
// kernels helper's convrot_rotate_rows + quantize_rows_int8; the epilogue's math; a whole W8A8 Linear on
// the host against float64; the IMMA call's layout and alignment plan, the shapes refused, the scratch
// (engine/cuda/w8a8_plan.h, workspace_plan.h); the opt-in's name and its refusal by the cpu engine.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend_registry.h"
#include "engine/cuda/convrot_rows.h"
#include "engine/cuda/linear_format.h"
#include "engine/cuda/w8a8_plan.h"
#include "engine/cuda/workspace_plan.h"
#include "engine/engine_options.h"
#include "engine/model/convrot.h"
#include "engine/model/dtype.h"
#include "tests/engine/w8a8_reference.h"
#include "tools/tiny_model.h"

namespace rgbaq::engine::cuda {
namespace {

// x R for every row, float64 (R_G the explicit Kronecker power, tests/engine/w8a8_reference.h).
std::vector<double> rotated_f64(const std::vector<float>& x, int64_t rows, int64_t cols, int group) {
  return rgbaq::testing::rotate_rows(rgbaq::testing::widen(x), rows, cols, group);
}

// Rows of very different magnitudes, one all zero, bf16-representable values in half of them (as a
// bf16 activation widens).
std::vector<float> test_rows(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = r == 2 ? 0.0f : std::ldexp(normal(rng), static_cast<int>(r % 9) - 4);
      if (c == 7 && r % 3 == 1) v *= 40.0f;  // an outlier channel, which the rotation spreads
      x[r * cols + c] = r % 2 ? bf16_to_f32(f32_to_bf16(v)) : v;
    }
  return x;
}

struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> scales;
};

Quantized twin(const std::vector<float>& x, int64_t rows, int64_t cols, int group) {
  Quantized out{std::vector<int8_t>(x.size()), std::vector<float>(static_cast<size_t>(rows))};
  std::vector<float> row(static_cast<size_t>(cols));
  convrot_quantize_rows_host(x.data(), rows, cols, cols, group, row.data(), out.q.data(), out.scales.data());
  return out;
}

TEST(CudaW8A8, QuadScheduleCoversEachGroupOnceAStage) {
  for (const int group : {4, 16, 64, 256}) {
    const int64_t cols = 2 * group;
    for (int stride = 1; stride < group; stride *= 4) {
      std::vector<int> seen(static_cast<size_t>(cols), 0);
      for (int64_t t = 0; t < cols / 4; ++t) {
        const int64_t i = convrot_quad_start(t, group, stride);
        for (int k = 0; k < 4; ++k) {
          ++seen[i + k * stride];
          EXPECT_EQ((i + k * stride) / group, i / group) << "a quad crosses a group: G " << group << ", stride " << stride;
        }
      }
      for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(seen[c], 1) << "G " << group << ", stride " << stride << ", index " << c;
    }
  }
}

TEST(CudaW8A8, KernelTwinMatchesTheFloat64RotationAndQuantization) {
  const int64_t rows = 9, cols = 768;
  for (const int group : {4, 16, 64, 256}) {
    const std::vector<float> x = test_rows(rows, cols, 7 + group);
    const Quantized got = twin(x, rows, cols, group);
    const std::vector<double> y = rotated_f64(x, rows, cols, group);
    int64_t boundary = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double max_abs = 0;
      for (int64_t c = 0; c < cols; ++c) max_abs = std::max(max_abs, std::fabs(y[r * cols + c]));
      if (max_abs == 0) {  // ComfyUI's rule: the scale floor 1e-30, all codes 0
        EXPECT_EQ(got.scales[r], 1e-30f) << "row " << r;
        for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(got.q[r * cols + c], 0);
        continue;
      }
      const double scale = max_abs / 127.0;
      EXPECT_NEAR(got.scales[r], scale, 1e-6 * scale) << "G " << group << ", row " << r;
      for (int64_t c = 0; c < cols; ++c) {
        const double want = std::nearbyint(y[r * cols + c] / scale);
        const int got_q = got.q[r * cols + c];
        if (got_q == want) continue;
        // Only a value within fp32 rounding of a half-way point may round the other way.
        EXPECT_LT(std::fabs(std::fabs(y[r * cols + c] / scale - std::trunc(y[r * cols + c] / scale)) - 0.5), 1e-4)
            << "G " << group << ", row " << r << ", col " << c << ": " << got_q << " vs " << want;
        EXPECT_EQ(std::fabs(got_q - want), 1.0);
        ++boundary;
      }
    }
    EXPECT_LE(boundary, 2) << "G " << group;
  }
}

TEST(CudaW8A8, KernelTwinEqualsTheCpusRotateAndQuantizeBitForBit) {
  const int64_t rows = 6, cols = 1024;
  for (const int group : {64, 256}) {
    const std::vector<float> x = test_rows(rows, cols, 3);
    const Quantized got = twin(x, rows, cols, group);
    std::vector<float> rotated = x;
    convrot_rotate_rows(rotated.data(), rows, cols, cols, group);
    std::vector<int8_t> q(x.size());
    std::vector<float> scales(static_cast<size_t>(rows));
    quantize_rows_int8(rotated.data(), rows, cols, cols, q.data(), scales.data());
    EXPECT_EQ(got.q, q) << "G " << group;
    for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(got.scales[r], scales[r]) << "G " << group << ", row " << r;
  }
}

TEST(CudaW8A8, EpilogueScalesTheInt32ProductAndAddsOnlyWhenAsked) {
  const double acc = 123456789, xs = 3.0e-3, ws = 7.5e-4;
  const float v = w8a8_output(123456789, 3.0e-3f, 7.5e-4f, 0.0f, std::numeric_limits<float>::quiet_NaN());
  EXPECT_NEAR(v, acc * double{3.0e-3f} * double{7.5e-4f}, 2e-7 * acc * xs * ws);  // y not read at beta 0
  const float added = w8a8_output(-40000, 0.01f, 0.02f, 1.0f, 5.0f);
  EXPECT_NEAR(added, 5.0 - 40000 * double{0.01f} * double{0.02f}, 1e-6);
  EXPECT_EQ(w8a8_output(0, 1e-30f, 0.5f, 0.0f, 0.0f), 0.0f);  // an all-zero row stays 0
}

// A whole W8A8 Linear as the device computes it (twin codes, int32 products, epilogue), against the
// same W8A8 math in float64: the 1e-5 relative bound.
TEST(CudaW8A8, HostW8A8LinearMatchesTheFloat64W8A8Math) {
  const int64_t rows = 5, in = 512, out = 12;
  const int group = 256;
  const std::vector<float> x = test_rows(rows, in, 11);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> code(-127, 127);
  std::vector<int8_t> w(static_cast<size_t>(out * in));
  std::vector<float> ws(static_cast<size_t>(out));
  for (auto& v : w) v = static_cast<int8_t>(code(rng));
  for (int64_t o = 0; o < out; ++o) ws[o] = 1e-3f * static_cast<float>(o + 1);
  const Quantized xq = twin(x, rows, in, group);
  const std::vector<double> ref = rgbaq::testing::w8a8_linear(rgbaq::testing::widen(x), rows, {out, in, group, w, ws});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      int32_t acc = 0;
      for (int64_t k = 0; k < in; ++k) acc += int32_t{xq.q[r * in + k]} * int32_t{w[o * in + k]};
      const double want = ref[r * out + o];
      const float got = w8a8_output(acc, xq.scales[r], ws[o], 0.0f, 0.0f);
      EXPECT_NEAR(got, want, 1e-5 * std::fabs(want) + 1e-30) << "row " << r << ", out " << o;
    }
  }
}

TEST(CudaW8A8, ImmaCallIsTheTnLayoutOfALinear) {
  const ImmaCall c = imma_call(5, 12, 256);
  EXPECT_EQ(c.m, 12);   // cuBLASLt's rows: our outputs (its A is the stored weight, transposed)
  EXPECT_EQ(c.n, 5);    // its columns: our input rows
  EXPECT_EQ(c.k, 256);
  EXPECT_EQ(c.lda, 256);
  EXPECT_EQ(c.ldb, 256);
  EXPECT_EQ(c.ldc, 12);
  EXPECT_TRUE(c.transpose_a);
  EXPECT_FALSE(c.transpose_b);
  EXPECT_EQ(imma_shape_problem(c), "");
  EXPECT_EQ(imma_shape_problem(imma_call(3, 4096, 12288)), "");  // any row count
  EXPECT_EQ(imma_shape_problem(imma_call(8, 6, 256)), "its 6 outputs are not a multiple of 4");
  EXPECT_EQ(imma_shape_problem(imma_call(8, 8, 258)), "its 258 inputs are not a multiple of 4");
}

TEST(CudaW8A8, ImmaAlignmentIsTheLargestCommonPowerOfTwoAndAtLeastFour) {
  EXPECT_EQ(imma_alignment(0x1000, 0x2000, 0x3000), 16u);
  EXPECT_EQ(imma_alignment(0x1000, 0x2008, 0x3000), 8u);
  EXPECT_EQ(imma_alignment(0x1004, 0x2000, 0x3000), 4u);
  EXPECT_THROW(imma_alignment(0x1000, 0x2002, 0x3000), std::logic_error);
}

TEST(CudaW8A8, ShapesTheDeviceCannotTakeAreRefusedNamingTheLinear) {
  EXPECT_NO_THROW(check_w8a8_shape(3072, 3072, 256, "DiT block 0 linears"));
  EXPECT_NO_THROW(check_w8a8_shape(4096, 12288, 64, "DiT block 0 linears"));
  EXPECT_NO_THROW(check_w8a8_shape(64, 64, 4, "x"));
  const auto message = [](int64_t out, int64_t in, int group) {
    try {
      check_w8a8_shape(out, in, group, "DiT block 3 linears");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(3072, 3072, 8), "DiT block 3 linears [3072, 3072] cannot run as a W8A8 Linear on the device: its ConvRot "
                                    "group 8 is not a power of four >= 4 (use --gpu-int8 widen)");
  EXPECT_NE(message(3072, 3072, 0).find("group 0 is not a power of four"), std::string::npos);
  EXPECT_NE(message(64, 96, 64).find("its ConvRot group 64 does not divide its 96 inputs"), std::string::npos);
  EXPECT_NE(message(6, 256, 256).find("its 6 outputs are not a multiple of 4"), std::string::npos);
}

TEST(CudaW8A8, ARowMustFitTheKernelsSharedMemory) {
  EXPECT_EQ(convrot_row_shared_bytes(12288), 49152);
  // The block's 32 partial maxima come on top: the DiT's MLP width is past 48 KiB (it must opt in).
  EXPECT_EQ(convrot_block_shared_bytes(12288), 49152 + 128);
  EXPECT_NO_THROW(check_convrot_row_fits(12288, 49280, "x"));
  EXPECT_THROW(check_convrot_row_fits(12288, 49279, "x"), std::invalid_argument);
  EXPECT_NO_THROW(check_convrot_row_fits(18944, 232448, "x"));  // the encoder's MLP width on an H100 (227 KiB)
  try {
    check_convrot_row_fits(65536, 232448, "a ConvRot Linear's input");
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "a ConvRot Linear's input: a row of 65536 inputs needs 262272 bytes of shared memory, the "
                                     "device has 232448 a block (use --gpu-int8 widen)");
  }
}

TEST(CudaW8A8, ScratchHoldsTheWidestInputAndLargestProduct) {
  const W8A8Scratch one = w8a8_scratch(7, 12, 256);
  EXPECT_EQ(one.codes, 7 * 256);
  EXPECT_EQ(one.scales, 7 * 4);
  EXPECT_EQ(one.accumulator, 7 * 12 * 4);
  // Real dims, 1024x1024 (4096 image rows): the down projection's 12288 inputs, the MLP's 12288
  // outputs; the encoder's 512 rows of 18944 are narrower. Nothing counted without the opt-in.
  const TextEncoderConfig t = tools::real_text_encoder_config();
  const DitConfig d = tools::real_dit_config();
  ASSERT_EQ(d.dim() * d.mlp_ratio, 12288);
  const auto with = linear_scratch(t, d, 2, {false, false, true}, false, false, 4096, 512, false);
  ASSERT_EQ(with.size(), 7u);
  EXPECT_EQ(with[4].bytes, int64_t{4096} * 12288);
  EXPECT_EQ(with[5].bytes, int64_t{4096} * 4);
  EXPECT_EQ(with[6].bytes, int64_t{4096} * 12288 * 4);
  const auto without = linear_scratch(t, d, 2, {}, false, false, 4096, 512, false);
  EXPECT_EQ(without[4].bytes + without[5].bytes + without[6].bytes, 0);
}

TEST(CudaW8A8, OnlyTheOptInKeepsAConvRotLinear) {
  const LinearFormats w8a8{false, false, true}, widen{}, fp8{true, false, false}, fp8_w8a8{true, false, true};
  EXPECT_EQ(w8a8.of(false, true, true), LinearFormat::kInt8ConvRot);
  EXPECT_EQ(w8a8.of(false, false, true), LinearFormat::kInt8ConvRot);
  EXPECT_EQ(w8a8.of(true, true, false), LinearFormat::kDense);  // int8 blocks: not ConvRot
  EXPECT_EQ(widen.of(false, true, true), LinearFormat::kDense);  // widened, (q s) R
  EXPECT_EQ(fp8.of(false, true, true), LinearFormat::kFp8Rows);
  EXPECT_EQ(fp8_w8a8.of(false, true, true), LinearFormat::kInt8ConvRot);
  EXPECT_EQ(linear_weight_bytes(LinearFormat::kInt8ConvRot, 2, 4096, 12288), int64_t{4096} * 12288 + 4096 * 4);
}

TEST(CudaW8A8, TheOptInIsNamedW8A8AndTheCpuEngineRefusesIt) {
  EXPECT_EQ(parse_gpu_int8("w8a8"), GpuInt8::kW8A8);
  EXPECT_STREQ(gpu_int8_name(GpuInt8::kW8A8), "w8a8");
  try {
    parse_gpu_int8("int8");
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "\"int8\" is not one of widen, keep, w8a8");
  }
  EngineOptions o;
  o.backend = "cpu";
  o.gpu_int8 = GpuInt8::kW8A8;
  try {
    resolve_backend(o);
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--gpu-int8 w8a8 is the cuda engine's"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rgbaq::engine::cuda
