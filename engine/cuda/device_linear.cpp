#include "engine/cuda/device_linear.h"

#include <cstring>
#include <stdexcept>

#include "engine/cuda/convrot_kernels.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/kernels.h"
#include "engine/model/fp8_e4m3.h"

namespace rgbaq::engine::cuda {

std::vector<std::vector<uint8_t>> staged_parts(const Tensor& t, LinearFormat format, ElementType type, const std::string& what) {
  switch (format) {
    case LinearFormat::kInt8Blocks:
      if (!t.block_scales()) throw std::logic_error("staged_parts: int8 kept for a weight that is not int8");
      return {raw_bytes(t), raw_bytes(*t.block_scales())};
    case LinearFormat::kFp8Rows: {
      check_fp8_shape(t.dim(0), t.dim(1), what);
      const std::vector<float> values = t.to_f32_vector();  // exact: q * s for int8, the stored value otherwise
      std::vector<uint8_t> codes(values.size());
      std::vector<float> row_scales(static_cast<size_t>(t.dim(0)));
      fp8::quantize_rows(values.data(), t.dim(0), t.dim(1), codes.data(), row_scales.data());
      std::vector<uint8_t> scales(row_scales.size() * sizeof(float));
      std::memcpy(scales.data(), row_scales.data(), scales.size());
      return {std::move(codes), std::move(scales)};
    }
    case LinearFormat::kInt8ConvRot:
      if (t.quant() != WeightQuant::kInt8ConvRot) throw std::logic_error("staged_parts: W8A8 for a weight that is not ConvRot");
      check_w8a8_shape(t.dim(0), t.dim(1), t.convrot_group(), what);
      return {raw_bytes(t), raw_bytes(*t.scales())};  // I8 values, F32 [out] scales, as stored
    case LinearFormat::kDense: break;
  }
  return {host_bytes(t, type)};
}

void require_one_format(const std::vector<LinearFormat>& formats, const std::string& what) {
  const auto name = [](LinearFormat f) {
    return f == LinearFormat::kInt8Blocks ? "int8 kept" : f == LinearFormat::kFp8Rows ? "fp8" : f == LinearFormat::kInt8ConvRot ? "int8 W8A8" : "dense";
  };
  for (LinearFormat f : formats) {
    if (f == formats.front()) continue;
    std::string list;
    for (LinearFormat g : formats) list += std::string(list.empty() ? "" : ", ") + name(g);
    throw std::invalid_argument(what + ": --fused-blocks makes these Linears one GEMM, so they must share a format, but they are " +
                                list + " (quantize them alike, or --fused-blocks off)");
  }
}

std::vector<std::vector<uint8_t>> staged_stack(const std::vector<const Tensor*>& ts, LinearFormat format, ElementType type,
                                               const std::string& what) {
  std::vector<std::vector<uint8_t>> stack(static_cast<size_t>(parts_of(format)));
  for (const Tensor* t : ts) {
    auto parts = staged_parts(*t, format, type, what);
    for (size_t p = 0; p < stack.size(); ++p) stack[p].insert(stack[p].end(), parts[p].begin(), parts[p].end());
  }
  return stack;
}

LinearView view_of_parts(LinearFormat f, const void* const* parts, int group) {
  return {f, parts[0], parts_of(f) > 1 ? parts[1] : nullptr, f == LinearFormat::kInt8ConvRot ? group : 0};
}

void LinearRunner::reserve(int64_t weight_bytes, int64_t code_bytes, int64_t scale_bytes, int64_t accumulator_bytes) {
  arena_.ensure(dequantized_, static_cast<size_t>(weight_bytes), "an int8 Linear dequantized for its GEMM");
  arena_.ensure(codes_, static_cast<size_t>(code_bytes), "a Linear's input as FP8 codes");
  arena_.ensure(row_scales_, static_cast<size_t>(scale_bytes), "a Linear's FP8 input row scales");
  arena_.ensure(accumulator_, static_cast<size_t>(accumulator_bytes), "an fp8 Linear's accumulator");
}

void LinearRunner::reserve_w8a8(const W8A8Scratch& most) {
  arena_.ensure(int8_codes_, static_cast<size_t>(most.codes), "a W8A8 Linear's rotated input as int8 codes");
  arena_.ensure(int8_scales_, static_cast<size_t>(most.scales), "a W8A8 Linear's input row scales");
  arena_.ensure(int32_product_, static_cast<size_t>(most.accumulator), "a W8A8 Linear's int32 product");
}

LinearView LinearRunner::prepared(const LinearView& w, int64_t out, int64_t in) {
  if (w.format != LinearFormat::kInt8Blocks) return w;
  // Sized by reserve; grows (once, outside the step loop's steady state) for a larger Linear.
  arena_.ensure(dequantized_, static_cast<size_t>(out * in) * element_size(type_), "an int8 Linear dequantized for its GEMM");
  dequantize_int8(static_cast<const int8_t*>(w.values), static_cast<const uint16_t*>(w.scales), out, in, dequantized_.get(),
                  type_, stream_);
  return {LinearFormat::kDense, dequantized_.get(), nullptr};
}

void LinearRunner::run(const LinearView& w, const void* x, int64_t rows, int64_t out, int64_t in, float* y, float beta) {
  switch (w.format) {
    case LinearFormat::kDense:
      gemm_.linear(type_, x, rows, w.values, out, in, y, beta);
      return;
    case LinearFormat::kInt8Blocks:
      gemm_.linear(type_, x, rows, prepared(w, out, in).values, out, in, y, beta);
      return;
    case LinearFormat::kFp8Rows:
      if (type_ != ElementType::kBf16) throw std::logic_error("LinearRunner: fp8 Linears take bf16 inputs");
      arena_.ensure(codes_, static_cast<size_t>(rows * in), "a Linear's input as FP8 codes");
      arena_.ensure(row_scales_, static_cast<size_t>(rows) * sizeof(float), "a Linear's FP8 input row scales");
      // The FP8 fallback of an accumulating Linear keeps its product apart (gemm.h); reserved whether or
      // not the device takes the fallback, as the plan counts it.
      if (beta != 0.0f) arena_.ensure(accumulator_, static_cast<size_t>(rows * out) * sizeof(float), "an fp8 Linear's accumulator");
      quantize_fp8_rows(x, type_, rows, in, codes_.as<uint8_t>(), row_scales_.as<float>(), stream_);
      gemm_.linear_fp8(codes_.as<uint8_t>(), row_scales_.as<float>(), rows, static_cast<const uint8_t*>(w.values),
                       static_cast<const float*>(w.scales), out, in, y, beta, accumulator_.as<float>(),
                       static_cast<int64_t>(accumulator_.bytes() / sizeof(float)));
      return;
    case LinearFormat::kInt8ConvRot: {
      // Sized by reserve_w8a8; grows (once, outside the step loop's steady state) for a wider call.
      const W8A8Scratch need = w8a8_scratch(rows, out, in);
      reserve_w8a8(need);
      convrot_quantize_rows(x, type_, rows, in, w.group, int8_codes_.as<int8_t>(), int8_scales_.as<float>(), arena_.device(),
                            stream_);
      gemm_.linear_int8(int8_codes_.as<int8_t>(), rows, static_cast<const int8_t*>(w.values), out, in,
                        int32_product_.as<int32_t>());
      w8a8_epilogue(int32_product_.as<int32_t>(), int8_scales_.as<float>(), static_cast<const float*>(w.scales), rows, out, y,
                    beta, stream_);
      return;
    }
  }
}

}  // namespace rgbaq::engine::cuda
