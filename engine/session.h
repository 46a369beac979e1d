#pragma once
// A persistent render session: a model directory's tokenizer, schedule, RoPE tables and graphs, loaded
// once. render() runs the host contract end to end: tokenize (template, drop_idx) -> encode -> RoPE
// once -> noise -> the model's Euler steps -> decode -> RGBA8.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/engine_options.h"
#include "engine/graphs.h"
#include "engine/lora_cache.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor.h"
#include "host/image_size.h"
#include "host/rope.h"
#include "host/schedule.h"
#include "tokenizer/prompt_template.h"
#include "tokenizer/tokenizer.h"

namespace rgbaq::engine {

struct RenderRequest {
  std::string prompt;
  uint64_t seed = 0;
  host::ImageSize size{256, 256};
  std::vector<LoraRequest> loras;  // applied in order, unmerged; empty: none
};

struct RenderTimings {
  double tokenize_s = 0, encode_s = 0, decode_s = 0, total_s = 0;
  std::vector<double> step_s;
};

struct RenderResult {
  host::ImageSize size;
  std::vector<uint8_t> rgba;  // height * width * 4, pixel-interleaved R, G, B, A
  RenderTimings timings;
  int full_tokens = 0, text_tokens = 0;  // Lfull and L
  std::vector<float> sigmas;
  LoraSet loras;  // the adapters applied, with their weights (names and file hashes for the record)
};

// Called after each step with (steps done, steps in all); returning false cancels the render.
using StepCallback = std::function<bool(int done, int total)>;

class RenderCanceled : public std::runtime_error {
 public:
  RenderCanceled() : std::runtime_error("render canceled") {}
};

// A render whose latents or image hold NaN or infinity (a LoRA with huge values, broken weights): what()
// says which and after which step, and names the LoRAs applied. Rendering the job again gives the same
// numbers, so it is the job's failure for good.
class RenderNotFinite : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The prompt's embeddings as the DiT takes them: hidden[drop_idx:], [L, D].
struct PromptEmbedding {
  std::vector<int32_t> ids;  // all Lfull template ids
  Tensor embeds;
};

class Session {
 public:
  // The backend named in options (backend_registry.h). model_dir may be empty when options.components
  // names all three files (ModelDirectory::open: the tokenizer then options.tokenizer). Throws
  // std::runtime_error naming what is missing or malformed in the model, std::invalid_argument for an unknown backend,
  // BackendUnavailable for one that cannot run here (cuda without a device).
  static std::unique_ptr<Session> open(const std::filesystem::path& model_dir, const EngineOptions& options);
  static std::unique_ptr<Session> open(const std::filesystem::path& model_dir, const std::string& backend = "cpu",
                                       int threads = 0);

  // Throws std::invalid_argument for a prompt that does not fit or a bad size, std::runtime_error naming
  // the file and key for a LoRA that cannot be read or does not fit, RenderCanceled when the callback
  // says stop, RenderNotFinite when the latents (checked after each step) or the image are not finite.
  RenderResult render(const RenderRequest& request, const StepCallback& on_step = {});

  // The pieces, for callers that cache embeddings.
  tokenizer::TemplatedPrompt tokenize(const std::string& prompt) const;
  Tensor encode(const tokenizer::TemplatedPrompt& prompt);
  RenderResult render_embedded(const Tensor& embeds, const RenderRequest& request, const StepCallback& on_step);

  // Opens the backend again with the same options, after a DeviceFault that poisons the session: the
  // old graphs go first (their device memory freed), then the new ones load the weights. Throws what
  // open throws; the session then has no backend (renders throw std::logic_error) until a reopen
  // succeeds. Only the thread that renders with the session may call it.
  void reopen_backend();

  const std::filesystem::path& model_dir() const { return model_dir_; }
  const std::string& backend_name() const { return backend_; }
  // What the backend runs on ("cpu, 8 threads", "NVIDIA H200 (device 0, ...)").
  std::string device_description() const;
  // The backend's precision ("fp32", "bf16", "fp8"; Graphs::precision), or the options' when not open.
  std::string precision() const;
  // Graphs::device_peak_bytes, or 0 when not open.
  uint64_t device_peak_bytes() const { return graphs_ ? graphs_->device_peak_bytes() : 0; }
  Graphs& graphs();
  // The adapters read so far (kept, least recently used out first, within a byte budget); shared with
  // other sessions when EngineOptions::lora_cache named one.
  LoraCache& lora_cache() { return *lora_cache_; }
  const DitConfig& dit_config() const { return dit_config_; }
  // With no model directory, what the model took from where (ModelDirectory::notes: the configs, the
  // VAE's built-in latent constants, the tokenizer, the sampler); empty for a directory.
  const std::vector<std::string>& model_notes() const { return model_notes_; }
  // What sets this session's text embeddings apart from the cpu's fp32 ones (embedding_precision_mark
  // of its options, backend and text encoder), for the encoder cache's key.
  std::string embedding_mark() const { return embedding_precision_mark(options_, backend_, text_encoder_convrot_); }

 private:
  Session() = default;

  std::filesystem::path model_dir_;
  std::string backend_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<tokenizer::PromptTemplate> template_;
  host::SchedulerConfig scheduler_;
  host::RopeTables rope_tables_;
  EngineOptions options_;  // as opened, the backend resolved (for reopen_backend)
  std::unique_ptr<Graphs> graphs_;
  DitConfig dit_config_;
  std::shared_ptr<LoraCache> lora_cache_;
  std::vector<std::string> model_notes_;
  bool text_encoder_convrot_ = false;  // its text encoder holds ConvRot Linears
};

}  // namespace rgbaq::engine
