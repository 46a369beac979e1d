// The CPU engine's speed against the machine's OpenBLAS sgemm, measured in the same run.
// usage: engine_bench [--threads N] | engine_bench --engine cuda [--text-tokens L] [--reps R] [--json FILE]
//        | engine_bench --precision int8-convrot [--threads N]
// (engine_bench_cuda.cpp: real dims on a GPU)
// Prints achieved GFLOP/s next to sgemm's for: a mid-size Qwen3 text encoder (head_dim 128, hidden 2048,
// 3 layers, BF16 and F32 weights) at Lfull = 256; one DiT step (hidden 2048 = 16 heads x 128, 2 blocks,
// L = 64) at N = 256, 1024 and 4096; the VAE decode (decoder_base_dim 32) at N = 256 and 1024; and the peak
// resident memory after each. `--real-vae` adds the VAE at the real dims (decoder_base_dim 144) at
// 256x256 to the VAE section; `--only encoder|dit|vae|vae-tiles` runs one section (vae-tiles: the
// tiled decode against the untiled one). `--precision int8-convrot` runs engine_bench_int8.cpp's section
// instead (the int8 GEMM and the ConvRot W8A8 Linear against sgemm and the fp32 Linear, 2 threads).
// Every ratio is against sgemm measured in the same rounds as the graph (sgemm, graph, sgemm, graph, ...;
// the best of each), so a machine whose load changes during the run still gives comparable figures.
#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cpu/dit.h"
#include "engine/cpu/linear.h"
#include "engine/cpu/vae_decoder.h"
#include "host/noise.h"
#include "host/rope.h"
#include "engine/cpu/text_encoder.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

using Clock = std::chrono::steady_clock;
using namespace rgbaq;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

template <typename F>
double best_of(int reps, F&& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t = Clock::now();
    f();
    best = std::min(best, seconds_since(t));
  }
  return best;
}

// OpenBLAS sgemm on all threads, the shape of the encoder's largest linear at Lfull = 256.
double sgemm_gflops(int threads, int reps = 5) {
  const int m = 256, n = 6144, k = 2048;
  std::vector<float> a(size_t(m) * k, 0.5f), b(size_t(n) * k, 0.25f), c(size_t(m) * n);
  openblas_set_num_threads(threads);
  const double s = best_of(reps, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, c.data(), n);
  });
  engine::cpu::use_single_threaded_blas();
  return 2.0 * m * n * k / s / 1e9;
}

struct Timing {
  double seconds = 1e30;  // the graph's best
  double sgemm = 0;       // sgemm's best GFLOP/s in the same rounds
};

// `rounds` times: sgemm (best of 2), then the graph once.
template <typename F>
Timing interleaved(int rounds, int threads, F&& graph) {
  Timing t;
  for (int i = 0; i < rounds; ++i) {
    t.sgemm = std::max(t.sgemm, sgemm_gflops(threads, 2));
    t.seconds = std::min(t.seconds, best_of(1, graph));
  }
  return t;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

// A mid-size Qwen3 text encoder at Lfull = 256, BF16 and F32 weights.
void encoder_section(engine::cpu::ThreadPool& pool) {
  engine::TextEncoderConfig c;
  c.hidden = 2048, c.layers = 3, c.heads = 16, c.kv_heads = 4, c.head_dim = 128, c.intermediate = 6144, c.vocab = 4096;
  const int64_t L = 256, q_dim = int64_t{c.heads} * c.head_dim, kv_dim = int64_t{c.kv_heads} * c.head_dim;
  const double linear_flops = 2.0 * L * (c.hidden * (q_dim + 2 * kv_dim) + q_dim * c.hidden + 3.0 * c.hidden * c.intermediate);
  const double attention_flops = 2.0 * 2.0 * (L * (L + 1) / 2.0) * q_dim;  // causal: QK^T and PV over half the pairs
  const double flops = c.layers * (linear_flops + attention_flops);
  std::vector<int32_t> ids(L);
  for (int64_t i = 0; i < L; ++i) ids[i] = static_cast<int32_t>((i * 7919) % c.vocab);

  std::printf("text encoder: hidden %d, %d layers, %d heads x %d (kv %d), intermediate %d, Lfull %lld\n", c.hidden,
              c.layers, c.heads, c.head_dim, c.kv_heads, c.intermediate, static_cast<long long>(L));
  for (engine::DType dtype : {engine::DType::kBF16, engine::DType::kF32}) {
    TempDir dir;
    tools::write_text_encoder(dir.path(), c, 1, dtype, false);
    const auto weights = engine::WeightStore::open(dir.path());
    const engine::cpu::TextEncoder encoder(weights, c);
    encoder.encode(ids, pool);  // warm: page the mapped weights in
    const Timing t = interleaved(3, pool.size(), [&] { encoder.encode(ids, pool); });
    const double s = t.seconds;
    std::printf("  %-4s weights: %7.3f s  %8.0f tokens/s  %6.1f GFLOP/s  = %3.0f%% of sgemm (%.1f alongside)\n",
                std::string(engine::dtype_name(dtype)).c_str(), s, L / s, flops / s / 1e9, 100 * flops / s / 1e9 / t.sgemm,
                t.sgemm);
  }
  std::printf("  peak resident memory so far: %.0f MiB\n\n", peak_rss_mib());
}

// One DiT step at N = 256, 1024 and 4096.
void dit_section(engine::cpu::ThreadPool& pool) {
  engine::DitConfig dc;
  dc.layers = 2, dc.heads = 16, dc.head_dim = 128, dc.context_dim = 2048;
  TempDir dit_dir;
  tools::write_dit(dit_dir.path(), dc, 2, engine::DType::kBF16);
  const auto dit_weights = engine::WeightStore::open(dit_dir.path());
  const engine::cpu::Dit dit(dit_weights, dc);
  const int64_t text_len = 64, dim = dc.dim(), mlp = dim * dc.mlp_ratio;
  std::vector<float> feats(size_t(text_len * dc.context_dim));
  for (size_t i = 0; i < feats.size(); ++i) feats[i] = float((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  const engine::Tensor txt = engine::Tensor::from_f32({text_len, dc.context_dim}, feats);
  std::printf("DiT step: hidden %lld (%d heads x 128), %d blocks, mlp %lld, L %lld, BF16 weights\n",
              static_cast<long long>(dim), dc.heads, dc.layers, static_cast<long long>(mlp), static_cast<long long>(text_len));
  for (int side : {256, 512, 1024}) {
    const host::ImageSize size{side, side};
    const int64_t n = size.tokens();
    const auto rope = host::build_rope(host::RopeTables::from_formula(), int(text_len), size);
    const engine::Tensor img = engine::Tensor::from_f32({n, 64}, host::initial_tokens(1, size));
    engine::cpu::DitWorkspace ws;
    engine::cpu::TextPrefix prefix;
    dit.text_prefix(txt, rope, ws, prefix, pool);
    std::vector<float> vel(static_cast<size_t>(n * 64));
    const double block_flops = 2.0 * n * (4.0 * dim * dim + 3.0 * dim * mlp) + 4.0 * n * (text_len + n) * dim;
    const double step_flops = dc.layers * block_flops + 2.0 * n * (64.0 * dim + dim * 64.0);
    dit.velocity(img, prefix, 0.9f, rope, ws, vel.data(), pool);
    const Timing t = interleaved(3, pool.size(), [&] { dit.velocity(img, prefix, 0.9f, rope, ws, vel.data(), pool); });
    const double s = t.seconds;
    std::printf("  N %5lld: %7.3f s/step  %6.1f GFLOP/s  = %3.0f%% of sgemm (%.1f alongside)   peak RSS %.0f MiB\n",
                static_cast<long long>(n), s, step_flops / s / 1e9, 100 * step_flops / s / 1e9 / t.sgemm, t.sgemm,
                peak_rss_mib());
  }
}

// The VAE decode at each side in pixels, decoder_base_dim `base`.
void vae_section(engine::VaeConfig vc, int base, std::initializer_list<int> sides, engine::cpu::ThreadPool& pool) {
  vc.decoder_base_dim = base;
  TempDir vae_dir;
  tools::write_vae(vae_dir.path(), vc, 3, engine::DType::kBF16);
  const auto vae_weights = engine::WeightStore::open(vae_dir.path());
  const engine::cpu::VaeDecoder vae(vae_weights, vc);
  std::printf("\nVAE decode: decoder_base_dim %d (channels %d -> %d), BF16 weights widened at load\n", vc.decoder_base_dim,
              base * vc.dim_mult.back(), base);
  for (int side : sides) {
    const host::ImageSize size{side, side};
    const engine::Tensor latents = engine::Tensor::from_f32({size.tokens(), 64}, host::initial_tokens(2, size));
    const double f = vae.flops(size.grid_height(), size.grid_width());
    vae.decode(latents, size.grid_height(), size.grid_width(), pool);  // warm: the feature-map buffers
    const Timing t = interleaved(3, pool.size(), [&] { vae.decode(latents, size.grid_height(), size.grid_width(), pool); });
    const double s = t.seconds;
    std::printf("  N %5lld (%dx%d px): %7.3f s  %6.1f GFLOP/s  = %3.0f%% of sgemm (%.1f alongside)   peak RSS %.0f MiB\n",
                static_cast<long long>(size.tokens()), side, side, s, f / s / 1e9, 100 * f / s / 1e9 / t.sgemm, t.sgemm,
                peak_rss_mib());
  }
}

// The tiled VAE decode (engine/vae_tile_plan.h) against the untiled one in the same run: the tiny
// model's decoder (decoder_base_dim 8, as the tests use) at `side` px, its map budget a quarter of
// what the untiled decode holds, so the decoder plans its own tiles.
void vae_tiles_section(const engine::VaeConfig& vc, int side, engine::cpu::ThreadPool& pool) {
  TempDir vae_dir;
  tools::write_vae(vae_dir.path(), vc, 3, engine::DType::kBF16);
  const auto vae_weights = engine::WeightStore::open(vae_dir.path());
  const engine::cpu::VaeDecoder vae(vae_weights, vc);
  const host::ImageSize size{side, side};
  const engine::Tensor latents = engine::Tensor::from_f32({size.tokens(), 64}, host::initial_tokens(2, size));
  const engine::VaeTilePlan whole = engine::vae_untiled_plan(vc, size.grid_height(), size.grid_width());
  const int64_t whole_bytes = engine::cpu::VaeDecoder::map_bytes(vc, whole);
  const engine::VaeTilePlan tiled =
      engine::cpu::VaeDecoder::plan(vc, size.grid_height(), size.grid_width(), whole_bytes / 4);
  double seconds[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const engine::VaeTilePlan& plan = i == 0 ? whole : tiled;
    vae.decode(latents, plan, pool);  // warm: the feature-map buffers
    seconds[i] = interleaved(3, pool.size(), [&] { vae.decode(latents, plan, pool); }).seconds;
  }
  std::printf("\nVAE decode tiled vs untiled: decoder_base_dim %d at %dx%d px\n", vc.decoder_base_dim, side, side);
  std::printf("  untiled: %7.3f s, maps %.1f MiB\n", seconds[0], whole_bytes / 1048576.0);
  std::printf("  tiled:   %7.3f s, maps %.1f MiB: %lld tiles of %lld px from up block %d (halo %lld, recompute x%.2f)\n",
              seconds[1], engine::cpu::VaeDecoder::map_bytes(vc, tiled) / 1048576.0,
              static_cast<long long>(tiled.tile_count()), static_cast<long long>(tiled.tile), tiled.first_tiled,
              static_cast<long long>(tiled.halo), tiled.recompute_ratio());
  std::printf("  tiled / untiled time: %.2f\n", seconds[1] / seconds[0]);
}

}  // namespace

#if RGBAQ_HAVE_CUDA
namespace rgbaq {
int run_cuda_engine_bench(int argc, char** argv);
}
#endif

namespace rgbaq {
void int8_convrot_section(engine::cpu::ThreadPool& pool);  // engine_bench_int8.cpp
}

int main(int argc, char** argv) {
  int threads = 0;
  bool real_vae = false;
  std::string only, precision;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--real-vae") == 0) real_vae = true;
    if (i + 1 >= argc) break;
    if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--precision") == 0) precision = argv[i + 1];
    if (std::strcmp(argv[i], "--engine") == 0 && std::strcmp(argv[i + 1], "cuda") == 0) {
#if RGBAQ_HAVE_CUDA
      return rgbaq::run_cuda_engine_bench(argc, argv);
#else
      std::fprintf(stderr, "engine_bench: --engine cuda: this build has no CUDA backend (CMake found no CUDA toolkit)\n");
      return 2;
#endif
    }
  }
  if (precision == "int8-convrot") {  // the int8 products against fp32; 2 threads unless --threads says
    engine::cpu::ThreadPool pool(threads > 0 ? threads : 2);
    int8_convrot_section(pool);
    return 0;
  }
  if (!precision.empty()) {
    std::fprintf(stderr, "engine_bench: --precision %s: not one of int8-convrot\n", precision.c_str());
    return 2;
  }
  engine::cpu::ThreadPool pool(threads);
  const double sgemm = sgemm_gflops(pool.size());
  std::printf("threads: %d\nOpenBLAS sgemm (256x6144x2048, %d threads): %.1f GFLOP/s\n\n", pool.size(), pool.size(), sgemm);

  auto runs = [&](const char* section) { return only.empty() || only == section; };

  if (runs("encoder")) encoder_section(pool);
  if (runs("dit")) dit_section(pool);
  if (runs("vae")) vae_section(tools::tiny_vae_config(), 32, {256, 512}, pool);
  if (runs("vae") && real_vae) vae_section(tools::real_vae_config(), 144, {256}, pool);
  if (runs("vae-tiles")) vae_tiles_section(tools::tiny_vae_config(), 1024, pool);
  return 0;
}

