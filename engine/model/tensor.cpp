#include "engine/model/tensor.h"

#include <stdexcept>

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
  return values;
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
  if (scales_) {
    dequantize_int8_rows(static_cast<const int8_t*>(data_), static_cast<const uint16_t*>(scales_->data()), dim(0), dim(1),
                         out.data());
    return out;
  }
  to_f32(dtype_, data_, out.data(), out.size());
  return out;
}

}  // namespace rgbaq::engine
