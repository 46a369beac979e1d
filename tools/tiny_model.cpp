#include "tools/tiny_model.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/model/int8_blocks.h"
#include "engine/lora.h"
#include "engine/model/weight_schema.h"
#include "engine/model/model_quantizer.h"
#include "engine/model/safetensors.h"
#include "host/schedule.h"

namespace rgbaq::tools {
namespace {

using engine::DType;
using engine::Shape;
using engine::Tensor;
using nlohmann::json;
using Named = std::vector<std::pair<std::string, Tensor>>;

// A hollow model's tensors: views of one read-only anonymous mapping that is never written, so they
// read as zeros and cost neither memory nor time (the hollow file writer reads only their shapes).
Tensor hollow_tensor(DType type, Shape shape) {
  constexpr size_t kBytes = size_t{4} << 30;  // above the largest tensor (the real embedding, 1.2 GB)
  static const std::shared_ptr<const void> zeros = [] {
    void* p = mmap(nullptr, kBytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("hollow model: mmap of the zero pages failed");
    return std::shared_ptr<const void>(p, [](const void* q) { munmap(const_cast<void*>(q), kBytes); });
  }();
  Tensor t = Tensor::view(type, shape, zeros.get(), zeros);
  if (t.nbytes() > kBytes) throw std::logic_error("hollow model: a tensor of " + std::to_string(t.nbytes()) + " bytes");
  return t;
}

// Uniform values centred on `center` with standard deviation `stddev`, from a generator seeded by the
// model seed and the tensor's name: portable (mt19937_64 and arithmetic only) and stable when tensors
// are added.
class WeightMaker {
 public:
  // hollow: every tensor zeros, made without drawing values (the file writer leaves their data a hole).
  WeightMaker(uint64_t seed, DType dtype, bool int8_linears = false, bool hollow = false)
      : seed_(seed), dtype_(dtype), int8_linears_(int8_linears), hollow_(hollow) {}

  std::mt19937_64 generator(const std::string& name) const {
    uint64_t h = seed_ * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
    return std::mt19937_64(h);
  }

  void add(Named& out, const std::string& name, Shape shape, double stddev, double center = 0.0) const {
    if (hollow_) {
      out.emplace_back(name, hollow_tensor(dtype_, shape));
      return;
    }
    std::mt19937_64 rng = generator(name);
    const double half_width = std::sqrt(3.0) * stddev;
    const int64_t n = engine::shape_numel(shape);
    Tensor t = Tensor::zeros(dtype_, shape);
    for (int64_t i = 0; i < n; ++i) {
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
      const float v = static_cast<float>(center + (2.0 * u - 1.0) * half_width);
      if (dtype_ == DType::kF32) {
        static_cast<float*>(t.mutable_data())[i] = v;
      } else {
        static_cast<uint16_t*>(t.mutable_data())[i] = engine::f32_to_bf16(v);
      }
    }
    out.emplace_back(name, std::move(t));
  }

  // A Linear [out, in] that keeps activations at unit scale. With int8 Linears: uniform int8 values
  // and one bf16 scale per 32 inputs (engine/model/int8_blocks.h), the same distribution without a float copy.
  void linear(Named& out, const std::string& name, int64_t rows, int64_t cols, double gain = 1.0) const {
    const double stddev = gain / std::sqrt(static_cast<double>(cols));
    if (!int8_linears_) return add(out, name, {rows, cols}, stddev);
    if (hollow_) {
      out.emplace_back(name, hollow_tensor(DType::kI8, {rows, cols}));
      out.emplace_back(engine::int8_scale_name(name), hollow_tensor(DType::kBF16, {rows, engine::int8_scale_columns(cols)}));
      return;
    }
    std::mt19937_64 rng = generator(name);
    Tensor q = Tensor::zeros(DType::kI8, {rows, cols});
    Tensor s = Tensor::zeros(DType::kBF16, {rows, engine::int8_scale_columns(cols)});
    auto* qv = static_cast<int8_t*>(q.mutable_data());
    for (int64_t i = 0; i < rows * cols; i += 8) {
      uint64_t bits = rng();
      for (int64_t j = i; j < std::min(i + 8, rows * cols); ++j, bits >>= 8) qv[j] = static_cast<int8_t>(int(bits & 0xff) % 255 - 127);
    }
    std::fill_n(static_cast<uint16_t*>(s.mutable_data()), s.numel(), engine::f32_to_bf16(static_cast<float>(std::sqrt(3.0) * stddev / 127)));
    out.emplace_back(name, std::move(q));
    out.emplace_back(engine::int8_scale_name(name), std::move(s));
  }
  // A norm weight near `center`.
  void norm(Named& out, const std::string& name, Shape shape, double center = 1.0) const { add(out, name, shape, 0.05, center); }

 private:
  uint64_t seed_;
  DType dtype_;
  bool int8_linears_;
  bool hollow_;
};

void write_json(const std::filesystem::path& path, const json& doc);

uint64_t bytes_of(const Named& tensors) {
  uint64_t n = 0;
  for (const auto& [name, t] : tensors) n += t.nbytes();
  return n;
}

// Writes a component's tensors as BASE.safetensors, or, once they pass shard_bytes, as numbered shards
// BASE-0000i-of-0000n.safetensors with BASE.safetensors.index.json (how diffusers and transformers
// shard), so a real-size model is never in memory whole. shard_bytes 0: one file.
class ShardSink {
 public:
  ShardSink(std::filesystem::path dir, std::string base, uint64_t shard_bytes, bool hollow)
      : dir_(std::move(dir)), base_(std::move(base)), shard_bytes_(shard_bytes), hollow_(hollow) {}
  void maybe_flush(Named& t) {
    if (shard_bytes_ > 0 && bytes_of(t) >= shard_bytes_) flush(t);
  }
  void finish(Named& t) {
    if (shards_.empty()) return engine::write_safetensors(dir_ / (base_ + ".safetensors"), t, hollow_);
    if (!t.empty()) flush(t);
    json weight_map = json::object();
    const size_t n = shards_.size();
    for (size_t i = 0; i < n; ++i) {
      char name[96];
      std::snprintf(name, sizeof name, "%s-%05zu-of-%05zu.safetensors", base_.c_str(), i + 1, n);
      std::filesystem::rename(dir_ / (".shard-" + std::to_string(i)), dir_ / name);
      for (const auto& tensor : shards_[i]) weight_map[tensor] = name;
    }
    write_json(dir_ / (base_ + ".safetensors.index.json"), {{"metadata", json::object()}, {"weight_map", weight_map}});
  }

 private:
  void flush(Named& t) {
    engine::write_safetensors(dir_ / (".shard-" + std::to_string(shards_.size())), t, hollow_);
    shards_.emplace_back();
    for (const auto& [name, tensor] : t) shards_.back().push_back(name);
    t.clear();
  }
  std::filesystem::path dir_;
  std::string base_;
  uint64_t shard_bytes_;
  bool hollow_;
  std::vector<std::vector<std::string>> shards_;
};

void write_json(const std::filesystem::path& path, const json& doc) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path);
  out << doc.dump(2) << "\n";
  if (!out) throw std::runtime_error(path.string() + ": write failed");
}

// The last time tap of a 5-D weight [out, in, kt, kh, kw] as a 4-D [out, in, kh, kw] one.
Tensor last_time_tap(const Tensor& five_d) {
  const Shape& s = five_d.shape();
  const int64_t taps = s[3] * s[4], kt = s[2];
  Tensor t = Tensor::zeros(five_d.dtype(), {s[0], s[1], s[3], s[4]});
  const size_t element = engine::dtype_size(five_d.dtype());
  const auto* src = static_cast<const uint8_t*>(five_d.data());
  auto* dst = static_cast<uint8_t*>(t.mutable_data());
  for (int64_t oi = 0; oi < s[0] * s[1]; ++oi) {
    std::memcpy(dst + static_cast<size_t>(oi * taps) * element, src + static_cast<size_t>((oi * kt + kt - 1) * taps) * element,
                static_cast<size_t>(taps) * element);
  }
  return t;
}

// A causal 3-D conv as diffusers stores it: [out, in, kt, kh, kw] weight and [out] bias; in the
// published layout the 4-D last time tap of the same weight.
void conv3d(const WeightMaker& w, Named& out, const std::string& name, int64_t cout, int64_t cin, int64_t k, double gain = 1.0,
            Layout layout = Layout::kOurs, int64_t kt = -1) {
  w.add(out, name + ".weight", {cout, cin, kt < 0 ? k : kt, k, k}, gain / std::sqrt(static_cast<double>(cin * k * k)));
  if (layout == Layout::kPublished) out.back().second = last_time_tap(out.back().second);
  w.add(out, name + ".bias", {cout}, 0.02);
}

void resnet(const WeightMaker& w, Named& out, const std::string& name, int64_t cin, int64_t cout, Layout layout) {
  w.norm(out, name + ".norm1.gamma", {cin, 1, 1, 1});
  conv3d(w, out, name + ".conv1", cout, cin, 3, 1.0, layout);
  w.norm(out, name + ".norm2.gamma", {cout, 1, 1, 1});
  conv3d(w, out, name + ".conv2", cout, cout, 3, 0.5, layout);
  if (cin != cout) conv3d(w, out, name + ".conv_shortcut", cout, cin, 1, 1.0, layout);
}

// Marks a component written with int8 Linears as `rgbaq model quantize` marks its output.
void write_int8_entry(const std::filesystem::path& config_json, int64_t quantized) {
  json config = engine::read_json_object(config_json);
  config[engine::kQuantizationConfigKey] = engine::quantization_config_entry(quantized);
  write_json(config_json, config);
}

}  // namespace

namespace {

engine::TextEncoderConfig text_encoder_config(int hidden, int layers, int heads, int kv_heads, int head_dim, int intermediate) {
  engine::TextEncoderConfig c;
  c.hidden = hidden, c.layers = layers, c.heads = heads, c.kv_heads = kv_heads, c.head_dim = head_dim;
  c.intermediate = intermediate;
  c.vocab = 151936;
  return c;
}

engine::DitConfig dit_config(int layers, int heads, int context_dim) {
  engine::DitConfig c;
  c.layers = layers, c.heads = heads, c.head_dim = 128, c.context_dim = context_dim;
  return c;
}

}  // namespace

engine::TextEncoderConfig tiny_text_encoder_config() { return text_encoder_config(64, 2, 2, 1, 32, 128); }
engine::DitConfig tiny_dit_config() { return dit_config(2, 2, tiny_text_encoder_config().hidden); }
engine::TextEncoderConfig real_text_encoder_config() { return text_encoder_config(4096, 36, 32, 8, 128, 12288); }
engine::DitConfig real_dit_config() { return dit_config(32, 32, 4096); }

engine::VaeConfig tiny_vae_config() {
  engine::VaeConfig c;
  c.z_dim = 64;
  c.base_dim = 8;
  c.decoder_base_dim = 8;
  c.num_res_blocks = 2;
  c.out_channels = 4;
  c.dim_mult = {1, 2, 4, 8, 8};
  c.temporal_downsample = {false, true, true, true};
  c.is_residual = true;
  for (int i = 0; i < 64; ++i) {
    c.latents_mean.push_back(static_cast<float>(0.05 * ((i * 37) % 21 - 10)));
    c.latents_std.push_back(static_cast<float>(0.6 + 0.02 * ((i * 11) % 31)));
  }
  return c;
}

engine::VaeConfig real_vae_config() {
  engine::VaeConfig c = tiny_vae_config();
  c.base_dim = 96;
  c.decoder_base_dim = 144;
  return c;
}

void write_text_encoder(const std::filesystem::path& dir, const engine::TextEncoderConfig& c, uint64_t seed, DType dtype,
                        bool sharded, Layout layout, uint64_t shard_bytes, bool int8_linears, bool hollow) {
  std::filesystem::create_directories(dir);
  const int64_t d = c.head_dim;
  write_json(dir / "config.json",
             {{"architectures", {"Qwen3VLForConditionalGeneration"}},
              {"model_type", "qwen3_vl"},
              {"text_config",
               {{"model_type", "qwen3_vl_text"}, {"hidden_size", c.hidden}, {"num_hidden_layers", c.layers},
                {"num_attention_heads", c.heads}, {"num_key_value_heads", c.kv_heads}, {"head_dim", c.head_dim},
                {"intermediate_size", c.intermediate}, {"vocab_size", c.vocab}, {"rms_norm_eps", c.rms_eps},
                {"rope_theta", c.rope_theta}, {"hidden_act", "silu"}, {"attention_bias", false},
                {"rope_scaling", {{"rope_type", "default"}, {"mrope_section", {d / 8, d * 3 / 16, d * 3 / 16}}, {"mrope_interleaved", true}}},
                {"torch_dtype", dtype == DType::kF32 ? "float32" : "bfloat16"}}}});
  if (int8_linears) write_int8_entry(dir / "config.json", 7 * c.layers);
  const WeightMaker w(seed, dtype, int8_linears, hollow);
  const std::string p = "model.language_model.";
  Named embed, layers;
  ShardSink sink(dir, "model", shard_bytes, hollow);
  w.add(embed, p + "embed_tokens.weight", {c.vocab, c.hidden}, 1.0);
  for (int i = 0; i < c.layers; ++i) {
    if (shard_bytes > 0) {
      embed.insert(embed.end(), std::make_move_iterator(layers.begin()), std::make_move_iterator(layers.end()));
      layers.clear();
      sink.maybe_flush(embed);
    }
    const std::string l = p + "layers." + std::to_string(i) + ".";
    w.norm(layers, l + "input_layernorm.weight", {c.hidden});
    w.linear(layers, l + "self_attn.q_proj.weight", c.heads * d, c.hidden);
    w.linear(layers, l + "self_attn.k_proj.weight", c.kv_heads * d, c.hidden);
    w.linear(layers, l + "self_attn.v_proj.weight", c.kv_heads * d, c.hidden);
    w.norm(layers, l + "self_attn.q_norm.weight", {d});
    w.norm(layers, l + "self_attn.k_norm.weight", {d});
    w.linear(layers, l + "self_attn.o_proj.weight", c.hidden, c.heads * d, 0.5);
    w.norm(layers, l + "post_attention_layernorm.weight", {c.hidden});
    w.linear(layers, l + "mlp.gate_proj.weight", c.intermediate, c.hidden);
    w.linear(layers, l + "mlp.up_proj.weight", c.intermediate, c.hidden);
    w.linear(layers, l + "mlp.down_proj.weight", c.hidden, c.intermediate, 0.5);
  }
  w.norm(layers, p + "norm.weight", {c.hidden});  // the final norm: present in checkpoints, unused by the contract
  if (layout == Layout::kPublished) {  // the rest of Qwen3VLForConditionalGeneration, which text-to-image never reads
    w.linear(layers, "lm_head.weight", c.vocab, c.hidden);
    w.add(layers, "model.visual.patch_embed.proj.weight", {32, 3, 2, 16, 16}, 0.02);
    w.add(layers, "model.visual.patch_embed.proj.bias", {32}, 0.02);
    w.linear(layers, "model.visual.blocks.0.attn.qkv.weight", 96, 32);
    w.linear(layers, "model.visual.merger.linear_fc2.weight", c.hidden, 128);
  }
  if (shard_bytes > 0) {
    embed.insert(embed.end(), std::make_move_iterator(layers.begin()), std::make_move_iterator(layers.end()));
    return sink.finish(embed);
  }
  if (!sharded) {
    embed.insert(embed.end(), layers.begin(), layers.end());
    engine::write_safetensors(dir / "model.safetensors", embed, hollow);
    return;
  }
  const std::string shard1 = "model-00001-of-00002.safetensors", shard2 = "model-00002-of-00002.safetensors";
  json weight_map = json::object();
  for (const auto& [name, t] : embed) weight_map[name] = shard1;
  for (const auto& [name, t] : layers) weight_map[name] = shard2;
  engine::write_safetensors(dir / shard1, embed, hollow);
  engine::write_safetensors(dir / shard2, layers, hollow);
  write_json(dir / "model.safetensors.index.json", {{"metadata", json::object()}, {"weight_map", weight_map}});
}

void write_dit(const std::filesystem::path& dir, const engine::DitConfig& c, uint64_t seed, DType dtype, uint64_t shard_bytes,
               bool int8_linears, bool hollow) {
  std::filesystem::create_directories(dir);
  write_json(dir / "config.json",
             {{"_class_name", "QwenImage21Transformer2DModel"}, {"patch_size", 1}, {"in_channels", 64},
              {"out_channels", 64}, {"num_layers", c.layers}, {"attention_head_dim", c.head_dim},
              {"num_attention_heads", c.heads}, {"context_in_dim", c.context_dim}, {"mlp_ratio", c.mlp_ratio},
              {"axes_dims_rope", {16, 56, 56}}, {"eps", c.eps}, {"causal_condition", true}});
  if (int8_linears) write_int8_entry(dir / "config.json", 7 * c.layers + 8);
  const WeightMaker w(seed, dtype, int8_linears, hollow);
  const int64_t dim = c.dim(), mlp = dim * c.mlp_ratio;
  Named t;
  ShardSink sink(dir, "diffusion_pytorch_model", shard_bytes, hollow);
  w.linear(t, "img_in.weight", dim, 64);
  w.norm(t, "txt_in.text_norm.weight", {c.context_dim}, 0.0);  // zero-centred: the scale is weight + 1
  w.linear(t, "txt_in.in_layer.weight", dim, c.context_dim);
  w.linear(t, "txt_in.out_layer.weight", dim, dim);
  w.linear(t, "time_text_embed.timestep_embedder.linear_1.weight", dim, 256);
  w.linear(t, "time_text_embed.timestep_embedder.linear_2.weight", dim, dim);
  w.linear(t, "modulation.1.weight", 4 * dim, dim);
  for (int i = 0; i < c.layers; ++i) {
    sink.maybe_flush(t);
    const std::string b = "transformer_blocks." + std::to_string(i) + ".";
    for (const char* proj : {"to_q", "to_k", "to_v"}) w.linear(t, b + "attn." + proj + ".weight", dim, dim);
    w.linear(t, b + "attn.to_out.0.weight", dim, dim);
    w.norm(t, b + "attn.norm_q.weight", {c.head_dim});
    w.norm(t, b + "attn.norm_k.weight", {c.head_dim});
    w.linear(t, b + "img_mlp.proj.weight", mlp, dim);
    w.linear(t, b + "img_mlp.gate_layer.weight", mlp, dim);
    w.linear(t, b + "img_mlp.out.weight", dim, mlp);
  }
  w.linear(t, "norm_out.linear.weight", dim, dim);
  w.linear(t, "proj_out.weight", 64, dim);
  sink.finish(t);
}

void write_vae(const std::filesystem::path& dir, const engine::VaeConfig& c, uint64_t seed, DType dtype, Layout layout,
               bool hollow) {
  std::filesystem::create_directories(dir);
  std::vector<bool> temporal = c.temporal_downsample;
  write_json(dir / "config.json",
             {{"_class_name", "AutoencoderKLQwenImage21"}, {"base_dim", c.base_dim}, {"decoder_base_dim", c.decoder_base_dim},
              {"z_dim", c.z_dim}, {"dim_mult", c.dim_mult}, {"num_res_blocks", c.num_res_blocks}, {"attn_scales", json::array()},
              {"temperal_downsample", temporal}, {"dropout", 0.0}, {"is_residual", c.is_residual}, {"in_channels", 4},
              {"out_channels", c.out_channels}, {"latents_mean", c.latents_mean}, {"latents_std", c.latents_std}});
  const WeightMaker w(seed, dtype, false, hollow);
  Named t;
  const std::vector<int64_t> dims = engine::vae_decoder_dims(c);
  if (layout == Layout::kPublished) {  // the encoder half, which a decode never reads (a few of its tensors)
    conv3d(w, t, "encoder.conv_in", c.base_dim, 4, 3, 1.0, layout);
    resnet(w, t, "encoder.down_blocks.0", c.base_dim, c.base_dim, layout);
    w.norm(t, "encoder.norm_out.gamma", {c.base_dim * c.dim_mult.back(), 1, 1, 1});
    conv3d(w, t, "encoder.conv_out", 2 * c.z_dim, c.base_dim * c.dim_mult.back(), 3, 1.0, layout);
    conv3d(w, t, "quant_conv", 2 * c.z_dim, 2 * c.z_dim, 1, 1.0, layout);
  }
  conv3d(w, t, "post_quant_conv", c.z_dim, c.z_dim, 1, 1.0, layout);
  conv3d(w, t, "decoder.conv_in", dims[0], c.z_dim, 3, 1.0, layout);
  resnet(w, t, "decoder.mid_block.resnets.0", dims[0], dims[0], layout);
  w.norm(t, "decoder.mid_block.attentions.0.norm.gamma", {dims[0], 1, 1});
  w.add(t, "decoder.mid_block.attentions.0.to_qkv.weight", {3 * dims[0], dims[0], 1, 1}, 1.0 / std::sqrt(double(dims[0])));
  w.add(t, "decoder.mid_block.attentions.0.to_qkv.bias", {3 * dims[0]}, 0.02);
  w.add(t, "decoder.mid_block.attentions.0.proj.weight", {dims[0], dims[0], 1, 1}, 0.5 / std::sqrt(double(dims[0])));
  w.add(t, "decoder.mid_block.attentions.0.proj.bias", {dims[0]}, 0.02);
  resnet(w, t, "decoder.mid_block.resnets.1", dims[0], dims[0], layout);
  const std::vector<bool> temporal_up(c.temporal_downsample.rbegin(), c.temporal_downsample.rend());
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    const std::string b = "decoder.up_blocks." + std::to_string(i) + ".";
    int64_t cin = dims[i];
    for (int r = 0; r <= c.num_res_blocks; ++r, cin = dims[i + 1]) {
      resnet(w, t, b + "resnets." + std::to_string(r), cin, dims[i + 1], layout);
    }
    if (i + 1 < c.dim_mult.size()) {  // up_flag: every block but the last upsamples 2x
      const int64_t d = dims[i + 1];
      w.add(t, b + "upsampler.resample.1.weight", {d, d, 3, 3}, 1.0 / std::sqrt(double(d * 9)));
      w.add(t, b + "upsampler.resample.1.bias", {d}, 0.02);
      if (temporal_up[i]) {  // upsample3d's time_conv: unused for a single frame, present in checkpoints
        conv3d(w, t, b + "upsampler.time_conv", 2 * d, d, 1, 1.0, layout, 3);  // [2d, d, 3, 1, 1]; published [2d, d, 1, 1]
      }
    }
  }
  w.norm(t, "decoder.norm_out.gamma", {dims.back(), 1, 1, 1});
  conv3d(w, t, "decoder.conv_out", c.out_channels, dims.back(), 3, 0.5, layout);
  engine::write_safetensors(dir / "diffusion_pytorch_model.safetensors", t, hollow);
}

void write_tiny_model(const std::filesystem::path& dir, const TinyModelOptions& options) {
  const bool published = options.layout == Layout::kPublished;
  const auto tokenizer_dir = dir / (published ? "processor" : "tokenizer");
  std::filesystem::create_directories(tokenizer_dir);
  if (options.tokenizer_json.empty() || !std::filesystem::exists(options.tokenizer_json)) {
    throw std::runtime_error("tokenizer.json not found at \"" + options.tokenizer_json.string() + "\"");
  }
  std::filesystem::copy_file(options.tokenizer_json, tokenizer_dir / "tokenizer.json",
                             std::filesystem::copy_options::overwrite_existing);
  json index = {{"_class_name", "QwenImage21Pipeline"},
                {"_diffusers_version", "0.37.0"},
                {"sample_sigmas", host::turbo_sample_sigmas_published()},
                {"scheduler", {"diffusers", "FlowMatchEulerDiscreteScheduler"}},
                {"text_encoder", {"transformers", "Qwen3VLForConditionalGeneration"}},
                {"transformer", {"diffusers", "QwenImage21Transformer2DModel"}},
                {"vae", {"diffusers", "AutoencoderKLQwenImage21"}},
                {"rgbaq_tiny_model", {{"seed", options.seed}, {"dtype", engine::dtype_name(options.dtype)},
                                      {"layout", published ? "published" : "ours"}, {"hollow", options.hollow}}}};
  if (published) {
    index["processor"] = {"transformers", "Qwen3VLProcessor"};
    write_json(tokenizer_dir / "preprocessor_config.json", {{"processor_class", "Qwen3VLProcessor"}});
  } else {
    index["tokenizer"] = {"transformers", "Qwen2Tokenizer"};
  }
  write_json(dir / "model_index.json", index);
  write_json(dir / "scheduler" / "scheduler_config.json",
             {{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"num_train_timesteps", 1000}, {"shift", 1.0},
              {"use_dynamic_shifting", false}, {"base_shift", 0.5}, {"max_shift", 0.9}, {"base_image_seq_len", 256},
              {"max_image_seq_len", 8192}, {"shift_terminal", nullptr}, {"time_shift_type", "exponential"}});
  if (options.real_dims) {
    constexpr uint64_t kShardBytes = 2ull << 30;
    write_text_encoder(dir / "text_encoder", real_text_encoder_config(), options.seed, options.dtype, true, options.layout,
                       kShardBytes, options.int8_linears, options.hollow);
    write_dit(dir / "transformer", real_dit_config(), options.seed, options.dtype, kShardBytes, options.int8_linears,
              options.hollow);
    write_vae(dir / "vae", real_vae_config(), options.seed, options.dtype, options.layout, options.hollow);
    return;
  }
  write_text_encoder(dir / "text_encoder", tiny_text_encoder_config(), options.seed, options.dtype, true, options.layout, 0,
                     options.int8_linears, options.hollow);
  write_dit(dir / "transformer", tiny_dit_config(), options.seed, options.dtype, 0, options.int8_linears, options.hollow);
  write_vae(dir / "vae", tiny_vae_config(), options.seed, options.dtype, options.layout, options.hollow);
}

void write_lora(const std::filesystem::path& path, const engine::DitConfig& config, LoraFormat format, int rank,
                std::optional<float> alpha, const std::vector<std::string>& modules, uint64_t seed) {
  std::map<std::string, std::pair<int64_t, int64_t>> shapes;  // module -> out, in
  for (const auto& spec : engine::dit_schema(config).tensors) {
    if (spec.role == engine::WeightRole::kLinear) shapes[spec.name.substr(0, spec.name.size() - 7)] = {spec.shape[0], spec.shape[1]};
  }
  const WeightMaker w(seed, DType::kBF16);
  Named out;
  for (const std::string& m : modules) {
    const auto it = shapes.find(m);
    if (it == shapes.end()) throw std::invalid_argument("write_lora: \"" + m + "\" is no Linear of the DiT");
    const auto [rows, cols] = it->second;
    std::string base, down, up;
    if (format == LoraFormat::kKohya) {
      std::string u = m;
      std::replace(u.begin(), u.end(), '.', '_');
      base = "lora_unet_" + u;
      down = ".lora_down.weight";
      up = ".lora_up.weight";
    } else {
      base = (format == LoraFormat::kDiffusers ? "transformer." : "diffusion_model.") + m;
      down = ".lora_A.weight";
      up = ".lora_B.weight";
    }
    // Made under the module's own name, so every format draws the same values.
    Named made;
    w.add(made, m + ".A", {rank, cols}, 1.0 / std::sqrt(static_cast<double>(cols)));
    w.add(made, m + ".B", {rows, rank}, 0.3 / std::sqrt(static_cast<double>(rank)));
    out.emplace_back(base + down, std::move(made[0].second));
    out.emplace_back(base + up, std::move(made[1].second));
    if (alpha) out.emplace_back(base + ".alpha", Tensor::from_f32({}, {*alpha}));
  }
  std::filesystem::create_directories(path.parent_path());
  engine::write_safetensors(path, out);
}

void write_tiny_loras(const std::filesystem::path& dir, const engine::DitConfig& config, uint64_t seed) {
  const auto all = engine::dit_linear_modules(config);
  for (const auto& [name, format] : {std::pair{"style-diffusers", LoraFormat::kDiffusers},
                                     std::pair{"style-comfyui", LoraFormat::kComfyUi},
                                     std::pair{"style-kohya", LoraFormat::kKohya}}) {
    write_lora(dir / (std::string(name) + ".safetensors"), config, format, 4, 2.0f, all, seed);
  }
  std::vector<std::string> blocks(all.begin() + engine::kDitGlobalLinears, all.end());
  write_lora(dir / "detail.safetensors", config, LoraFormat::kDiffusers, 2, std::nullopt, blocks, seed + 1);
}

}  // namespace rgbaq::tools
