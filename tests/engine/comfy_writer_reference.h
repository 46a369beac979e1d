#pragma once
// An independent writer of ComfyUI's quantized Linear files, from the formats' published descriptions
// (stable-diffusion.cpp docs/int8_convrot.md; ComfyUI's QUANTIZATION.md and comfy/ops.py's Linear
// state_dict; comfy_kitchen's row-wise int8 rule; the OCP FP8 E4M3 definition), sharing none of the
// engine's rotation, quantization or JSON code (only the safetensors container writer):
// - ConvRot: W R by the explicit Kronecker-built Hadamard in float64, kept as fp32 (ComfyUI rotates in
//   fp32), s = fp32 max|row| / 127 (at least 1e-30), q = round half even of fp32 W R / s, clamped +-127;
//   M.weight I8 [out, in], M.weight_scale F32 [out, 1], M.comfy_quant the U8 bytes of
//   json.dumps({"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": G}).
// - FP8 scaled: s = fp32 max|W| / 448 over the tensor (1 when it is all zero), q the nearest E4M3 value
//   to fp32 W / s (ties to the even code, saturating at 448); M.weight F8_E4M3, M.weight_scale F32 []
//   (ComfyUI's 0-d scale; or one a row, [out]), M.comfy_quant json.dumps({"format": "float8_e4m3fn"}).
// The header's __metadata__ holds _quantization_metadata = json.dumps({"format_version": "1.0",
// "layers": {M: config}}), M without the file's key prefix (ComfyUI adds its model prefix when it reads
// them). Python's json.dumps separators: ", " and ": ".
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/safetensors.h"
#include "tests/engine/w8a8_reference.h"

namespace rgbaq::testing {

// ConvRot of one weight [out, in] (fp32 values as stored).
inline ConvRotWeight convrot_reference(const std::vector<float>& w, int64_t out, int64_t in, int group) {
  ConvRotWeight r{out, in, group, std::vector<int8_t>(w.size()), std::vector<float>(static_cast<size_t>(out))};
  const Vec rotated = rotate_rows(widen(w), out, in, group);
  for (int64_t o = 0; o < out; ++o) {
    float amax = 0;
    for (int64_t i = 0; i < in; ++i) amax = std::max(amax, std::fabs(static_cast<float>(rotated[o * in + i])));
    const float s = std::max(static_cast<float>(double(amax) / 127.0), 1e-30f);
    r.scales[o] = s;
    for (int64_t i = 0; i < in; ++i) {
      const float v = static_cast<float>(rotated[o * in + i]);
      const float ratio = static_cast<float>(double(v) / double(s));
      r.q[o * in + i] = static_cast<int8_t>(std::clamp(std::nearbyint(double(ratio)), -127.0, 127.0));
    }
  }
  return r;
}

// The value of each E4M3 code below 0x7f: 1 sign, 4 exponent bits (bias 7), 3 mantissa bits.
inline double e4m3_value(uint8_t code) {
  const int e = (code >> 3) & 15, m = code & 7;
  const double v = e == 0 ? std::ldexp(double(m), -9) : std::ldexp(double(8 + m), e - 10);
  return (code & 0x80) ? -v : v;
}

// The nearest E4M3 code, ties to the even code, saturating at +-448: a search of the positive codes'
// values, which increase with the code.
inline uint8_t nearest_e4m3(double x) {
  static const std::vector<double> values = [] {
    std::vector<double> v;
    for (uint8_t c = 0; c < 0x7f; ++c) v.push_back(e4m3_value(c));
    return v;
  }();
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const double a = std::fabs(x);
  if (a >= 448) return sign | 0x7e;
  const size_t hi = static_cast<size_t>(std::lower_bound(values.begin(), values.end(), a) - values.begin());
  if (hi == 0) return sign;
  const size_t lo = hi - 1;
  const double dl = a - values[lo], dh = values[hi] - a;
  const size_t best = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | static_cast<uint8_t>(best);
}

// FP8 scaled: one scale for the tensor, or one a row.
struct Fp8Weight {
  int64_t out = 0, in = 0;
  std::vector<uint8_t> codes;
  std::vector<float> scales;  // [1] or [out]
  double scale_of(int64_t row) const { return scales.size() == 1 ? scales[0] : scales[row]; }
  Vec dequantized() const {
    Vec v(codes.size());
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) v[o * in + i] = e4m3_value(codes[o * in + i]) * scale_of(o);
    return v;
  }
};

// s = fp32 max|.| / 448 over the tensor (per_row: over each row), 1 where that is 0; q = nearest(fp32 w / s).
inline Fp8Weight fp8_reference(const std::vector<float>& w, int64_t out, int64_t in, bool per_row = false) {
  Fp8Weight r{out, in, std::vector<uint8_t>(w.size()), std::vector<float>(per_row ? out : 1, 0.0f)};
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i) {
      float& s = r.scales[per_row ? o : 0];
      s = std::max(s, std::fabs(w[o * in + i]));
    }
  for (float& s : r.scales) s = s > 0 ? static_cast<float>(double(s) / 448.0) : 1.0f;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i)
      r.codes[o * in + i] = nearest_e4m3(static_cast<float>(double(w[o * in + i]) / r.scale_of(o)));
  return r;
}

inline std::string convrot_config_json(int group) {
  return "{\"format\": \"int8_tensorwise\", \"convrot\": true, \"convrot_groupsize\": " + std::to_string(group) + "}";
}
inline std::string fp8_config_json() { return "{\"format\": \"float8_e4m3fn\"}"; }

inline engine::Tensor u8_bytes(const std::string& s) {
  engine::Tensor t = engine::Tensor::zeros(engine::DType::kU8, {static_cast<int64_t>(s.size())});
  std::memcpy(t.mutable_data(), s.data(), s.size());
  return t;
}

// One component as a ComfyUI single file. `source`: (engine name, tensor) in file order; `quantize`:
// the Linear weights written quantized; `prefix`: the key prefix every name gets in the file (and which
// the metadata's layer names leave out).
struct ComfyFileReference {
  enum class Format { kConvRot, kFp8 } format = Format::kConvRot;
  int group = 256;
  bool fp8_per_row = false;  // one FP8 scale a row ([out]) instead of ComfyUI's one for the tensor ([])
  std::map<std::string, ConvRotWeight> convrot;  // by engine weight name
  std::map<std::string, Fp8Weight> fp8;
  std::string layers;  // the metadata's "layers" entries, as json.dumps writes them

  using Named = std::vector<std::pair<std::string, engine::Tensor>>;

  Named tensors(const Named& source, const std::set<std::string>& quantize, const std::string& prefix) {
    Named out;
    layers.clear();
    for (const auto& [name, t] : source) {
      const std::string file_name = prefix + name;
      if (!quantize.count(name)) {
        out.emplace_back(file_name, t);
        continue;
      }
      const std::string module = file_name.substr(0, file_name.size() - std::string(".weight").size());
      const int64_t rows = t.dim(0), cols = t.dim(1);
      const std::vector<float> w = t.to_f32_vector();
      std::string config;
      if (format == Format::kConvRot) {
        const ConvRotWeight& c = convrot[name] = convrot_reference(w, rows, cols, group);
        engine::Tensor q = engine::Tensor::zeros(engine::DType::kI8, {rows, cols});
        std::memcpy(q.mutable_data(), c.q.data(), c.q.size());
        out.emplace_back(file_name, std::move(q));
        out.emplace_back(module + ".weight_scale", engine::Tensor::from_f32({rows, 1}, c.scales));
        config = convrot_config_json(group);
      } else {
        const Fp8Weight& f = fp8[name] = fp8_reference(w, rows, cols, fp8_per_row);
        engine::Tensor q = engine::Tensor::zeros(engine::DType::kF8E4M3, {rows, cols});
        std::memcpy(q.mutable_data(), f.codes.data(), f.codes.size());
        out.emplace_back(file_name, std::move(q));
        out.emplace_back(module + ".weight_scale", fp8_per_row ? engine::Tensor::from_f32({rows}, f.scales)
                                                               : engine::Tensor::from_f32({}, f.scales));
        config = fp8_config_json();
      }
      out.emplace_back(module + ".comfy_quant", u8_bytes(config));
      layers += (layers.empty() ? "" : ", ") + ("\"" + module.substr(prefix.size()) + "\": ") + config;
    }
    return out;
  }

  std::map<std::string, std::string> metadata() const {
    return {{"_quantization_metadata", "{\"format_version\": \"1.0\", \"layers\": {" + layers + "}}"}};
  }

  void write(const std::filesystem::path& path, const Named& source, const std::set<std::string>& quantize,
             const std::string& prefix) {
    const Named t = tensors(source, quantize, prefix);
    engine::write_safetensors(path, t, metadata());
  }
};

}  // namespace rgbaq::testing
