#include "engine/model/weight_schema.h"

#include <cctype>
#include <set>
#include <stdexcept>

#include "engine/model/int8_blocks.h"

namespace rgbaq::engine {
namespace {

class SchemaBuilder {
 public:
  explicit SchemaBuilder(std::string component) { schema_.component = std::move(component); }
  void add(const std::string& name, Shape shape, WeightRole role) { schema_.tensors.push_back({name, std::move(shape), role}); }
  void linear(const std::string& name, int64_t out, int64_t in) { add(name, {out, in}, WeightRole::kLinear); }
  void norm(const std::string& name, int64_t c) { add(name, {c}, WeightRole::kNorm); }
  // A convolution's weight and bias.
  void conv(const std::string& name, int64_t out, int64_t in, int64_t k) {
    add(name + ".weight", {out, in, k, k}, WeightRole::kConv);
    add(name + ".bias", {out}, WeightRole::kBias);
  }
  void resnet(const std::string& p, int64_t in, int64_t out) {
    norm(p + ".norm1.gamma", in);
    conv(p + ".conv1", out, in, 3);
    norm(p + ".norm2.gamma", out);
    conv(p + ".conv2", out, out, 3);
    if (in != out) conv(p + ".conv_shortcut", out, in, 1);
  }
  ComponentSchema take() { return std::move(schema_); }

 private:
  ComponentSchema schema_;
};

bool is_float(DType t) { return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16; }

// The stored bytes of a ComfyUI module's tensors beside weight `name` (weight_scale, input_scale, comfy_quant).
uint64_t comfy_companion_bytes(const WeightStore& store, const std::string& name) {
  uint64_t bytes = 0;
  for (const std::string& companion : comfy_quant_companions(name))
    if (store.has(companion)) bytes += store.get(companion).nbytes();
  return bytes;
}

[[noreturn]] void fail(const WeightStore& store, const std::string& name, const std::string& what) {
  throw std::runtime_error(store.file_of(name).string() + ": tensor \"" + name + "\" " + what);
}

// Checks one tensor against its spec; returns the bytes a CPU backend copies out of the mapping.
uint64_t check_tensor(const WeightStore& store, const WeightSpec& spec, ComponentReport& report) {
  if (!store.has(spec.name)) {
    throw std::runtime_error(store.directory().string() + ": tensor \"" + spec.name + "\" is missing (" +
                             std::to_string(store.size()) + " tensors in the component's files)");
  }
  const Tensor t = store.get(spec.name);
  const Shape& s = t.shape();
  const auto wrong_shape = [&](const std::string& expected) {
    fail(store, spec.name, "has shape " + shape_string(s) + ", expected " + expected);
  };
  uint64_t cpu_copy = 0;
  switch (spec.role) {
    case WeightRole::kLinear: {
      const Tensor checked = store.require(spec.name, spec.shape);  // quantized: with its scales, or throws
      const ComfyQuant* comfy = store.comfy_quant(spec.name);
      std::string format(dtype_name(t.dtype()));
      for (char& ch : format) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (comfy) format = comfy_quant_label(*comfy);
      if (checked.quant() == WeightQuant::kInt8Blocks) {
        format = weight_quant_name(WeightQuant::kInt8Blocks);
        ++report.quantized;
        report.int8_linears.insert(spec.name);
        ++report.used;
        report.used_bytes += checked.scales()->nbytes();
        report.dtypes[std::string(dtype_name(checked.scales()->dtype()))]++;
      }
      if (checked.quant() == WeightQuant::kInt8ConvRot) report.convrot_linears.insert(spec.name);
      if (comfy) report.used_bytes += comfy_companion_bytes(store, spec.name);  // its scales and comfy_quant, as stored
      if (comfy && checked.quant() == WeightQuant::kNone) cpu_copy = checked.nbytes();  // row int8, widened
      report.linear_formats[format]++;
      break;
    }
    case WeightRole::kEmbedding:
    case WeightRole::kBias:
      if (s != spec.shape) wrong_shape(shape_string(spec.shape));
      break;
    case WeightRole::kNorm: {
      const int64_t c = spec.shape[0];
      bool ok = !s.empty() && s[0] == c && t.numel() == c;
      if (!ok) wrong_shape(shape_string(spec.shape) + " or [" + std::to_string(c) + ", 1, 1(, 1)]");
      cpu_copy = static_cast<uint64_t>(c) * 4;
      break;
    }
    case WeightRole::kConv: {
      const Shape& e = spec.shape;  // [out, in, k, k]
      const bool four_d = s == e;
      const bool five_d = s.size() == 5 && s[0] == e[0] && s[1] == e[1] && s[2] >= 1 && s[3] == e[2] && s[4] == e[3];
      if (!four_d && !five_d) {
        wrong_shape(shape_string(e) + " or [" + std::to_string(e[0]) + ", " + std::to_string(e[1]) + ", kt, " +
                    std::to_string(e[2]) + ", " + std::to_string(e[3]) + "]");
      }
      cpu_copy = static_cast<uint64_t>(shape_numel(e)) * 4;  // the last time tap, widened to fp32
      break;
    }
  }
  if (spec.role == WeightRole::kBias) cpu_copy = static_cast<uint64_t>(spec.shape[0]) * 4;
  const bool quantized_dtype = t.dtype() == DType::kI8 || t.dtype() == DType::kF8E4M3;
  if (quantized_dtype && spec.role != WeightRole::kLinear) {
    fail(store, spec.name, "is " + std::string(dtype_name(t.dtype())) +
                               "; only Linear weights may be quantized (norms, embeddings and convolutions stay as stored)");
  }
  if (t.dtype() == DType::kF8E4M3 && !store.comfy_quant(spec.name)) {
    fail(store, spec.name, "is F8_E4M3 without a comfy_quant \"float8_e4m3fn\" configuration and its weight_scale");
  }
  if (!is_float(t.dtype()) && !quantized_dtype) {
    fail(store, spec.name, "has dtype " + std::string(dtype_name(t.dtype())) + ", which this tensor cannot take");
  }
  ++report.used;
  report.used_bytes += t.nbytes();
  report.dtypes[std::string(dtype_name(t.dtype()))]++;
  return cpu_copy;
}

}  // namespace

std::string text_encoder_prefix(const WeightStore& weights) {
  for (const char* prefix : {"model.language_model.", "model."}) {
    if (weights.has(std::string(prefix) + "embed_tokens.weight")) return prefix;
  }
  throw std::runtime_error(weights.directory().string() +
                           ": no embed_tokens.weight under model.language_model. or model.; not a Qwen3 text stack");
}

ComponentSchema text_encoder_schema(const TextEncoderConfig& c, const std::string& p) {
  SchemaBuilder b("text_encoder");
  const int64_t h = c.hidden, d = c.head_dim, q_dim = int64_t{c.heads} * d, kv_dim = int64_t{c.kv_heads} * d;
  b.add(p + "embed_tokens.weight", {c.vocab, h}, WeightRole::kEmbedding);
  for (int i = 0; i < c.layers; ++i) {
    const std::string l = p + "layers." + std::to_string(i) + ".";
    b.norm(l + "input_layernorm.weight", h);
    b.norm(l + "post_attention_layernorm.weight", h);
    b.norm(l + "self_attn.q_norm.weight", d);
    b.norm(l + "self_attn.k_norm.weight", d);
    b.linear(l + "self_attn.q_proj.weight", q_dim, h);
    b.linear(l + "self_attn.k_proj.weight", kv_dim, h);
    b.linear(l + "self_attn.v_proj.weight", kv_dim, h);
    b.linear(l + "self_attn.o_proj.weight", h, q_dim);
    b.linear(l + "mlp.gate_proj.weight", c.intermediate, h);
    b.linear(l + "mlp.up_proj.weight", c.intermediate, h);
    b.linear(l + "mlp.down_proj.weight", h, c.intermediate);
  }
  return b.take();
}

ComponentSchema dit_schema(const DitConfig& c) {
  SchemaBuilder b("transformer");
  const int64_t dim = c.dim(), mlp = dim * c.mlp_ratio;
  b.linear("img_in.weight", dim, 64);
  b.norm("txt_in.text_norm.weight", c.context_dim);
  b.linear("txt_in.in_layer.weight", dim, c.context_dim);
  b.linear("txt_in.out_layer.weight", dim, dim);
  b.linear("time_text_embed.timestep_embedder.linear_1.weight", dim, 256);
  b.linear("time_text_embed.timestep_embedder.linear_2.weight", dim, dim);
  b.linear("modulation.1.weight", 4 * dim, dim);
  for (int i = 0; i < c.layers; ++i) {
    const std::string p = "transformer_blocks." + std::to_string(i) + ".";
    for (const char* proj : {"to_q", "to_k", "to_v"}) b.linear(p + "attn." + proj + ".weight", dim, dim);
    b.linear(p + "attn.to_out.0.weight", dim, dim);
    b.norm(p + "attn.norm_q.weight", c.head_dim);
    b.norm(p + "attn.norm_k.weight", c.head_dim);
    b.linear(p + "img_mlp.proj.weight", mlp, dim);
    b.linear(p + "img_mlp.gate_layer.weight", mlp, dim);
    b.linear(p + "img_mlp.out.weight", dim, mlp);
  }
  b.linear("norm_out.linear.weight", dim, dim);
  b.linear("proj_out.weight", 64, dim);
  return b.take();
}

ComponentSchema vae_schema(const VaeConfig& c) {
  SchemaBuilder b("vae");
  const std::vector<int64_t> dims = vae_decoder_dims(c);
  b.conv("post_quant_conv", c.z_dim, c.z_dim, 1);
  b.conv("decoder.conv_in", dims[0], c.z_dim, 3);
  b.resnet("decoder.mid_block.resnets.0", dims[0], dims[0]);
  b.norm("decoder.mid_block.attentions.0.norm.gamma", dims[0]);
  b.conv("decoder.mid_block.attentions.0.to_qkv", 3 * dims[0], dims[0], 1);
  b.conv("decoder.mid_block.attentions.0.proj", dims[0], dims[0], 1);
  b.resnet("decoder.mid_block.resnets.1", dims[0], dims[0]);
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    const std::string p = "decoder.up_blocks." + std::to_string(i) + ".";
    int64_t in = dims[i];
    for (int r = 0; r <= c.num_res_blocks; ++r, in = dims[i + 1]) b.resnet(p + "resnets." + std::to_string(r), in, dims[i + 1]);
    if (i + 1 < c.dim_mult.size()) b.conv(p + "upsampler.resample.1", dims[i + 1], dims[i + 1], 3);
  }
  b.norm("decoder.norm_out.gamma", dims.back());
  b.conv("decoder.conv_out", c.out_channels, dims.back(), 3);
  return b.take();
}

ComponentReport check_component(const WeightStore& store, const ComponentSchema& schema) {
  ComponentReport report;
  report.component = schema.component;
  report.dir = store.directory();
  std::set<std::string> used;
  for (const WeightSpec& spec : schema.tensors) {
    report.cpu_copy_bytes += check_tensor(store, spec, report);
    used.insert(spec.name);
    if (spec.role == WeightRole::kLinear) {
      used.insert(int8_scale_name(spec.name));
      for (const std::string& companion : comfy_quant_companions(spec.name)) used.insert(companion);
    }
  }
  for (const std::string& name : store.names()) {
    const Tensor t = store.get(name);
    ++report.tensors;
    report.bytes += t.nbytes();
    if (used.count(name)) continue;
    ++report.ignored;
    if (report.ignored_examples.size() < 3) report.ignored_examples.push_back(name);
  }
  return report;
}

std::string linear_formats_summary(const ComponentReport& report) {
  std::string out;
  for (const auto& [format, count] : report.linear_formats) {
    out += (out.empty() ? "" : ", ") + format + ": " + std::to_string(count) + (count == 1 ? " linear" : " linears");
  }
  return out;
}

}  // namespace rgbaq::engine
