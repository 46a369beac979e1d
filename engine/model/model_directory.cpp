#include "engine/model/model_directory.h"

#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace rgbaq::engine {
namespace {

using nlohmann::json;

json read_index(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error(path.string() + " is missing: not a diffusers model directory (it names the pipeline "
                                             "class and its components)");
  }
  return read_json_object(path);
}

std::string found_list(const std::vector<ModelComponent>& found) {
  std::string s;
  for (const auto& c : found) s += (s.empty() ? "" : ", ") + c.folder + " (" + c.class_name + ")";
  return s.empty() ? "none" : s;
}

// The roles and the classes that fill them; an empty list accepts any class.
struct RoleRule {
  const char* role;
  std::vector<const char*> folders;
  std::vector<const char*> class_prefixes;
};

const std::vector<RoleRule>& role_rules() {
  static const std::vector<RoleRule> rules = {
      {"tokenizer", {"processor", "tokenizer"}, {}},
      {"text_encoder", {"text_encoder"}, {"Qwen3VL", "Qwen3"}},
      {"transformer", {"transformer"}, {"QwenImage21Transformer2DModel"}},
      {"vae", {"vae"}, {"AutoencoderKLQwenImage21"}},
      {"scheduler", {"scheduler"}, {"FlowMatchEulerDiscreteScheduler"}},
  };
  return rules;
}

bool starts_with_any(const std::string& s, const std::vector<const char*>& prefixes) {
  if (prefixes.empty()) return true;
  for (const char* p : prefixes)
    if (s.rfind(p, 0) == 0) return true;
  return false;
}

void log_report(const ComponentReport& r) {
  if (r.ignored == 0) return;
  std::string examples;
  for (const auto& name : r.ignored_examples) examples += (examples.empty() ? "" : ", ") + name;
  spdlog::debug("{}: {} of {} tensors are not used by text-to-image and were ignored (e.g. {})", r.dir.string(),
                r.ignored, r.tensors, examples);
}

// The config's layer count against the numbered blocks (`prefix`0., `prefix`1., ...) the weights hold:
// throws naming the field when they differ, before the schema lists a tensor per claimed layer.
void check_block_count(const WeightStore& weights, const std::string& prefix, int claimed,
                       const std::filesystem::path& config, const char* field) {
  const std::set<long> blocks = weights.block_numbers(prefix);
  // None at all: not this component's weights; the schema check names the first tensor missing.
  if (blocks.empty() || static_cast<long>(blocks.size()) == claimed) return;
  const std::string held = std::to_string(blocks.size()) + " (" + prefix + std::to_string(*blocks.begin()) + " to " + prefix +
                           std::to_string(*blocks.rbegin()) + ")";
  throw std::runtime_error(config.string() + ": field \"" + field + "\" is " + std::to_string(claimed) + ", but " +
                           weights.directory().string() + " holds " + held + " of its blocks");
}

}  // namespace

const ModelComponent& ModelDirectory::component(const std::string& role) const {
  for (const auto& c : components_)
    if (c.role == role) return c;
  throw std::logic_error("ModelDirectory: no component for role " + role);
}

ModelDirectory ModelDirectory::open(const std::filesystem::path& root, const ComponentFiles& files,
                                    const std::filesystem::path& tokenizer) {
  try {
    return open_checked(root, files, tokenizer);
  } catch (const InvalidModel&) {
    throw;
  } catch (const std::runtime_error& e) {  // std::filesystem::filesystem_error too
    throw InvalidModel(e.what());
  }
}

WeightStore ModelDirectory::open_weights(const std::string& role) const {
  const std::filesystem::path& file = files_.for_role(role);
  return file.empty() ? WeightStore::open(component_dir(role)) : open_component_file(role, file);
}

ModelDirectory ModelDirectory::open_files(const ComponentFiles& files, const std::filesystem::path& tokenizer) {
  for (const auto& [role, flag] : {std::pair{"transformer", "--dit"}, {"text_encoder", "--text-encoder"}, {"vae", "--vae"}}) {
    if (files.for_role(role).empty()) {
      throw std::runtime_error(std::string("no model directory and no ") + flag + " FILE (the " + role +
                               "): without --model, --dit, --text-encoder and --vae must all be given");
    }
  }
  if (tokenizer.empty()) {
    throw std::runtime_error("no model directory and no tokenizer.json: rgbaq's own copy (tokenizer/qwen3/tokenizer.json in "
                             "its data folder) was not found; install it, or give --model DIR");
  }
  if (!std::filesystem::is_regular_file(tokenizer)) {
    throw std::runtime_error(tokenizer.string() + ": no such tokenizer.json (rgbaq's own copy, used when no --model is given)");
  }
  ModelDirectory dir;
  dir.files_ = files;
  dir.tokenizer_json_ = tokenizer;
  dir.pipeline_class_ = "QwenImage21Pipeline";  // the family the key table and the configs are for
  const WeightStore text = dir.open_weights("text_encoder");
  dir.text_prefix_ = engine::text_encoder_prefix(text);
  dir.text_config_ = text_encoder_config_from_weights(text, dir.text_prefix_);
  const WeightStore dit = dir.open_weights("transformer");
  dir.dit_config_ = dit_config_from_weights(dit);
  const WeightStore vae = dir.open_weights("vae");
  dir.vae_config_ = vae_config_from_weights(vae);
  dir.scheduler_ = host::turbo_scheduler_config();
  dir.check_weights(text, dit, vae, files.text_encoder, files.dit);
  return dir;
}

void ModelDirectory::check_weights(const WeightStore& text, const WeightStore& dit, const WeightStore& vae,
                                   const std::filesystem::path& text_source, const std::filesystem::path& dit_source) {
  if (dit_config_.context_dim != text_config_.hidden) {
    throw std::runtime_error((root_.empty() ? files_.dit : root_).string() + ": the DiT's context_in_dim " +
                             std::to_string(dit_config_.context_dim) + " is not the text encoder's hidden size " +
                             std::to_string(text_config_.hidden));
  }
  check_block_count(text, text_prefix_ + "layers.", text_config_.layers, text_source, "num_hidden_layers");
  reports_.push_back(check_component(text, text_encoder_schema(text_config_, text_prefix_)));
  check_block_count(dit, "transformer_blocks.", dit_config_.layers, dit_source, "num_layers");
  reports_.push_back(check_component(dit, dit_schema(dit_config_)));
  reports_.push_back(check_component(vae, vae_schema(vae_config_)));
  for (const auto& r : reports_) log_report(r);
}

ModelDirectory ModelDirectory::open_checked(const std::filesystem::path& root, const ComponentFiles& files,
                                            const std::filesystem::path& tokenizer) {
  if (root.empty()) return open_files(files, tokenizer);
  if (!std::filesystem::is_directory(root)) throw std::runtime_error(root.string() + ": no such model directory");
  const auto index_path = root / "model_index.json";
  const json index = read_index(index_path);
  ModelDirectory dir;
  dir.root_ = root;
  dir.files_ = files;
  dir.pipeline_class_ = index.value("_class_name", std::string());

  std::vector<ModelComponent> found;  // every [library, class] entry
  for (const auto& [key, value] : index.items()) {
    if (!value.is_array() || value.size() != 2 || !value[1].is_string()) continue;  // [null, null]: absent
    found.push_back({"", key, value[0].is_string() ? value[0].get<std::string>() : "", value[1].get<std::string>()});
  }
  const std::string& pipeline = dir.pipeline_class_;
  if (pipeline.rfind("QwenImage21", 0) != 0) {
    const bool v1 = pipeline.rfind("QwenImage", 0) == 0;
    throw std::runtime_error(index_path.string() + ": pipeline class \"" + pipeline + "\" is " +
                             (v1 ? "Qwen-Image v1 or one of its variants (a different architecture: dual stream, 60 layers)"
                                 : std::string(pipeline.empty() ? "missing" : "another pipeline")) +
                             "; rgbaq runs Qwen-Image-2.1 (QwenImage21Pipeline). Components found: " + found_list(found));
  }
  for (const RoleRule& rule : role_rules()) {
    const ModelComponent* match = nullptr;
    for (const char* folder : rule.folders) {
      for (const auto& c : found) {
        if (c.folder != folder) continue;
        if (std::string(rule.role) == "tokenizer" && !std::filesystem::exists(root / folder / "tokenizer.json")) continue;
        match = &c;
        break;
      }
      if (match) break;
    }
    if (!match) {
      std::string wanted;
      for (const char* f : rule.folders) wanted += (wanted.empty() ? "" : " or ") + std::string(f) + "/";
      throw std::runtime_error(index_path.string() + ": no " + rule.role + " component (" + wanted +
                               (std::string(rule.role) == "tokenizer" ? " with a tokenizer.json" : "") +
                               "); components found: " + found_list(found));
    }
    if (!starts_with_any(match->class_name, rule.class_prefixes)) {
      throw std::runtime_error(index_path.string() + ": component \"" + match->folder + "\" is a " + match->class_name +
                               ", not the " + rule.class_prefixes.front() + " a Qwen-Image-2.1 " + rule.role + " is");
    }
    if (!std::filesystem::is_directory(root / match->folder)) {
      throw std::runtime_error(root.string() + ": folder " + match->folder + "/ (the " + rule.role +
                               " model_index.json names) is missing");
    }
    ModelComponent c = *match;
    c.role = rule.role;
    dir.components_.push_back(c);
  }

  for (const char* role : {"text_encoder", "transformer", "vae"}) {
    const auto config = dir.component_dir(role) / "config.json";
    if (!std::filesystem::exists(config)) {
      throw std::runtime_error(root.string() + ": " + dir.component(role).folder + "/config.json is missing (the " + role +
                               "'s dimensions)");
    }
  }
  dir.tokenizer_json_ = dir.component_dir("tokenizer") / "tokenizer.json";
  dir.text_config_ = load_text_encoder_config(dir.text_encoder_dir() / "config.json");
  dir.dit_config_ = load_dit_config(dir.transformer_dir() / "config.json");
  dir.vae_config_ = load_vae_config(dir.vae_dir() / "config.json");
  dir.scheduler_ = host::load_scheduler_config(root);

  const WeightStore text = dir.open_weights("text_encoder");
  dir.text_prefix_ = engine::text_encoder_prefix(text);
  dir.check_weights(text, dir.open_weights("transformer"), dir.open_weights("vae"), dir.text_encoder_dir() / "config.json",
                    dir.transformer_dir() / "config.json");
  return dir;
}

std::vector<std::string> ModelDirectory::notes() const {
  if (!root_.empty()) return {};
  return {
      "no model directory: the configs from the component files' shapes and the family's published values",
      "VAE latents_mean / latents_std: the family's built-in constants (ComfyUI's QwenImage21 latent format), "
      "no vae/config.json",
      "tokenizer: " + tokenizer_json_.string() + " (rgbaq's own)",
      "sampler: the Turbo's published sigmas",
  };
}

std::string ModelDirectory::sampler_description() const {
  std::ostringstream s;
  s << "FlowMatch Euler, ";
  if (!scheduler_.sample_sigmas.empty()) {
    s << scheduler_.sample_sigmas.size() << " fixed sigmas"
      << (root_.empty() ? ", the Turbo's published ones (no model directory)" : " from model_index.json (Turbo)");
  } else {
    s << scheduler_.default_steps << " steps on a linspace, "
      << (scheduler_.use_dynamic_shifting ? "dynamic shift" : "shift " + std::to_string(scheduler_.shift));
    if (scheduler_.shift_terminal) s << ", terminal " << *scheduler_.shift_terminal;
    s << " (base)";
  }
  return s.str();
}

}  // namespace rgbaq::engine
