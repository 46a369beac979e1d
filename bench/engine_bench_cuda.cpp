// engine_bench --engine cuda: the CUDA backend at the real model's dims with random weights made on
// the device (the VAE's, 0.5 GB, written as a checkpoint first). Prints the cuBLASLt bf16 GEMM rate
// measured in the same run, then each graph's time and its rate as a ratio of that, the peak device
// memory, and a whole 1024x1024 image (encode + 8 steps + decode). Never run: no GPU was at hand.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "engine/cpu/vae_decoder.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_dit.h"
#include "engine/cuda/cuda_text_encoder.h"
#include "engine/cuda/cuda_vae.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/kernels.h"
#include "host/noise.h"
#include "host/rope.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

namespace rgbaq {
namespace {

using Clock = std::chrono::steady_clock;
using namespace engine;
using namespace engine::cuda;

template <typename F>
double best_of(int reps, cudaStream_t stream, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    cudaStreamSynchronize(stream);
    const auto t = Clock::now();
    f();
    cudaStreamSynchronize(stream);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t).count());
  }
  return best;
}

}  // namespace

int run_cuda_engine_bench() {
  try {
    std::string why;
    if (visible_devices(&why) == 0) {
      std::fprintf(stderr, "engine_bench --engine cuda: %s\n", why.c_str());
      return 2;
    }
    const int device = 0;
    check(cudaSetDevice(device), device, "cudaSetDevice");
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), device, "cudaStreamCreate");
    DeviceArena arena(device, 0);
    Gemm gemm(arena, stream);
    std::printf("device: %s, %s usable\n", device_label(device).c_str(), gib_string(arena.budget()).c_str());

    // The rate every figure below is a ratio of: a DiT linear's shape at 1024 x 1024.
    const int64_t m = 4096, n = 4096, k = 4096;
    DeviceBuffer a = arena.allocate(m * k * 2, "bench A"), b = arena.allocate(n * k * 2, "bench B"),
                 c = arena.allocate(m * n * 4, "bench C");
    fill_random(a.get(), ElementType::kBf16, m * k, 1, 1.0f, 0.0f, stream);
    fill_random(b.get(), ElementType::kBf16, n * k, 2, 1.0f, 0.0f, stream);
    gemm.linear(ElementType::kBf16, a.get(), m, b.get(), n, k, c.as<float>());
    const double gemm_s = best_of(10, stream, [&] { gemm.linear(ElementType::kBf16, a.get(), m, b.get(), n, k, c.as<float>()); });
    const double rate = 2.0 * m * n * k / gemm_s;
    std::printf("cuBLASLt bf16 GEMM %lldx%lldx%lld: %.1f TFLOP/s\n\n", (long long)m, (long long)n, (long long)k, rate / 1e12);
    a.reset(), b.reset(), c.reset();

    WeightSource random(arena, ElementType::kBf16, stream, true, 7);
    TextEncoderConfig tc;
    tc.hidden = 4096, tc.layers = 36, tc.heads = 32, tc.kv_heads = 8, tc.head_dim = 128, tc.intermediate = 12288, tc.vocab = 151936;
    CudaTextEncoder encoder(tc, nullptr, random, gemm, stream);
    const int64_t lfull = 64;
    std::vector<int32_t> ids(lfull);
    for (int64_t i = 0; i < lfull; ++i) ids[i] = static_cast<int32_t>((i * 7919) % tc.vocab);
    encoder.encode(ids);
    const double enc_s = best_of(3, stream, [&] { encoder.encode(ids); });
    const double enc_flops = 2.0 * lfull * tc.layers * (4096.0 * (4096 + 2 * 1024) + 4096.0 * 4096 + 3.0 * 4096 * 12288);
    std::printf("encode (36 layers, Lfull %lld): %8.4f s  %6.1f TFLOP/s = %3.0f%% of the GEMM rate\n", (long long)lfull, enc_s,
                enc_flops / enc_s / 1e12, 100 * enc_flops / enc_s / rate);

    DitConfig dc;
    dc.layers = 32, dc.heads = 32, dc.head_dim = 128, dc.context_dim = 4096, dc.mlp_ratio = 3;
    CudaDit dit(dc, nullptr, random, gemm, stream, false);
    const host::ImageSize size{1024, 1024};
    const int64_t l = lfull - 14, tokens = size.tokens(), dim = dc.dim(), mlp = dim * 3;
    const Tensor txt = encoder.encode(ids);
    const Tensor feats = Tensor::from_f32({l, 4096}, std::vector<float>(txt.f32() + 14 * 4096, txt.f32() + lfull * 4096));
    const auto rope = host::build_rope(host::RopeTables::from_formula(), static_cast<int>(l), size);
    Tensor x = Tensor::from_f32({tokens, 64}, host::initial_tokens(1, size));
    std::vector<float> vel(static_cast<size_t>(tokens * 64));
    dit.begin_image(feats, rope);
    dit.step(x, 0.9f, vel.data());
    const double step_s = best_of(3, stream, [&] { dit.step(x, 0.9f, vel.data()); });
    const double step_flops = dc.layers * (2.0 * tokens * (4.0 * dim * dim + 3.0 * dim * mlp) + 4.0 * tokens * (l + tokens) * dim) +
                              2.0 * tokens * 128.0 * dim;
    std::printf("DiT step (32 blocks, N %lld, L %lld): %8.4f s  %6.1f TFLOP/s = %3.0f%% of the GEMM rate\n",
                (long long)tokens, (long long)l, step_s, step_flops / step_s / 1e12, 100 * step_flops / step_s / rate);
    const double prefix_s = best_of(1, stream, [&] { dit.begin_image(feats, rope); });
    std::printf("DiT text prefix (once per image): %8.4f s\n", prefix_s);

    VaeConfig vc = tools::tiny_vae_config();
    vc.base_dim = 96, vc.decoder_base_dim = 144;
    TempDir vae_dir;
    tools::write_vae(vae_dir.path(), vc, 3, DType::kBF16);
    const auto vae_weights = WeightStore::open(vae_dir.path());
    std::unique_ptr<CudaVae> vae;
    double vae_flops = 0;
    {
      const cpu::VaeDecoder views(vae_weights, vc);
      vae_flops = views.flops(size.grid_height(), size.grid_width());
      vae = std::make_unique<CudaVae>(views, arena, gemm, stream, ElementType::kBf16);
    }
    vae->decode(x, size.grid_height(), size.grid_width());
    const double vae_s = best_of(2, stream, [&] { vae->decode(x, size.grid_height(), size.grid_width()); });
    std::printf("VAE decode 1024x1024 (decoder_base_dim 144): %8.4f s  %6.1f TFLOP/s = %3.0f%% of the GEMM rate\n", vae_s,
                vae_flops / vae_s / 1e12, 100 * vae_flops / vae_s / rate);

    const double image_s = best_of(2, stream, [&] {
      const Tensor hidden = encoder.encode(ids);
      dit.begin_image(feats, rope);
      for (int i = 0; i < 8; ++i) dit.step(x, 1.0f - i / 8.0f, vel.data());
      dit.end_image();
      vae->decode(x, size.grid_height(), size.grid_width());
    });
    std::printf("\nwhole 1024x1024 image (encode + 8 steps + decode): %.3f s\n", image_s);
    std::printf("peak device memory: %s (weights and workspaces)\n", gib_string(arena.peak()).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "engine_bench --engine cuda: %s\n", e.what());
    return 1;
  }
}

}  // namespace rgbaq
