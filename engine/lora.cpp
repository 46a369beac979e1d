#include "engine/lora.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>

#include "common/sha256.h"
#include "engine/model/safetensors.h"
#include "engine/model/weight_schema.h"

namespace rgbaq::engine {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& key, const std::string& message) {
  throw std::runtime_error(path.string() + ": " + (key.empty() ? "" : "key \"" + key + "\": ") + message);
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

enum class Part { kDown, kUp, kAlpha };

// The key's part and the name before it, or nothing when the key is no LoRA tensor this reader knows.
std::optional<std::pair<std::string, Part>> split_part(const std::string& key) {
  static const std::pair<const char*, Part> kSuffixes[] = {
      {".lora_A.weight", Part::kDown}, {".lora_B.weight", Part::kUp},    {".lora_A", Part::kDown},
      {".lora_B", Part::kUp},          {".lora_down.weight", Part::kDown}, {".lora_up.weight", Part::kUp},
      {".alpha", Part::kAlpha},
  };
  for (const auto& [suffix, part] : kSuffixes) {
    if (ends_with(key, suffix)) return std::pair{key.substr(0, key.size() - std::string(suffix).size()), part};
  }
  return std::nullopt;
}

bool text_encoder_key(const std::string& key) {
  for (const char* p : {"text_encoder.", "text_encoders.", "text_encoder_2.", "lora_te_", "lora_te1_", "lora_te2_",
                        "lora_te3_", "te.", "text_model."}) {
    if (starts_with(key, p)) return true;
  }
  return false;
}

std::string underscored(std::string s) {
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}

// One module's tensors as the file holds them (views into the mapping: nothing read yet).
struct Pending {
  std::string down_key, up_key, alpha_key;
  Tensor down, up, alpha;
  Shape down_shape, up_shape;  // 2-D
};

// The file's LoRA modules, every check that needs only the header made: each key known and for a
// Linear of this DiT (no text-encoder key), dtypes, shapes, A beside B, ranks. Throws naming the key.
std::map<std::string, Pending> lora_layout(const SafetensorsFile& file, const DitConfig& config) {
  const std::filesystem::path& path = file.path();
  std::map<std::string, Shape> linears;              // module -> [out, in]
  std::map<std::string, std::string> by_underscores;  // kohya's spelling -> module
  for (const WeightSpec& spec : dit_schema(config).tensors) {
    if (spec.role != WeightRole::kLinear) continue;
    const std::string module = spec.name.substr(0, spec.name.size() - std::string(".weight").size());
    linears.emplace(module, spec.shape);
    by_underscores.emplace(underscored(module), module);
  }
  std::map<std::string, Pending> pending;  // by module
  const auto names = file.names();
  if (names.empty()) fail(path, "", "holds no tensors; not a LoRA");
  for (const std::string& key : names) {
    if (text_encoder_key(key)) {
      fail(path, key, "is a text-encoder LoRA key; only DiT LoRAs are supported");
    }
    const auto split = split_part(key);
    if (!split) fail(path, key, "is not a LoRA tensor this reader knows (lora_A/lora_B, lora_down/lora_up, alpha)");
    const auto& [base, part] = *split;
    std::string module;
    if (starts_with(base, "transformer.")) module = base.substr(12);
    else if (starts_with(base, "diffusion_model.")) module = base.substr(16);
    else if (starts_with(base, "base_model.model.")) module = base.substr(17);
    else if (starts_with(base, "lora_unet_")) {
      const auto it = by_underscores.find(base.substr(10));
      module = it == by_underscores.end() ? base.substr(10) : it->second;
    } else {
      module = base;
    }
    if (!linears.count(module)) fail(path, key, "maps to no Linear of this DiT (module \"" + module + "\")");
    Pending& p = pending[module];
    const Tensor t = file.tensor(key);
    if (t.dtype() != DType::kF32 && t.dtype() != DType::kBF16 && t.dtype() != DType::kF16) {
      fail(path, key, "is " + std::string(dtype_name(t.dtype())) + "; a LoRA tensor must be F32, BF16 or F16");
    }
    if (part == Part::kAlpha) {
      if (t.numel() != 1) fail(path, key, "alpha has shape " + shape_string(t.shape()) + "; expected one value");
      if (!p.alpha_key.empty()) fail(path, key, "a second alpha for module \"" + module + "\"");
      p.alpha = t;
      p.alpha_key = key;
      continue;
    }
    // kohya writes 1x1 convolutions for Linears at times: [r, in, 1, 1] is a Linear's [r, in].
    Shape shape = t.shape();
    while (shape.size() > 2 && shape.back() == 1) shape.pop_back();
    if (shape.size() != 2) fail(path, key, "has shape " + shape_string(t.shape()) + "; a LoRA matrix is 2-D");
    Tensor& slot = part == Part::kDown ? p.down : p.up;
    std::string& slot_key = part == Part::kDown ? p.down_key : p.up_key;
    if (!slot_key.empty()) fail(path, key, "module \"" + module + "\" already has this matrix from \"" + slot_key + "\"");
    slot = t;
    slot_key = key;
    (part == Part::kDown ? p.down_shape : p.up_shape) = shape;
  }
  for (auto& [module, p] : pending) {
    if (p.down_key.empty() || p.up_key.empty()) {
      const std::string& present = p.down_key.empty() ? p.up_key : p.down_key;
      fail(path, present.empty() ? p.alpha_key : present,
           std::string("has no ") + (p.down_key.empty() ? "lora_A / lora_down" : "lora_B / lora_up") + " beside it");
    }
    const Shape& w = linears.at(module);
    const int64_t rank = p.down_shape[0];
    if (p.up_shape[1] != rank) {
      fail(path, p.up_key, "rank mismatch: " + shape_string(p.up_shape) + " is rank " + std::to_string(p.up_shape[1]) +
                               ", \"" + p.down_key + "\" " + shape_string(p.down_shape) + " rank " + std::to_string(rank));
    }
    if (rank < 1) fail(path, p.down_key, "rank 0");
    if (p.down_shape[1] != w[1]) {
      fail(path, p.down_key, "shape " + shape_string(p.down_shape) + " does not fit Linear \"" + module + "\" " +
                                 shape_string(w) + " (needs [rank, " + std::to_string(w[1]) + "])");
    }
    if (p.up_shape[0] != w[0]) {
      fail(path, p.up_key, "shape " + shape_string(p.up_shape) + " does not fit Linear \"" + module + "\" " +
                               shape_string(w) + " (needs [" + std::to_string(w[0]) + ", rank])");
    }
  }
  return pending;
}

}  // namespace

size_t LoraAdapter::bytes() const {
  size_t total = sizeof(LoraAdapter);
  for (const auto& m : modules) total += (m.down.size() + m.up.size()) * sizeof(float) + sizeof(LoraModule);
  return total;
}

std::vector<std::string> dit_linear_modules(const DitConfig& config) {
  std::vector<std::string> names = {"img_in",
                                    "txt_in.in_layer",
                                    "txt_in.out_layer",
                                    "time_text_embed.timestep_embedder.linear_1",
                                    "time_text_embed.timestep_embedder.linear_2",
                                    "modulation.1",
                                    "norm_out.linear",
                                    "proj_out"};
  for (int i = 0; i < config.layers; ++i) {
    const std::string p = "transformer_blocks." + std::to_string(i) + ".";
    for (const char* m : {"attn.to_q", "attn.to_k", "attn.to_v", "attn.to_out.0", "img_mlp.gate_layer", "img_mlp.proj",
                          "img_mlp.out"}) {
      names.push_back(p + m);
    }
  }
  return names;
}

void check_lora(const std::filesystem::path& path, const DitConfig& config) {
  lora_layout(SafetensorsFile::read(path, kMaxLoraFileBytes), config);  // read, not mapped: see load_lora
}

std::shared_ptr<const LoraAdapter> load_lora(const std::filesystem::path& path, const std::string& name,
                                             const DitConfig& config) {
  // Read, not mapped: a LoRA is the user's file and may be rewritten while it loads. Throws naming the
  // file when it is truncated, malformed or changes meanwhile.
  const SafetensorsFile file = SafetensorsFile::read(path, kMaxLoraFileBytes);
  auto layout = lora_layout(file, config);
  auto adapter = std::make_shared<LoraAdapter>();
  adapter->name = name;
  adapter->path = path;
  adapter->sha256 = common::sha256_hex(file.data_section(), file.data_section_size());
  for (auto& [module, p] : layout) {
    LoraModule m;
    m.module = module;
    m.rank = p.down_shape[0];
    m.in = p.down_shape[1];
    m.out = p.up_shape[0];
    m.down = p.down.to_f32_vector();
    m.up = p.up.to_f32_vector();
    const float alpha = p.alpha_key.empty() ? static_cast<float>(m.rank) : p.alpha.to_f32_vector()[0];
    m.alpha_over_rank = alpha / static_cast<float>(m.rank);
    for (const auto* v : {&m.down, &m.up}) {
      if (!std::all_of(v->begin(), v->end(), [](float x) { return std::isfinite(x); })) {
        fail(path, v == &m.down ? p.down_key : p.up_key, "holds a non-finite value");
      }
    }
    if (!std::isfinite(m.alpha_over_rank)) fail(path, module + ".alpha", "alpha is not finite");
    adapter->modules.push_back(std::move(m));
  }
  return adapter;
}

std::vector<std::vector<LoraTerm>> bind_loras(const LoraSet& set, const DitConfig& config) {
  const auto modules = dit_linear_modules(config);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < modules.size(); ++i) index.emplace(modules[i], i);
  std::vector<std::vector<LoraTerm>> terms(modules.size());
  for (const LoraUse& use : set) {
    for (const LoraModule& m : use.adapter->modules) {
      const auto it = index.find(m.module);
      if (it == index.end()) {
        throw std::invalid_argument("LoRA \"" + use.adapter->name + "\": module \"" + m.module + "\" is no Linear of this DiT");
      }
      terms[it->second].push_back({&m, use.weight * m.alpha_over_rank});
    }
  }
  return terms;
}

std::string lora_file_sha256(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  uint8_t len[8] = {0};
  if (!in.read(reinterpret_cast<char*>(len), 8)) fail(path, "", "too short for a safetensors header");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len[i];
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || header_len > size - 8) fail(path, "", "header length " + std::to_string(header_len) + " runs past the end of the file");
  return common::sha256_file_hex(path, 8 + header_len);
}

}  // namespace rgbaq::engine
