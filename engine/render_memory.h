#pragma once
// What a render needs in memory, estimated from a checked model directory (no weights are read):
// resident weights plus work buffers. On the CPU the largest any graph holds at once (the graphs run
// one after another, so their buffers do not add up), estimated from the buffers they allocate; on
// CUDA every graph's, which a session keeps together, as engine/cuda/workspace_plan.h counts them, with
// the weights as the session makes them (engine/cuda/weight_plan.h) at the precision and int8 handling
// asked for: the numbers a CUDA session's fit check uses.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine_options.h"
#include "engine/model/model_directory.h"

namespace rgbaq::engine {

struct RenderMemory {
  std::string engine;           // "cpu", "cuda"
  std::string precision;        // "fp32" (cpu); cuda: "bf16", "fp32", "fp8", with ", int8 kept" when it keeps some
  uint64_t weights = 0;         // resident weight bytes
  uint64_t shared = 0;          // of them, the pages every session of a process shares (cpu: the mapped files)
  int size = 0;                 // square image side
  uint64_t text_encoder = 0, dit = 0, vae = 0;  // work bytes of each graph at this size (prompt of 512 tokens)
  uint64_t total() const;       // weights + the largest of the three (cpu) or all three (cuda)
  uint64_t per_session() const { return total() - shared; }  // what each further session adds
};

// For sizes 256, 512 and 1024 on each engine; `threads` sizes the per-thread scratch; `cuda` is the
// cuda session's options (its precision, gpu_int8, vae_tiles, attention and fused_blocks; the cpu decoder tiles by
// its map budget always).
std::vector<RenderMemory> estimate_render_memory(const ModelDirectory& model, int threads, const EngineOptions& cuda = {});

}  // namespace rgbaq::engine
