#pragma once
// A tensor: shape, element type, and storage that is either owned or a view into a mapped file (which
// the tensor keeps alive). Row-major, contiguous.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/model/dtype.h"

namespace rgbaq::engine {

using Shape = std::vector<int64_t>;

std::string shape_string(const Shape& shape);  // "[4096, 64]"
int64_t shape_numel(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Owned, zero-filled.
  static Tensor zeros(DType type, Shape shape);
  static Tensor from_f32(Shape shape, std::vector<float> values);
  // A view of `data` (numel * element size bytes) whose lifetime `keep_alive` guarantees.
  static Tensor view(DType type, Shape shape, const void* data, std::shared_ptr<const void> keep_alive);
  // An I8 Linear weight [out, in] with its block scales [out, ceil(in / 32)] BF16 (engine/model/int8_blocks.h).
  static Tensor with_block_scales(Tensor int8_values, Tensor scales);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  const void* data() const { return data_; }
  void* mutable_data();  // owned tensors only

  const float* f32() const;  // requires dtype F32
  float* mutable_f32();
  std::span<const float> f32_span() const { return {f32(), static_cast<size_t>(numel())}; }

  // The block scales of a quantized I8 weight, or null.
  const Tensor* block_scales() const { return scales_.get(); }

  // A copy widened to fp32 (a plain copy for F32; q * scale for a quantized I8 weight).
  std::vector<float> to_f32_vector() const;

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::shared_ptr<const void> storage_;
  const void* data_ = nullptr;
  bool owned_ = false;
  std::shared_ptr<const Tensor> scales_;
};

}  // namespace rgbaq::engine
