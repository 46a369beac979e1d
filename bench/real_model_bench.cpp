// A render at the real model's size on this machine, from a checkpoint `make_tiny_model --dims real`
// (random weights, bf16 or --int8) wrote. Never part of CI: it needs tens of GB of disk and minutes.
// usage: real_model_bench --model DIR [--dit FILE] [--size 256] [--steps 8] [--threads N]
// (--dit: a single-file DiT, e.g. `rgbaq model quantize --format int8-convrot`, in place of the directory's.)
// Prints per-phase times (tokenize, encode, the text prefix + first step, each later step, decode), the
// DiT step's GFLOP/s as a ratio to OpenBLAS sgemm measured in the same run, peak RSS, and major page
// faults per phase (the mapped weights read from disk): the encoder runs a second prompt to show that
// its pages are not re-read.
#include <cblas.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cpu/linear.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vae_decoder.h"
#include "engine/model/model_directory.h"
#include "engine/session.h"
#include "host/noise.h"

using Clock = std::chrono::steady_clock;
using namespace rgbaq;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Usage {
  double peak_rss_gib;
  long major_faults;
};
Usage usage() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {u.ru_maxrss / (1024.0 * 1024.0), u.ru_majflt};
}

double sgemm_gflops(int threads) {
  const int m = 256, n = 12288, k = 4096;  // the DiT's MLP at N 256
  std::vector<float> a(size_t(m) * k, 0.5f), b(size_t(n) * k, 0.25f), c(size_t(m) * n);
  openblas_set_num_threads(threads);
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto t = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, c.data(), n);
    best = std::min(best, seconds_since(t));
  }
  engine::cpu::use_single_threaded_blas();
  return 2.0 * m * n * k / best / 1e9;
}

void phase(const char* name, double seconds, const Usage& before) {
  const Usage now = usage();
  std::printf("  %-28s %9.2f s   peak RSS %6.2f GiB   major faults %8ld\n", name, seconds, now.peak_rss_gib,
              now.major_faults - before.major_faults);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, dit;
  int side = 256, steps = 8, threads = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--model")) model = argv[i + 1];
    if (!std::strcmp(argv[i], "--dit")) dit = argv[i + 1];
    if (!std::strcmp(argv[i], "--size")) side = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
  }
  if (model.empty()) {
    std::fprintf(stderr, "usage: real_model_bench --model DIR [--dit FILE] [--size 256] [--steps 8] [--threads N]\n");
    return 2;
  }
  try {
    Usage before = usage();
    auto t = Clock::now();
    engine::EngineOptions options;
    options.backend = "cpu";
    options.threads = threads;
    options.components.dit = dit;
    const auto dir = engine::ModelDirectory::open(model, options.components);
    auto session = engine::Session::open(model, options);
    engine::cpu::ThreadPool pool(threads);
    const double sgemm = sgemm_gflops(pool.size());
    std::printf("model %s%s%s (DiT: %s), %dx%d, %d threads; OpenBLAS sgemm 256x12288x4096: %.1f GFLOP/s\n", model.c_str(),
                dit.empty() ? "" : ", DiT file ", dit.c_str(), engine::linear_formats_summary(dir.reports()[1]).c_str(), side,
                side, pool.size(), sgemm);
    phase("open (map, check)", seconds_since(t), before);

    const engine::RenderRequest request{"a red fox in the snow, game asset, studio lighting", 7, {side, side}};
    before = usage();
    t = Clock::now();
    const auto prompt = session->tokenize(request.prompt);
    const engine::Tensor embeds = session->encode(prompt);
    phase("tokenize + encode", seconds_since(t), before);
    before = usage();
    t = Clock::now();
    session->encode(session->tokenize("a second prompt of a seed sweep, blue"));
    phase("encode, a second prompt", seconds_since(t), before);

    // The steps through the session (the text prefix is built with the first), timed between callbacks;
    // the render stops after --steps.
    std::vector<double> step_s;
    before = usage();
    t = Clock::now();
    try {
      session->render_embedded(embeds, request, [&](int done, int) {
        step_s.push_back(seconds_since(t));
        t = Clock::now();
        return done < steps;
      });
    } catch (const engine::RenderCanceled&) {
    }
    const Usage after_steps = usage();
    const auto& c = dir.dit_config();
    const double n = double(side / 16) * (side / 16), l = double(embeds.dim(0)), d = c.dim(), mlp = d * c.mlp_ratio;
    const double step_flops = c.layers * (2.0 * n * (4 * d * d + 3 * d * mlp) + 4.0 * n * (l + n) * d) + 2.0 * n * 128 * d;
    for (size_t i = 0; i < step_s.size(); ++i) {
      char name[64];
      std::snprintf(name, sizeof name, i == 0 ? "DiT step 1 (+ text prefix)" : "DiT step %zu", i + 1);
      std::printf("  %-28s %9.2f s", name, step_s[i]);
      if (i > 0) std::printf("   %6.1f GFLOP/s = %3.0f%% of sgemm", step_flops / step_s[i] / 1e9, 100 * step_flops / step_s[i] / 1e9 / sgemm);
      std::printf("\n");
    }
    std::printf("  %-28s peak RSS %6.2f GiB   major faults %8ld\n", "after the steps", after_steps.peak_rss_gib,
                after_steps.major_faults - before.major_faults);

    // Decode: the decoder (our own VaeDecoder over the checked weights), on noise-shaped latents.
    before = usage();
    t = Clock::now();
    const auto vae_weights = dir.open_weights("vae");
    const engine::cpu::VaeDecoder vae(vae_weights, dir.vae_config());
    const host::ImageSize size{side, side};
    const engine::Tensor latents = engine::Tensor::from_f32({size.tokens(), 64}, host::initial_tokens(1, size));
    vae.decode(latents, size.grid_height(), size.grid_width(), pool);
    const double decode_s = seconds_since(t);
    phase("VAE load + decode", decode_s, before);
    std::printf("VAE decode %.1f GFLOP/s = %.0f%% of sgemm\n", vae.flops(size.grid_height(), size.grid_width()) / decode_s / 1e9,
                100 * vae.flops(size.grid_height(), size.grid_width()) / decode_s / 1e9 / sgemm);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "real_model_bench: %s\n", e.what());
    return 1;
  }
}
