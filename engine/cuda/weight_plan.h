#pragma once
// What a CUDA session's weights take on the device, tensor by tensor from the model's schemas (what
// the graphs read, engine/model/weight_schema.h) and the Linear formats asked for (linear_format.h): what
// CudaTextEncoder, CudaDit and CudaVae upload. The session's fit check, `rgbaq model check` and the
// host tests share this one count; a gpu test holds each session's own count of its uploads to it.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/cuda/linear_format.h"
#include "engine/model/model_directory.h"
#include "engine/model/weight_schema.h"

namespace rgbaq::engine::cuda {

struct SessionWeightBytes {
  int64_t text_encoder = 0;  // the embedding in the GEMM type, the Linears by format, norms in fp32
  int64_t dit_blocks = 0;    // the blocks' Linears: what streaming keeps in pinned host memory instead
  int64_t dit_other = 0;     // the global Linears (never fp8: small or one row) and every norm, fp32
  int64_t vae = 0;           // convolutions in the GEMM type; biases, norms and latent statistics fp32
  int64_t total() const { return text_encoder + dit_blocks + dit_other + vae; }
};

// One component's bytes; `in_block(name)` says whether a Linear is a repeated one (a DiT block's, an
// encoder layer's), which fp8 takes.
template <typename InBlock>
int64_t schema_weight_bytes(const ComponentSchema& schema, const ComponentReport& report, int64_t e, LinearFormats f,
                            InBlock in_block, int64_t* block_linears = nullptr) {
  int64_t total = 0;
  for (const WeightSpec& w : schema.tensors) {
    const int64_t n = shape_numel(w.shape);
    switch (w.role) {
      case WeightRole::kLinear: {
        const bool block = in_block(w.name);
        const LinearFormat format =
            f.of(report.int8_linears.count(w.name) > 0, block, report.convrot_linears.count(w.name) > 0);
        const int64_t b = linear_weight_bytes(format, e, w.shape[0], w.shape[1]);
        if (block && block_linears) *block_linears += b;
        else total += b;
        break;
      }
      case WeightRole::kEmbedding:
      case WeightRole::kConv: total += n * e; break;
      case WeightRole::kNorm:
      case WeightRole::kBias: total += n * 4; break;
    }
  }
  return total;
}

inline const ComponentReport& report_of(const ModelDirectory& model, const std::string& component) {
  for (const auto& r : model.reports())
    if (r.component == component) return r;
  throw std::logic_error("no schema report for " + component);
}

// `e`: bytes an element of the GEMM type (2 for bf16 and fp8 sessions, 4 for fp32).
inline SessionWeightBytes session_weight_bytes(const ModelDirectory& model, int64_t e, LinearFormats f) {
  SessionWeightBytes b;
  const auto containing = [](const char* part) {
    return [part](const std::string& name) { return name.find(part) != std::string::npos; };
  };
  int64_t encoder_layers = 0;
  b.text_encoder = schema_weight_bytes(text_encoder_schema(model.text_encoder_config(), model.text_encoder_prefix()),
                                       report_of(model, "text_encoder"), e, f, containing(".layers."), &encoder_layers);
  b.text_encoder += encoder_layers;
  b.dit_other = schema_weight_bytes(dit_schema(model.dit_config()), report_of(model, "transformer"), e, f,
                                    containing("transformer_blocks."), &b.dit_blocks);
  const VaeConfig& v = model.vae_config();
  b.vae = schema_weight_bytes(vae_schema(v), report_of(model, "vae"), e, f, [](const std::string&) { return false; }) +
          static_cast<int64_t>(v.latents_mean.size() + v.latents_std.size()) * 4;
  return b;
}

// Where a session's weights live within a device budget (CudaGraphs::load decides the same way): all
// resident with the workspace `reserve` (workspace_plan.h's session_workspace_bytes); else the DiT's
// blocks streamed through two slots of one block each (BlockStreamer; each of a block's up to 14 parts
// padded to 256 bytes) and the encoder uploaded for each prompt, beside everything else; else nothing fits.
enum class SessionFit { kResident, kStreamed, kDoesNotFit };

inline SessionFit fit_session(const SessionWeightBytes& w, int layers, int64_t reserve, int64_t budget) {
  if (w.total() + reserve <= budget) return SessionFit::kResident;
  const int64_t slot = w.dit_blocks / layers + 14 * 256;
  if (w.dit_other + w.vae + 2 * slot + w.text_encoder + reserve <= budget) return SessionFit::kStreamed;
  return SessionFit::kDoesNotFit;
}

}  // namespace rgbaq::engine::cuda
