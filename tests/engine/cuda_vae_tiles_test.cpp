// The CUDA VAE's tiled decode (engine/vae_tile_plan.h) against its untiled decode and the cpu decoder,
// on the tiny model with tiles forced small (CTest label gpu). Skips without a device: it has never
// run on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vae_decoder.h"
#include "engine/cuda/cuda_vae.h"
#include "engine/cuda/device_memory.h"
#include "engine/cuda/gemm.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_store.h"
#include "tests/engine/cuda_device_test.h"
#include "tests/engine/reference_math.h"
#include "tests/engine/tiny_model_fixture.h"

namespace rgbaq::engine::cuda {
namespace {

// The tiny model's VAE decoder: its checked weights, which CudaVae uploads.
struct TinyVae {
  TinyModel model{DType::kBF16, 6};
  WeightStore weights = WeightStore::open(model.dir() / "vae");
  VaeConfig config = load_vae_config(model.dir() / "vae" / "config.json");
  cpu::VaeDecoder views{weights, config};
};

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double most = 0;
  for (size_t i = 0; i < a.size(); ++i) most = std::max(most, static_cast<double>(std::abs(a[i] - b[i])));
  return most;
}

// fp32 mode: tiled = untiled within 1e-5 (only the GEMMs' shapes, so their summation order, differ),
// and both within the 1e-5 relative of the cpu that CudaGraphs.Fp32ModeMatchesCpuWithin1e5 holds the
// untiled decode to; bf16: within CudaGraphs.Bf16ModeWithin2e2AndCosine0_9999's bounds of the cpu and
// of the untiled decode.
TEST(CudaVaeTiles, TiledDecodeEqualsTheUntiledOneAndTheCpu) {
  SKIP_WITHOUT_DEVICE(0);
  const TinyVae tiny;
  const VaeConfig& config = tiny.config;
  const cpu::VaeDecoder& views = tiny.views;
  cpu::ThreadPool pool(2);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  {
    DeviceArena arena(0, 0);
    Gemm gemm(arena, stream);
    struct Case {
      int h, w, first_tiled;
      int64_t tile;
    };
    for (const ElementType type : {ElementType::kF32, ElementType::kBf16}) {
      WeightSource source(arena, type, stream);
      CudaVae vae(views, source, gemm, stream);
      for (const Case k : {Case{8, 8, 1, 5}, Case{6, 10, 2, 7}, Case{9, 4, 3, 16}, Case{5, 7, 0, 2}}) {
        const VaeTilePlan plan = vae_tile_plan(config, k.h, k.w, k.first_tiled, k.tile);
        SCOPED_TRACE(std::string(type == ElementType::kF32 ? "fp32 " : "bf16 ") + std::to_string(k.h) + "x" +
                     std::to_string(k.w) + " from up block " + std::to_string(k.first_tiled));
        ASSERT_GE(plan.tile_count(), 4);
        const Tensor latents = Tensor::from_f32({int64_t{k.h} * k.w, 64},
                                                testing::random_floats(static_cast<size_t>(k.h * k.w * 64), 40 + k.w, 1.5f));
        const auto whole = vae.decode(latents, vae_untiled_plan(config, k.h, k.w)).to_f32_vector();
        const auto tiled = vae.decode(latents, plan).to_f32_vector();
        const auto cpu = views.decode(latents, vae_untiled_plan(config, k.h, k.w), pool).to_f32_vector();
        ASSERT_EQ(tiled.size(), whole.size());
        const double to_whole = testing::relative_error(tiled, testing::widen(whole));
        const double to_cpu = testing::relative_error(tiled, testing::widen(cpu));
        std::cout << "cuda VAE tiled (" << plan.tile_count() << " tiles): max difference to untiled "
                  << max_difference(tiled, whole) << " (relative " << to_whole << "), relative to cpu " << to_cpu << "\n";
        if (type == ElementType::kF32) {
          EXPECT_LE(max_difference(tiled, whole), 1e-5);
          EXPECT_LE(to_cpu, 1e-5);
        } else {
          EXPECT_LE(to_whole, 2e-2);
          EXPECT_LE(to_cpu, 2e-2);
          EXPECT_GE(testing::cosine(tiled, cpu), 0.9999);
        }
      }
    }
  }
  cudaStreamDestroy(stream);
}

// A row wider than the im2col strip (the contract allows 32768 x 32 px, whose rows hold 85 Mi taps at
// the real dims against a 64 Mi strip) goes row by row in windows of columns: forced here on the tiny
// model with a strip of 8 columns of its widest conv, against the whole-row strips, fp32, within 1e-5.
TEST(CudaVaeTiles, RowsWiderThanTheStripDecodeInWindows) {
  SKIP_WITHOUT_DEVICE(0);
  const TinyVae tiny;
  const VaeConfig& config = tiny.config;
  const cpu::VaeDecoder& views = tiny.views;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  {
    DeviceArena arena(0, 0);
    Gemm gemm(arena, stream);
    WeightSource source(arena, ElementType::kF32, stream);
    CudaVae vae(views, source, gemm, stream);
    const int h = 2, w = 37;  // 32 x 592 px, an odd width: the last window is short
    const Tensor latents = Tensor::from_f32({int64_t{h} * w, 64}, testing::random_floats(size_t{h} * w * 64, 77, 1.5f));
    const auto strips = vae.decode(latents, vae_untiled_plan(config, h, w)).to_f32_vector();
    const std::vector<int64_t> dims = vae_decoder_dims(config);
    vae.limit_columns_for_tests(9 * *std::max_element(dims.begin(), dims.end()) * 8);
    const auto windows = vae.decode(latents, vae_untiled_plan(config, h, w)).to_f32_vector();
    ASSERT_EQ(windows.size(), strips.size());
    std::cout << "windowed im2col vs whole rows: max difference " << max_difference(windows, strips) << "\n";
    EXPECT_LE(max_difference(windows, strips), 1e-5);
  }
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace rgbaq::engine::cuda
