#include "engine/render_memory.h"

#include <algorithm>

#include "engine/cpu/vae_decoder.h"
#include "engine/cuda/weight_plan.h"
#include "engine/cuda/workspace_plan.h"
#include "host/contract_limits.h"

namespace rgbaq::engine {
namespace {

constexpr uint64_t kF32 = 4;
constexpr int64_t kDropIdx = 14;
constexpr int64_t kLinearTileRows = 256;  // engine/cpu/linear.cpp's widening tile
constexpr int64_t kVaeStripPixels = 8192;  // engine/cpu/vae_decoder.cpp's im2col strip

uint64_t text_encoder_work(const TextEncoderConfig& c, int threads) {
  const int64_t n = host::kMaxFullTokens, q = int64_t{c.heads} * c.head_dim, kv = int64_t{c.kv_heads} * c.head_dim;
  const int64_t floats = n * c.hidden * 3 + n * q * 2 + n * kv * 2 + n * c.intermediate * 2;
  return kF32 * (floats + threads * kLinearTileRows * std::max<int64_t>(c.hidden, c.intermediate));
}

uint64_t dit_work(const DitConfig& c, int64_t image_tokens, int threads) {
  const int64_t dim = c.dim(), mlp = dim * c.mlp_ratio, l = host::kMaxFullTokens - kDropIdx, n = image_tokens;
  const int64_t prefix = int64_t{c.layers} * 2 * l * dim;                  // cached text keys and values
  const int64_t block = n * dim * 5 + 2 * (l + n) * dim + 2 * n * mlp;    // x, h, q, attn, delta; k, v; gate, up
  return kF32 * (prefix + block + threads * kLinearTileRows * mlp);
}

// The decoder's maps as it plans them (tiled past its map budget), and each thread's im2col strip.
uint64_t vae_work(const VaeConfig& c, int side, int threads) {
  const int64_t grid = side / 16;
  const int64_t maps = cpu::VaeDecoder::map_bytes(c, cpu::VaeDecoder::plan(c, grid, grid, cpu::kVaeMapBudget));
  const int64_t im2col = threads * vae_decoder_dims(c).front() * 9 * kVaeStripPixels;
  return static_cast<uint64_t>(maps) + kF32 * im2col;
}

// A CUDA session's weights and buffers as it allocates them (engine/cuda/weight_plan.h and
// workspace_plan.h), at the contract's longest prompt; the Linear runner's scratch counts with the DiT.
void cuda_memory(const ModelDirectory& model, int side, const EngineOptions& options, RenderMemory& m) {
  using namespace cuda;
  const int64_t e = options.precision == Precision::kFp32 ? 4 : 2, l = host::kMaxTextTokens,
                n = int64_t{side / 16} * (side / 16);
  const LinearFormats formats{options.precision == Precision::kFp8, options.gpu_int8 == GpuInt8::kKeep,
                              options.gpu_int8 == GpuInt8::kW8A8};
  const bool dit_int8 = !report_of(model, "transformer").int8_linears.empty();
  const bool encoder_int8 = !report_of(model, "text_encoder").int8_linears.empty();
  const bool convrot = !report_of(model, "transformer").convrot_linears.empty() ||
                       !report_of(model, "text_encoder").convrot_linears.empty();
  const bool fused = options.attention == AttentionKernel::kFused;
  m.precision = std::string(precision_name(options.precision)) +
                (formats.keep_int8 && (dit_int8 || encoder_int8) ? ", int8 kept" : "") +
                (convrot ? (formats.w8a8 ? ", ConvRot W8A8" : ", ConvRot widened") : "") + (fused ? ", fused attention" : "") +
                (options.vae_tiles ? ", VAE tiled" : "") + (options.fused_blocks ? ", fused blocks" : "");
  m.weights = static_cast<uint64_t>(session_weight_bytes(model, e, formats).total());
  const TextEncoderConfig& t = model.text_encoder_config();
  const DitConfig& d = model.dit_config();
  const VaeConfig& v = model.vae_config();
  m.text_encoder = static_cast<uint64_t>(bytes_of(encoder_workspace(t, e, host::kMaxFullTokens, fused)));
  m.dit = static_cast<uint64_t>(bytes_of(dit_workspace(d, e, l, n, fused, options.fused_blocks)) +
                                bytes_of(dit_image_buffers(d, e, l, n)) + kGemmWorkspaceBytes +
                                bytes_of(linear_scratch(t, d, e, formats, dit_int8, encoder_int8, std::max(l, n), host::kMaxFullTokens,
                                                options.fused_blocks)));
  // The tiles a session plans for the largest render serve every size (CudaVae::plan).
  const VaeTilePlan session = vae_session_plan(v, e, host::kMaxImageTokens, options.vae_tiles);
  m.vae = static_cast<uint64_t>(bytes_of(vae_workspace(v, e, vae_decode_plan(v, session, side / 16, side / 16))));
}

}  // namespace

uint64_t RenderMemory::total() const {
  // The CPU graphs' buffers come and go in turn; a CUDA session keeps all of its graphs' buffers.
  return engine == "cuda" ? weights + text_encoder + dit + vae : weights + std::max({text_encoder, dit, vae});
}

std::vector<RenderMemory> estimate_render_memory(const ModelDirectory& model, int threads, const EngineOptions& cuda) {
  uint64_t mapped = 0, copies = 0;
  for (const auto& r : model.reports()) {
    copies += r.cpu_copy_bytes;
    if (r.component != "vae") mapped += r.used_bytes;  // the CPU decoder keeps fp32 copies, not the mapping
  }
  std::vector<RenderMemory> out;
  for (const char* engine : {"cpu", "cuda"}) {
    for (int side : {256, 512, 1024}) {
      RenderMemory m;
      m.engine = engine;
      m.size = side;
      if (m.engine == "cuda") {
        cuda_memory(model, side, cuda, m);
      } else {
        m.precision = "fp32";
        m.weights = mapped + copies;
        m.shared = mapped;
        m.text_encoder = text_encoder_work(model.text_encoder_config(), threads);
        m.dit = dit_work(model.dit_config(), int64_t{side / 16} * (side / 16), threads);
        m.vae = vae_work(model.vae_config(), side, threads);
      }
      out.push_back(m);
    }
  }
  return out;
}

}  // namespace rgbaq::engine
