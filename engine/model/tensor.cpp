#include "engine/model/tensor.h"

#include <stdexcept>

#include "engine/model/convrot.h"
#include "engine/model/fp8_e4m3.h"
#include "engine/model/int8_blocks.h"

namespace rgbaq::engine {

std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Tensor Tensor::zeros(DType type, Shape shape) {
  Tensor t;
  t.dtype_ = type;
  t.shape_ = std::move(shape);
  auto buffer = std::make_shared<std::vector<uint8_t>>(t.nbytes(), 0);
  t.data_ = buffer->data();
  t.storage_ = std::move(buffer);
  t.owned_ = true;
  return t;
}

Tensor Tensor::from_f32(Shape shape, std::vector<float> values) {
  if (shape_numel(shape) != static_cast<int64_t>(values.size())) {
    throw std::invalid_argument("Tensor::from_f32: " + std::to_string(values.size()) + " values for shape " +
                                shape_string(shape));
  }
  Tensor t;
  t.shape_ = std::move(shape);
  auto buffer = std::make_shared<std::vector<float>>(std::move(values));
  t.data_ = buffer->data();
  t.storage_ = std::move(buffer);
  t.owned_ = true;
  return t;
}

Tensor Tensor::view(DType type, Shape shape, const void* data, std::shared_ptr<const void> keep_alive) {
  Tensor t;
  t.dtype_ = type;
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.storage_ = std::move(keep_alive);
  return t;
}

Tensor Tensor::with_block_scales(Tensor values, Tensor scales) {
  if (values.dtype_ != DType::kI8 || values.rank() != 2 || scales.dtype_ != DType::kBF16 ||
      scales.shape_ != Shape{values.dim(0), int8_scale_columns(values.dim(1))}) {
    throw std::invalid_argument("Tensor::with_block_scales: values " + std::string(dtype_name(values.dtype_)) +
                                shape_string(values.shape_) + " with scales " + std::string(dtype_name(scales.dtype_)) +
                                shape_string(scales.shape_));
  }
  values.scales_ = std::make_shared<const Tensor>(std::move(scales));
  values.quant_ = WeightQuant::kInt8Blocks;
  return values;
}

Tensor Tensor::with_scales(Tensor values, Tensor scales, WeightQuant quant, int convrot_group) {
  if (quant == WeightQuant::kInt8Blocks && convrot_group == 0) return with_block_scales(std::move(values), std::move(scales));
  const auto refuse = [&](const std::string& why) {
    throw std::invalid_argument(std::string("Tensor::with_scales(") + weight_quant_name(quant) + "): values " +
                                std::string(dtype_name(values.dtype_)) + shape_string(values.shape_) + " with scales " +
                                std::string(dtype_name(scales.dtype_)) + shape_string(scales.shape_) + ": " + why);
  };
  if (values.rank() != 2) refuse("the values are not a matrix [out, in]");
  const int64_t out = values.dim(0), in = values.dim(1);
  if (scales.dtype_ != DType::kF32) refuse("the scales are not F32");
  if (scales.shape_ == Shape{out, 1}) scales.shape_ = {out};  // ComfyUI writes row scales as a column
  switch (quant) {
    case WeightQuant::kInt8ConvRot:
      if (values.dtype_ != DType::kI8) refuse("the values are not I8");
      if (scales.shape_ != Shape{out}) refuse("the scales are not one per output row");
      if (!is_convrot_group(convrot_group) || in % convrot_group != 0) {
        refuse("group size " + std::to_string(convrot_group) + " is not a power of four >= 4 dividing " + std::to_string(in));
      }
      break;
    case WeightQuant::kFp8Scaled:
      if (values.dtype_ != DType::kF8E4M3) refuse("the values are not F8_E4M3");
      if (scales.numel() == 1 && scales.rank() <= 1) {
        scales.shape_ = {1};
      } else if (scales.shape_ != Shape{out}) {
        refuse("the scales are neither one per tensor nor one per output row");
      }
      if (convrot_group != 0) refuse("an FP8 weight has no ConvRot group");
      break;
    default:
      refuse("not a form with_scales attaches");
  }
  values.scales_ = std::make_shared<const Tensor>(std::move(scales));
  values.quant_ = quant;
  values.convrot_group_ = convrot_group;
  return values;
}

const char* weight_quant_name(WeightQuant q) {
  switch (q) {
    case WeightQuant::kNone: return "none";
    case WeightQuant::kInt8Blocks: return "int8-blocks";
    case WeightQuant::kInt8ConvRot: return "int8-convrot";
    case WeightQuant::kFp8Scaled: return "fp8-scaled";
  }
  return "?";
}

void* Tensor::mutable_data() {
  if (!owned_) throw std::logic_error("Tensor::mutable_data on a read-only view");
  return const_cast<void*>(data_);
}

const float* Tensor::f32() const {
  if (dtype_ != DType::kF32) throw std::logic_error("Tensor::f32 on a " + std::string(dtype_name(dtype_)) + " tensor");
  return static_cast<const float*>(data_);
}

float* Tensor::mutable_f32() {
  f32();
  return static_cast<float*>(mutable_data());
}

std::vector<float> Tensor::to_f32_vector() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  switch (quant_) {
    case WeightQuant::kNone: break;
    case WeightQuant::kInt8Blocks:
      dequantize_int8_rows(static_cast<const int8_t*>(data_), static_cast<const uint16_t*>(scales_->data()), dim(0), dim(1),
                           out.data());
      return out;
    case WeightQuant::kInt8ConvRot: {
      const int64_t rows = dim(0), cols = dim(1);
      const auto* q = static_cast<const int8_t*>(data_);
      const float* s = scales_->f32();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = static_cast<float>(q[r * cols + c]) * s[r];
      convrot_rotate_rows(out.data(), rows, cols, cols, convrot_group_);  // R = R^T = R^-1: the rotation undone
      return out;
    }
    case WeightQuant::kFp8Scaled: {
      const int64_t rows = dim(0), cols = dim(1);
      const auto* q = static_cast<const uint8_t*>(data_);
      const float* s = scales_->f32();
      const bool per_row = scales_->numel() == rows && rows != 1;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = fp8::e4m3_to_float(q[r * cols + c]) * s[per_row ? r : 0];
      return out;
    }
  }
  to_f32(dtype_, data_, out.data(), out.size());
  return out;
}

}  // namespace rgbaq::engine
