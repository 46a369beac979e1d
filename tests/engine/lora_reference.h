#pragma once
// LoRA adapters merged in float64 (W + sum weight * alpha / rank * B A), per weight name: the deltas the
// float64 DiT reference (dit_reference.h) adds to its weights or, for W8A8 Linears, to their outputs.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/lora.h"
#include "tests/engine/reference_math.h"

namespace rgbaq::testing {

inline std::map<std::string, Vec> merged_deltas(
    const std::vector<std::pair<std::shared_ptr<const engine::LoraAdapter>, double>>& set) {
  std::map<std::string, Vec> deltas;
  for (const auto& [adapter, weight] : set) {
    for (const engine::LoraModule& m : adapter->modules) {
      Vec& d = deltas[m.module + ".weight"];
      d.resize(static_cast<size_t>(m.out * m.in));
      const double scale = weight * static_cast<double>(m.alpha_over_rank);
      for (int64_t o = 0; o < m.out; ++o)
        for (int64_t i = 0; i < m.in; ++i) {
          double s = 0;
          for (int64_t r = 0; r < m.rank; ++r) s += double(m.up[o * m.rank + r]) * double(m.down[r * m.in + i]);
          d[o * m.in + i] += scale * s;
        }
    }
  }
  return deltas;
}

}  // namespace rgbaq::testing
