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

// How a Linear weight [out, in] is stored when it is not plain floating point:
// kInt8Blocks: I8 values + BF16 scales [out, ceil(in / 32)] (engine/model/int8_blocks.h, rgbaq's own form);
// kInt8ConvRot: I8 values q = round(W R / s) + F32 row scales [out], with the ConvRot group G
//   (engine/model/convrot.h: R block-diagonal, G a power of four): W = (q * s) R;
// kFp8Scaled: F8_E4M3 codes + F32 scales [1] (per tensor) or [out] (per row): W = value(q) * s.
enum class WeightQuant : uint8_t { kNone, kInt8Blocks, kInt8ConvRot, kFp8Scaled };
const char* weight_quant_name(WeightQuant q);  // "none", "int8-blocks", "int8-convrot", "fp8-scaled"

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
  // A quantized Linear weight [out, in] with its scales attached (see WeightQuant for the forms; an
  // [out, 1] scale tensor is taken as [out]). `convrot_group` is G for kInt8ConvRot, else 0. Throws
  // std::invalid_argument naming the dtypes and shapes when they do not fit the form.
  static Tensor with_scales(Tensor values, Tensor scales, WeightQuant quant, int convrot_group = 0);

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

  WeightQuant quant() const { return quant_; }
  // The scales of a quantized weight (any form), or null.
  const Tensor* scales() const { return scales_.get(); }
  int convrot_group() const { return convrot_group_; }
  // The block scales of a kInt8Blocks weight, or null.
  const Tensor* block_scales() const { return quant_ == WeightQuant::kInt8Blocks ? scales_.get() : nullptr; }

  // A copy widened to fp32: a plain copy for F32; for a quantized weight its effective fp32 weight
  // (q * s for blocks, (q * s) R for ConvRot, value(q) * s for FP8).
  std::vector<float> to_f32_vector() const;

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::shared_ptr<const void> storage_;
  const void* data_ = nullptr;
  bool owned_ = false;
  std::shared_ptr<const Tensor> scales_;
  WeightQuant quant_ = WeightQuant::kNone;
  int convrot_group_ = 0;
};

}  // namespace rgbaq::engine
