#pragma once
// What a render needs in memory, estimated from a checked model directory (no weights are read):
// resident weights plus work buffers. On the CPU the largest any graph holds at once (the graphs run
// one after another, so their buffers do not add up), estimated from the buffers they allocate; on
// CUDA every graph's, which a session keeps together, as engine/cuda/workspace_plan.h counts them
// (bf16), with the weights in their stored dtype.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model_directory.h"

namespace rgbaq::engine {

struct RenderMemory {
  std::string engine;           // "cpu", "cuda"
  uint64_t weights = 0;         // resident weight bytes
  uint64_t shared = 0;          // of them, the pages every session of a process shares (cpu: the mapped files)
  int size = 0;                 // square image side
  uint64_t text_encoder = 0, dit = 0, vae = 0;  // work bytes of each graph at this size (prompt of 512 tokens)
  uint64_t total() const;       // weights + the largest of the three (cpu) or all three (cuda)
  uint64_t per_session() const { return total() - shared; }  // what each further session adds
};

// For sizes 256, 512 and 1024 on each engine; `threads` sizes the per-thread scratch.
std::vector<RenderMemory> estimate_render_memory(const ModelDirectory& model, int threads);

}  // namespace rgbaq::engine
