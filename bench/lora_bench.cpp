// The cost of LoRA adapters applied unmerged on the CPU DiT: one velocity step at the tiny mid-size
// dims (hidden 2048 = 16 heads x 128, 2 blocks, L 64, BF16 weights) without a LoRA, then with a rank-16
// and a rank-64 adapter on every Linear, as a ratio to the step without, measured in the same run.
// usage: lora_bench [--threads N] [--side PX]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/arguments.h"
#include "engine/cpu/dit.h"
#include "engine/lora.h"
#include "host/noise.h"
#include "host/rope.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

using Clock = std::chrono::steady_clock;
using namespace rgbaq;

namespace {

// The median of `reps` timed calls: steady against a neighbour's burst on a shared machine.
template <typename F>
double median_seconds(int reps, F&& f) {
  std::vector<double> times;
  while (static_cast<int>(times.size()) < reps) {
    const auto start = Clock::now();
    f();
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const common::Arguments args({argv + 1, argv + argc}, {"threads", "side"}, {});
  engine::cpu::ThreadPool pool(args.get_int("threads", 0));
  const int side = args.get_int("side", 512);
  engine::DitConfig dc;
  dc.layers = 2, dc.heads = 16, dc.head_dim = 128, dc.context_dim = 2048;
  TempDir dir;
  tools::write_dit(dir.path() / "dit", dc, 2, engine::DType::kBF16);
  const auto weights = engine::WeightStore::open(dir.path() / "dit");
  engine::cpu::Dit dit(weights, dc);
  const int64_t text_len = 64;
  std::vector<float> feats(size_t(text_len * dc.context_dim));
  for (size_t i = 0; i < feats.size(); ++i) feats[i] = float((i * 2654435761u) % 1000) / 500.0f - 1.0f;
  const engine::Tensor txt = engine::Tensor::from_f32({text_len, dc.context_dim}, feats);
  const host::ImageSize size{side, side};
  const int64_t n = size.tokens();
  const auto rope = host::build_rope(host::RopeTables::from_formula(), int(text_len), size);
  const engine::Tensor img = engine::Tensor::from_f32({n, 64}, host::initial_tokens(1, size));
  std::vector<float> vel(static_cast<size_t>(n * 64));
  std::printf("DiT step with LoRA: hidden %lld, %d blocks, L %lld, N %lld, %d threads, every Linear adapted\n",
              static_cast<long long>(dc.dim()), dc.layers, static_cast<long long>(text_len), static_cast<long long>(n),
              pool.size());
  auto step_seconds = [&] {
    engine::cpu::DitWorkspace ws;
    engine::cpu::TextPrefix prefix;
    dit.text_prefix(txt, rope, ws, prefix, pool);
    dit.velocity(img, prefix, 0.9f, rope, ws, vel.data(), pool);  // warm: page the weights in, size the workspace
    return median_seconds(5, [&] { dit.velocity(img, prefix, 0.9f, rope, ws, vel.data(), pool); });
  };
  const double base = step_seconds();
  std::printf("  no LoRA:  %8.4f s/step\n", base);
  const auto modules = engine::dit_linear_modules(dc);
  for (int rank : {16, 64}) {
    const auto path = dir.path() / ("r" + std::to_string(rank) + ".safetensors");
    tools::write_lora(path, dc, tools::LoraFormat::kDiffusers, rank, static_cast<float>(rank), modules, 5);
    const auto adapter = engine::load_lora(path, "r" + std::to_string(rank), dc);
    dit.set_loras({{adapter, 0.8f}});
    const double s = step_seconds();
    std::printf("  rank %2d:  %8.4f s/step  = %.3f x the step without (adapter %.1f MiB fp32)\n", rank, s, s / base,
                adapter->bytes() / 1048576.0);
    dit.set_loras({});
  }
  return 0;
}
