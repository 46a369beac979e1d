// engine_bench --precision int8-convrot: the CPU's int8 products against fp32 at the DiT's real widths.
// For K = 4096 and N = 4096 (attention) and 12288 (MLP), M = 256 and 1024 rows, in one run:
//  - the int8 GEMM (engine/cpu/int8_gemm.h) against OpenBLAS sgemm, both split over the pool's threads
//    in the same fixed 256-column tiles the Linears use (sgemm single-threaded per tile, as linear() runs it);
//  - the ConvRot W8A8 Linear (pack_convrot_rows + w8a8_linear: rotate, quantize, GEMM, scale) against the
//    fp32 linear() with an F32 weight;
//  - one DiT step at the real width, ConvRot W8A8 against F32 (dit_steps).
// Each pair is timed in the same rounds (fp32, int8, fp32, int8, ...; the best of each), so a load change
// during the run moves both.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/cpu/int8_gemm.h"
#include "engine/cpu/linear.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/dit.h"
#include "engine/cpu/w8a8_linear.h"
#include "engine/model/comfy_quantizer.h"
#include "engine/model/component_files.h"
#include "engine/model/tensor.h"
#include "host/noise.h"
#include "host/rope.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

namespace rgbaq {
namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double seconds_of(F&& f) {
  const auto t = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Best seconds of `fp32` and of `int8`, alternated for `rounds` rounds.
template <typename A, typename B>
std::pair<double, double> alternated(int rounds, A&& fp32, B&& int8) {
  double best_fp32 = 1e30, best_int8 = 1e30;
  for (int i = 0; i < rounds; ++i) {
    best_fp32 = std::min(best_fp32, seconds_of(fp32));
    best_int8 = std::min(best_int8, seconds_of(int8));
  }
  return {best_fp32, best_int8};
}

constexpr int64_t kTile = 256;  // output columns a task takes, as in linear() and w8a8_linear()

// One DiT step at the real width (2 blocks of hidden 4096 = 32 heads x 128, MLP 12288, context 4096; L 64)
// at N 256 and 1024: F32 weights through sgemm against the same weights written as a ComfyUI ConvRot G256
// file (engine/model/comfy_quantizer.h) and read back as one (W8A8), alternated in the same rounds. The
// velocities' relative RMS difference shows both computed the same step.
void dit_steps(engine::cpu::ThreadPool& pool) {
  engine::DitConfig dc;
  dc.layers = 2, dc.heads = 32, dc.head_dim = 128, dc.context_dim = 4096;
  TempDir f32_dir, convrot_dir;
  tools::write_dit(f32_dir.path(), dc, 2, engine::DType::kF32);
  const auto f32_weights = engine::WeightStore::open(f32_dir.path());
  const auto file = convrot_dir.path() / "dit_int8_convrot.safetensors";
  engine::ComfyQuantizeOptions options;
  options.format = engine::ComfyFormat::kInt8ConvRot;
  options.convrot_group = 256;
  const auto written = engine::write_comfy_component(f32_weights, engine::dit_schema(dc), "transformer", file, options);
  const auto convrot_weights = engine::open_component_file("transformer", file);
  const engine::cpu::Dit fp32(f32_weights, dc), w8a8(convrot_weights, dc);
  const int64_t text_len = 64;
  std::vector<float> feats(static_cast<size_t>(text_len * dc.context_dim));
  for (size_t i = 0; i < feats.size(); ++i) feats[i] = float((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  const engine::Tensor txt = engine::Tensor::from_f32({text_len, dc.context_dim}, feats);
  std::printf("DiT step: hidden %lld, %d blocks, MLP %lld, L %lld; %lld Linears ConvRot G256 (the rest F32)\n",
              static_cast<long long>(dc.dim()), dc.layers, static_cast<long long>(dc.dim() * dc.mlp_ratio),
              static_cast<long long>(text_len), static_cast<long long>(written.quantized));
  for (int side : {256, 512}) {
    const host::ImageSize size{side, side};
    const int64_t n = size.tokens();
    const auto rope = host::build_rope(host::RopeTables::from_formula(), int(text_len), size);
    const engine::Tensor img = engine::Tensor::from_f32({n, 64}, host::initial_tokens(1, size));
    engine::cpu::DitWorkspace ws_fp32, ws_w8a8;
    engine::cpu::TextPrefix prefix_fp32, prefix_w8a8;
    fp32.text_prefix(txt, rope, ws_fp32, prefix_fp32, pool);
    w8a8.text_prefix(txt, rope, ws_w8a8, prefix_w8a8, pool);
    std::vector<float> vel_fp32(static_cast<size_t>(n * 64)), vel_w8a8(vel_fp32.size());
    const auto [fp32_s, w8a8_s] = alternated(
        3, [&] { fp32.velocity(img, prefix_fp32, 0.9f, rope, ws_fp32, vel_fp32.data(), pool); },
        [&] { w8a8.velocity(img, prefix_w8a8, 0.9f, rope, ws_w8a8, vel_w8a8.data(), pool); });
    double diff = 0, norm = 0;
    for (size_t i = 0; i < vel_fp32.size(); ++i) {
      diff += double(vel_w8a8[i] - vel_fp32[i]) * (vel_w8a8[i] - vel_fp32[i]);
      norm += double(vel_fp32[i]) * vel_fp32[i];
    }
    std::printf("  N %5lld: W8A8 %7.3f s/step  fp32 %7.3f s/step  ratio %.2fx   velocity rel. RMS diff %.2e\n",
                static_cast<long long>(n), w8a8_s, fp32_s, fp32_s / w8a8_s, std::sqrt(diff / norm));
  }
}

}  // namespace

void int8_convrot_section(engine::cpu::ThreadPool& pool) {
  using namespace engine::cpu;
  const int64_t k = 4096;
  const int group = 256;
  std::printf("int8-convrot: int8 GEMM kernel %s, %d threads, K %lld, ConvRot group %d\n", int8_gemm_kernel_name(),
              pool.size(), static_cast<long long>(k), group);
  for (int64_t n : {4096, 12288}) {
    // Deterministic fp32 weight and its int8 codes (the codes' values do not change the speed).
    std::vector<float> wf(static_cast<size_t>(n * k));
    std::vector<int8_t> wq(wf.size());
    for (size_t i = 0; i < wf.size(); ++i) {
      wq[i] = static_cast<int8_t>(static_cast<int>((i * 2654435761u) >> 24) % 255 - 127);
      wf[i] = wq[i] / 4096.0f;
    }
    std::vector<float> w_scales(static_cast<size_t>(n), 1.0f / 4096.0f);
    const engine::Tensor weight = engine::Tensor::from_f32({n, k}, wf);
    wf = {};
    for (int64_t m : {256, 1024}) {
      std::vector<float> x(static_cast<size_t>(m * k));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 40503u) % 2001) / 1000.0f - 1.0f;
      std::vector<int8_t> a(x.size());
      for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int8_t>(static_cast<int>((i * 40503u) % 255) - 127);
      std::vector<int32_t> row_sums(static_cast<size_t>(m)), c(static_cast<size_t>(m * n));
      int8_row_sums(a.data(), m, k, k, row_sums.data());
      std::vector<float> y(static_cast<size_t>(m * n));
      const int64_t tiles = (n + kTile - 1) / kTile;
      const double ops = 2.0 * m * n * k;

      const auto [sgemm_s, int8_s] = alternated(
          3,
          [&] {
            pool.run(tiles, [&](int64_t t) {
              const int64_t o0 = t * kTile, nt = std::min(kTile, n - o0);
              sgemm_nt(m, nt, k, x.data(), k, weight.f32() + o0 * k, k, y.data() + o0, n, false);
            });
          },
          [&] {
            pool.run(tiles, [&](int64_t t) {
              const int64_t o0 = t * kTile, nt = std::min(kTile, n - o0);
              int8_gemm_nt(m, nt, k, a.data(), k, wq.data() + o0 * k, k, c.data() + o0, n, row_sums.data());
            });
          });
      std::printf("  GEMM   M %4lld N %5lld: int8 %6.1f GOP/s  sgemm %6.1f GFLOP/s  ratio %.2fx\n",
                  static_cast<long long>(m), static_cast<long long>(n), ops / int8_s / 1e9, ops / sgemm_s / 1e9,
                  sgemm_s / int8_s);

      ConvRotRows packed;
      const auto [linear_s, w8a8_s] = alternated(
          3, [&] { linear(x.data(), m, weight, y.data(), pool); },
          [&] {
            pack_convrot_rows(x.data(), m, k, k, group, packed, pool);
            w8a8_linear(packed, wq.data(), w_scales.data(), n, y.data(), n, pool);
          });
      double pack_s = 1e30;
      for (int i = 0; i < 3; ++i) {
        pack_s = std::min(pack_s, seconds_of([&] { pack_convrot_rows(x.data(), m, k, k, group, packed, pool); }));
      }
      std::printf("  Linear M %4lld N %5lld: W8A8 %7.2f ms (pack %5.2f ms)  fp32 linear() %7.2f ms  ratio %.2fx\n",
                  static_cast<long long>(m), static_cast<long long>(n), w8a8_s * 1e3, pack_s * 1e3, linear_s * 1e3,
                  linear_s / w8a8_s);
    }
  }
  dit_steps(pool);
}

}  // namespace rgbaq
