// The CPU engine's speed against the machine's OpenBLAS sgemm, measured in the same run.
// usage: engine_bench [--threads N]
// Prints, for a mid-size Qwen3 text encoder (head_dim 128, hidden 2048, 3 layers, BF16 and F32 weights)
// at Lfull = 256: tokens/s, achieved GFLOP/s, and the ratio to sgemm's GFLOP/s.
#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cpu/linear.h"
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
double sgemm_gflops(int threads) {
  const int m = 256, n = 6144, k = 2048;
  std::vector<float> a(size_t(m) * k, 0.5f), b(size_t(n) * k, 0.25f), c(size_t(m) * n);
  openblas_set_num_threads(threads);
  const double s = best_of(5, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, c.data(), n);
  });
  engine::cpu::use_single_threaded_blas();
  return 2.0 * m * n * k / s / 1e9;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
  }
  engine::cpu::ThreadPool pool(threads);
  const double sgemm = sgemm_gflops(pool.size());
  std::printf("threads: %d\nOpenBLAS sgemm (256x6144x2048, %d threads): %.1f GFLOP/s\n\n", pool.size(), pool.size(), sgemm);

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
    const double s = best_of(3, [&] { encoder.encode(ids, pool); });
    std::printf("  %-4s weights: %7.3f s  %8.0f tokens/s  %6.1f GFLOP/s  = %3.0f%% of sgemm\n",
                std::string(engine::dtype_name(dtype)).c_str(), s, L / s, flops / s / 1e9, 100 * flops / s / 1e9 / sgemm);
  }
  std::printf("peak resident memory: %.0f MiB\n", peak_rss_mib());
  return 0;
}
