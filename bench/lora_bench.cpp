// The cost of LoRA adapters applied unmerged on the CPU DiT: one velocity step at the tiny mid-size
// dims (hidden 2048 = 16 heads x 128, 2 blocks, L 64, BF16 weights) without a LoRA, then with a rank-16
// and a rank-64 adapter on every Linear, as a ratio to the step without, measured in the same run.
// usage: lora_bench [--threads N] [--side PX] [--rounds R]
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const common::Arguments args({argv + 1, argv + argc}, {"threads", "side", "rounds"}, {});
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
  // The three configurations take turns, round after round, so a neighbour's burst on a shared machine
  // lands on all of them alike; each figure is a median over the rounds, each ratio the median of the
  // rounds' ratios.
  const auto modules = engine::dit_linear_modules(dc);
  struct Config {
    std::string label;
    engine::LoraSet set;
    engine::cpu::DitWorkspace ws;
    engine::cpu::TextPrefix prefix;
    std::vector<double> seconds;
  };
  std::vector<Config> configs(3);
  configs[0].label = "no LoRA";
  for (int i : {1, 2}) {
    const int rank = i == 1 ? 16 : 64;
    const auto path = dir.path() / ("r" + std::to_string(rank) + ".safetensors");
    tools::write_lora(path, dc, tools::LoraFormat::kDiffusers, rank, static_cast<float>(rank), modules, 5);
    configs[i].label = "rank " + std::to_string(rank);
    configs[i].set = {{engine::load_lora(path, configs[i].label, dc), 0.8f}};
  }
  for (Config& c : configs) {  // each one's text prefix, and a warm step (weights paged in, workspace sized)
    dit.set_loras(c.set);
    dit.text_prefix(txt, rope, c.ws, c.prefix, pool);
    dit.velocity(img, c.prefix, 0.9f, rope, c.ws, vel.data(), pool);
  }
  const int rounds = args.get_int("rounds", 7);
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < configs.size(); ++k) {  // each round starts with another one: no place in it favoured
      Config& c = configs[(k + static_cast<size_t>(r)) % configs.size()];
      dit.set_loras(c.set);
      const auto start = Clock::now();
      dit.velocity(img, c.prefix, 0.9f, rope, c.ws, vel.data(), pool);
      c.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
  }
  const double base = median(configs[0].seconds);
  std::printf("  %-8s %8.4f s/step (median of %d rounds)\n", configs[0].label.c_str(), base, rounds);
  for (size_t i = 1; i < configs.size(); ++i) {
    std::vector<double> ratios;
    for (int r = 0; r < rounds; ++r) ratios.push_back(configs[i].seconds[r] / configs[0].seconds[r]);
    std::printf("  %-8s %8.4f s/step  = %.3f x the step without (median of the rounds' ratios; adapter %.1f MiB fp32)\n",
                configs[i].label.c_str(), median(configs[i].seconds), median(ratios),
                configs[i].set[0].adapter->bytes() / 1048576.0);
  }
  return 0;
}
