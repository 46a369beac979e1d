#pragma once
// A diffusers-layout model directory, found through its model_index.json: each component's folder by
// its role (the tokenizer under `processor/` as the published Qwen-Image-2.1 pipelines keep it, or
// `tokenizer/`; text_encoder, transformer, vae, scheduler), each config read, and each component's
// weights checked once against the weight schema (engine/model/weight_schema.h). Both layouts are accepted:
// ours, and the published one whose files also hold tensors text-to-image never reads (lm_head, the
// vision tower, the VAE encoder), which are counted and ignored. A different model (Qwen-Image v1,
// another pipeline class, a missing component) is refused naming what was found.
// With no directory, the three components given as single files make the model alone: each config from
// its file's shapes and the family's published values (engine/model/model_config.h), the VAE's latent
// constants built in (engine/model/family_defaults.h), the caller's tokenizer.json (rgbaq's installed
// copy) and the Turbo's published sigmas (host/schedule.h); notes() says so.
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/component_files.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_schema.h"
#include "host/schedule.h"

namespace rgbaq::engine {

struct ModelComponent {
  std::string role;        // "tokenizer", "text_encoder", "transformer", "vae", "scheduler"
  std::string folder;      // its key in model_index.json and its folder: "processor", "tokenizer", ...
  std::string library, class_name;  // as model_index.json names them
};

// A model directory rgbaq cannot use (bad input, exit 2): what() names the file, field or tensor.
class InvalidModel : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ModelDirectory {
 public:
  // Throws InvalidModel naming the file, field or tensor at fault and what was found instead. Every
  // config number is bounded, and the layer counts are held against the blocks the weights hold,
  // before anything is built per layer. A component given in `files` is read from that single file
  // (ComfyUI's names and quantized forms) and checked against the directory's config.json for it.
  // `root` empty: all three files must be given (else refused naming the missing flag), and `tokenizer`
  // names the tokenizer.json to use (refused when empty or absent); with a root, `tokenizer` is unused.
  static ModelDirectory open(const std::filesystem::path& root, const ComponentFiles& files = {},
                             const std::filesystem::path& tokenizer = {});

  // Empty when the model is the component files alone; then components() is empty and the *_dir()
  // accessors below throw std::logic_error (read the weights through open_weights).
  const std::filesystem::path& root() const { return root_; }
  const std::string& pipeline_class() const { return pipeline_class_; }
  const std::vector<ModelComponent>& components() const { return components_; }
  const ModelComponent& component(const std::string& role) const;
  std::filesystem::path component_dir(const std::string& role) const { return root_ / component(role).folder; }

  const std::filesystem::path& tokenizer_json() const { return tokenizer_json_; }
  std::filesystem::path text_encoder_dir() const { return component_dir("text_encoder"); }
  std::filesystem::path transformer_dir() const { return component_dir("transformer"); }
  std::filesystem::path vae_dir() const { return component_dir("vae"); }
  // The weights of "text_encoder", "transformer" or "vae": its single file when one was given, else its
  // folder. Backends open their weights through this.
  WeightStore open_weights(const std::string& role) const;

  const TextEncoderConfig& text_encoder_config() const { return text_config_; }
  const DitConfig& dit_config() const { return dit_config_; }
  const VaeConfig& vae_config() const { return vae_config_; }
  const std::string& text_encoder_prefix() const { return text_prefix_; }  // "model.language_model." or "model."
  const host::SchedulerConfig& scheduler() const { return scheduler_; }
  // "FlowMatch Euler, 8 fixed sigmas (Turbo)" or "... 40 steps, dynamic shift ..." (the base model).
  std::string sampler_description() const;
  // True when the VAE's latents_mean / latents_std are the family's built-in ones (no vae/config.json).
  bool builtin_vae_latents() const { return root_.empty(); }
  // With no directory, what the model took from where, a line each, for `rgbaq model check` and the
  // session's description (the configs, the VAE's built-in latent constants, the tokenizer, the
  // sampler); empty for a directory.
  std::vector<std::string> notes() const;
  // text_encoder, transformer, vae: what the schema check found.
  const std::vector<ComponentReport>& reports() const { return reports_; }

 private:
  static ModelDirectory open_checked(const std::filesystem::path& root, const ComponentFiles& files,
                                     const std::filesystem::path& tokenizer);
  static ModelDirectory open_files(const ComponentFiles& files, const std::filesystem::path& tokenizer);
  // The configs against each other and the weights against the schema; `*_source` name where the layer
  // counts came from in the block-count errors (text_prefix_ set before).
  void check_weights(const WeightStore& text, const WeightStore& dit, const WeightStore& vae,
                     const std::filesystem::path& text_source, const std::filesystem::path& dit_source);

  std::filesystem::path root_;
  ComponentFiles files_;
  std::filesystem::path tokenizer_json_;
  std::string pipeline_class_;
  std::vector<ModelComponent> components_;
  TextEncoderConfig text_config_;
  DitConfig dit_config_;
  VaeConfig vae_config_;
  std::string text_prefix_;
  host::SchedulerConfig scheduler_;
  std::vector<ComponentReport> reports_;
};

}  // namespace rgbaq::engine
