// engine_bench --engine cuda [--precision bf16|fp8] [--attention gemm|fused] [--fused-blocks on|off]
// [--text-tokens L] [--reps R] [--json FILE]: the CUDA backend at the real model's dims (N 4096 image
// tokens at 1024 x 1024, L 200 text tokens unless told) with random weights made on the device (the
// VAE's shapes from a hollow checkpoint in the temp folder). Prints the cuBLASLt bf16 GEMM rate
// measured in the same run, then per graph: the median of R (>= 5) timings after a warm-up, with CUDA
// events on the session's stream; its FLOPs and their rate as a share of that GEMM rate; the launches
// it makes (kernels plus cuBLASLt calls); for the DiT step the attention's share (with --attention
// fused, one block's attention by both kernels in the same run); the peak device memory; then a whole
// 1024 x 1024 image split into encode, text prefix, 8 steps and decode. --json writes the same figures
// for scripts/device-check. Has never run: no GPU was at hand (README "What has run where").
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/cuda_timing.h"
#include "engine/cpu/vae_decoder.h"
#include "engine/cuda/attention.h"
#include "engine/cuda/attention_plan.h"
#include "engine/cuda/flash_attention.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_dit.h"
#include "engine/cuda/cuda_text_encoder.h"
#include "engine/cuda/cuda_vae.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/workspace_plan.h"
#include "engine/engine_options.h"
#include "host/noise.h"
#include "host/rope.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

namespace rgbaq {
namespace {

using namespace engine;
using namespace engine::cuda;
using json = nlohmann::json;

// The chat template's tokens before the prompt, which the DiT never sees (the encoder runs them).
constexpr int64_t kTemplateTokens = 14;

using bench::Timed;
using bench::time_on;

struct Report {
  double gemm_rate = 0;
  json graphs = json::array();
  void graph(const char* name, const std::string& shape, const Timed& t, double flops) {
    std::printf("%-28s %-28s %9.2f ms (best %8.2f)  %7.1f TFLOP/s = %3.0f%% of the GEMM rate  %5llu launches\n", name,
                shape.c_str(), t.median * 1e3, t.best * 1e3, flops / t.median / 1e12, 100 * flops / t.median / gemm_rate,
                static_cast<unsigned long long>(t.launches));
    graphs.push_back({{"name", name}, {"shape", shape}, {"median_s", t.median}, {"best_s", t.best}, {"flops", flops},
                      {"tflops", flops / t.median / 1e12}, {"of_gemm_rate", flops / t.median / gemm_rate},
                      {"launches", t.launches}});
  }
};

// The value after `name`, or null.
const char* arg(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return nullptr;
}

}  // namespace

int run_cuda_engine_bench(int argc, char** argv) {
  try {
    std::string why;
    if (visible_devices(&why) == 0) {
      std::fprintf(stderr, "engine_bench --engine cuda: %s\n", why.c_str());
      return 2;
    }
    const char* text_tokens = arg(argc, argv, "--text-tokens");
    const char* reps_arg = arg(argc, argv, "--reps");
    const int64_t l = text_tokens ? std::atoll(text_tokens) : 200;
    const int reps = std::max(5, reps_arg ? std::atoi(reps_arg) : 5);
    const std::string json_path = arg(argc, argv, "--json") ? arg(argc, argv, "--json") : "";
    if (l < 1 || l > 1024) throw std::invalid_argument("--text-tokens must be 1..1024");
    const std::string precision = arg(argc, argv, "--precision") ? arg(argc, argv, "--precision") : "bf16";
    if (precision != "bf16" && precision != "fp8") throw std::invalid_argument("--precision must be bf16 or fp8");
    // fp8: the blocks' and the encoder layers' Linears, as a --precision fp8 session makes them.
    const LinearFormats formats{precision == "fp8", false};
    const char* attention_arg = arg(argc, argv, "--attention");
    const AttentionKernel kernel = parse_attention_kernel(attention_arg ? attention_arg : "gemm");
    const bool fused = kernel == AttentionKernel::kFused;
    const char* blocks_arg = arg(argc, argv, "--fused-blocks");
    const bool fused_blocks = parse_on_off(blocks_arg ? blocks_arg : "off");

    const int device = 0;
    check(cudaSetDevice(device), device, "cudaSetDevice");
    cudaStream_t stream;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), device, "cudaStreamCreate");
    DeviceArena arena(device, 0);
    Gemm gemm(arena, stream);
    Report report;
    std::printf("device: %s, %s usable; median of %d after a warm-up, CUDA events\n", device_label(device).c_str(),
                gib_string(arena.budget()).c_str(), reps);

    // The rate every figure below is a share of: a DiT linear's shape at 1024 x 1024 (fp32 out, as ours).
    {
      const int64_t m = 4096, n = 4096, k = 4096;
      DeviceBuffer a = arena.allocate(m * k * 2, "bench A"), b = arena.allocate(n * k * 2, "bench B"),
                   c = arena.allocate(m * n * 4, "bench C");
      fill_random(a.get(), ElementType::kBf16, m * k, 1, 1.0f, 0.0f, stream);
      fill_random(b.get(), ElementType::kBf16, n * k, 2, 1.0f, 0.0f, stream);
      const Timed t = time_on(stream, 2 * reps, [&] { gemm.linear(ElementType::kBf16, a.get(), m, b.get(), n, k, c.as<float>()); });
      report.gemm_rate = 2.0 * m * n * k / t.median;
      std::printf("cuBLASLt bf16 GEMM 4096x4096x4096 (fp32 out): %.1f TFLOP/s\n\n", report.gemm_rate / 1e12);
    }

    WeightSource random(arena, ElementType::kBf16, stream, formats, true, 7);
    LinearRunner linears(arena, gemm, ElementType::kBf16, stream);
    std::printf("precision: %s, attention: %s, fused blocks: %s\n", precision.c_str(), attention_kernel_name(kernel),
                fused_blocks ? "on" : "off");
    const TextEncoderConfig tc = tools::real_text_encoder_config();
    const DitConfig dc = tools::real_dit_config();
    const VaeConfig vc = tools::real_vae_config();
    const host::ImageSize size{1024, 1024};
    const int64_t lfull = l + kTemplateTokens, n = size.tokens(), dim = dc.dim(), mlp = dim * dc.mlp_ratio;

    CudaTextEncoder encoder(tc, nullptr, random, linears, stream, fused);
    std::vector<int32_t> ids(static_cast<size_t>(lfull));
    for (int64_t i = 0; i < lfull; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919) % tc.vocab);
    const double kv = 2.0 * tc.kv_heads * tc.head_dim;
    const double enc_flops = tc.layers * (2.0 * lfull * tc.hidden * (tc.hidden + kv + tc.hidden + 3.0 * tc.intermediate) +
                                          2.0 * lfull * lfull * tc.heads * tc.head_dim);  // causal: half of 4 L^2 d
    Tensor hidden;
    report.graph("encode", "L " + std::to_string(lfull), time_on(stream, reps, [&] { hidden = encoder.encode(ids); }), enc_flops);

    CudaDit dit(dc, nullptr, random, linears, stream, false, fused, fused_blocks);
    const Tensor feats = Tensor::from_f32(
        {l, tc.hidden}, std::vector<float>(hidden.f32() + kTemplateTokens * tc.hidden, hidden.f32() + lfull * tc.hidden));
    const auto rope = host::build_rope(host::RopeTables::from_formula(), static_cast<int>(l), size);
    Tensor x = Tensor::from_f32({n, 64}, host::initial_tokens(1, size));
    std::vector<float> vel(static_cast<size_t>(n * 64));
    const double block_linears = 4.0 * dim * dim + 3.0 * dim * mlp;
    const double prefix_flops = dc.layers * (2.0 * l * block_linears + 2.0 * l * l * dim) + 2.0 * l * dim * (dc.context_dim + dim);
    report.graph("DiT text prefix (per image)", "L " + std::to_string(l),
                 time_on(stream, reps, [&] { dit.begin_image(feats, rope); }), prefix_flops);
    const double step_flops = dc.layers * (2.0 * n * block_linears + 4.0 * n * (l + n) * dim) + 2.0 * n * 128.0 * dim;  // img_in, proj_out
    const Timed step = time_on(stream, reps, [&] { dit.step(x, 0.9f, vel.data()); });
    report.graph("DiT step", "N " + std::to_string(n) + ", L " + std::to_string(l), step, step_flops);

    // The step's attention alone, as each block runs it: N queries over L + N keys, the DiT's workspace.
    double attention_share = 0, fused_speedup = 0;
    {
      const int64_t keys = l + n;
      DeviceBuffer q = arena.allocate(n * dim * 2, "bench Q"), k = arena.allocate(keys * dim * 2, "bench K"),
                   v = arena.allocate(keys * dim * 2, "bench V"), out = arena.allocate(n * dim * 4, "bench attention out");
      for (auto* b : {&q, &k, &v}) fill_random(b->get(), ElementType::kBf16, static_cast<int64_t>(b->bytes() / 2), 3, 1.0f, 0.0f, stream);
      const int64_t elements = attention_score_elements(dc.heads, n, keys, kDitScoreBudget);
      DeviceBuffer scores = arena.allocate(elements * 4, "bench scores"), probs = arena.allocate(elements * 2, "bench probs");
      AttentionArgs a;
      a.q = q.get(), a.k = k.get(), a.v = v.get(), a.out = out.as<float>();
      a.ldq = a.ldk = a.ldv = a.ldo = dim;
      a.q_rows = n, a.kv_rows = keys, a.causal_rows = 0;
      a.q_heads = a.kv_heads = dc.heads, a.head_dim = dc.head_dim;
      a.scale = 1.0f / std::sqrt(static_cast<float>(dc.head_dim));
      const Timed by_gemm = time_on(stream, reps, [&] {
        attention(gemm, ElementType::kBf16, a, {scores.as<float>(), probs.get(), elements}, stream);
      });
      const std::string shape = "N " + std::to_string(n) + " x " + std::to_string(keys) + " keys";
      report.graph("  its attention, one block (gemm)", shape, by_gemm, 4.0 * n * keys * dim);
      Timed t = by_gemm;
      if (fused) {  // only when asked: a fault in the unproven kernel must not cost the gemm run its figures
        t = time_on(stream, reps, [&] { flash_attention(a, stream); });
        report.graph("  its attention, one block (fused)", shape, t, 4.0 * n * keys * dim);
        fused_speedup = by_gemm.median / t.median;
        std::printf("  fused attention: %.2fx the gemm path\n", fused_speedup);
      }
      attention_share = dc.layers * t.median / step.median;
      std::printf("  attention: %.0f%% of the step (32 blocks x %.2f ms)\n", 100 * attention_share, t.median * 1e3);
    }

    std::unique_ptr<CudaVae> vae;
    double vae_flops = 0;
    {
      TempDir vae_dir;
      tools::write_vae(vae_dir.path(), vc, 3, DType::kBF16, tools::Layout::kOurs, true);  // hollow: the shapes only
      const auto vae_weights = WeightStore::open(vae_dir.path());
      const cpu::VaeDecoder views(vae_weights, vc);
      vae_flops = views.flops(size.grid_height(), size.grid_width());
      vae = std::make_unique<CudaVae>(views, random, gemm, stream);
    }
    report.graph("VAE decode", "1024x1024", time_on(stream, std::max(3, reps / 2), [&] {
                   vae->decode(x, size.grid_height(), size.grid_width());
                 }), vae_flops);

    // A whole image, each part timed on the stream (the host waits for the velocity each step, as a render does).
    std::vector<double> parts[5];
    for (int image = 0; image < 3; ++image) {
      cudaEvent_t e[5];
      for (auto& ev : e) check(cudaEventCreate(&ev), device, "cudaEventCreate");
      check(cudaEventRecord(e[0], stream), device, "cudaEventRecord");
      hidden = encoder.encode(ids);
      check(cudaEventRecord(e[1], stream), device, "cudaEventRecord");
      dit.begin_image(feats, rope);
      check(cudaEventRecord(e[2], stream), device, "cudaEventRecord");
      for (int i = 0; i < 8; ++i) dit.step(x, 1.0f - i / 8.0f, vel.data());
      dit.end_image();
      check(cudaEventRecord(e[3], stream), device, "cudaEventRecord");
      vae->decode(x, size.grid_height(), size.grid_width());
      check(cudaEventRecord(e[4], stream), device, "cudaEventRecord");
      check(cudaEventSynchronize(e[4]), device, "cudaEventSynchronize");
      for (int p = 0; p < 4; ++p) {
        float ms = 0;
        check(cudaEventElapsedTime(&ms, e[p], e[p + 1]), device, "cudaEventElapsedTime");
        parts[p].push_back(ms / 1e3);
      }
      float ms = 0;
      check(cudaEventElapsedTime(&ms, e[0], e[4]), device, "cudaEventElapsedTime");
      parts[4].push_back(ms / 1e3);
      for (auto& ev : e) cudaEventDestroy(ev);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double image[5] = {median(parts[0]), median(parts[1]), median(parts[2]), median(parts[3]), median(parts[4])};
    std::printf("\nwhole 1024x1024 image: %.3f s = encode %.3f + prefix %.3f + 8 steps %.3f + decode %.3f (median of 3)\n",
                image[4], image[0], image[1], image[2], image[3]);
    std::printf("peak device memory: %s (weights and workspaces, the bench's own buffers included)\n",
                gib_string(arena.peak()).c_str());

    if (!json_path.empty()) {
      json j = {{"device", device_label(device)},
                {"precision", precision},
                {"text_tokens", l},
                {"image_tokens", n},
                {"reps", reps},
                {"gemm_bf16_tflops", report.gemm_rate / 1e12},
                {"graphs", report.graphs},
                {"dit_step_s", step.median},
                {"dit_step_launches", step.launches},
                {"attention", attention_kernel_name(kernel)},
                {"fused_blocks", fused_blocks},
                {"attention_share_of_step", attention_share},
                {"fused_attention_speedup_over_gemm", fused_speedup},
                {"image_1024_s", {{"encode", image[0]}, {"prefix", image[1]}, {"steps_8", image[2]}, {"decode", image[3]},
                                  {"total", image[4]}}},
                {"peak_device_bytes", arena.peak()}};
      std::ofstream(json_path) << j.dump(2) << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "engine_bench --engine cuda: %s\n", e.what());
    return 1;
  }
}

}  // namespace rgbaq
