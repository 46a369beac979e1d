#include "engine/graphs.h"

#include <stdexcept>

#include "host/contract_limits.h"

namespace rgbaq::engine {
namespace {

void expect_shape(const char* name, const Tensor* t, const Shape& shape) {
  if (!t) throw std::invalid_argument(std::string(name) + " is missing");
  if (t->dtype() != DType::kF32 || t->shape() != shape) {
    throw std::invalid_argument(std::string(name) + " is " + std::string(dtype_name(t->dtype())) + " " +
                                shape_string(t->shape()) + "; expected F32 " + shape_string(shape));
  }
}

}  // namespace

Tensor Graphs::encode(std::span<const int32_t> ids) {
  host::check_full_tokens(static_cast<int>(ids.size()));
  Tensor hidden = run_encode(ids);
  expect_shape("the encoder's output", &hidden, {static_cast<int64_t>(ids.size()), text_dim()});
  return hidden;
}

Tensor Graphs::velocity(const VelocityInputs& in) {
  if (!in.img_tokens || !in.txt_feats || !in.rope) throw std::invalid_argument("velocity: an input is missing");
  const int64_t n = in.img_tokens->rank() == 2 ? in.img_tokens->dim(0) : -1;
  const int64_t l = in.txt_feats->rank() == 2 ? in.txt_feats->dim(0) : -1;
  host::check_image_tokens(static_cast<int>(n));
  host::check_text_tokens(static_cast<int>(l));
  expect_shape("img_tokens", in.img_tokens, {n, host::kLatentChannels});
  expect_shape("txt_feats", in.txt_feats, {l, text_dim()});
  if (in.rope->text_len != l || in.rope->image_tokens != n || in.rope->txt_cos.size() != static_cast<size_t>(l * 64) ||
      in.rope->img_cos.size() != static_cast<size_t>(n * 64)) {
    throw std::invalid_argument("RoPE tensors are for L " + std::to_string(in.rope->text_len) + ", N " +
                                std::to_string(in.rope->image_tokens) + "; the inputs have L " + std::to_string(l) +
                                ", N " + std::to_string(n));
  }
  Tensor vel = run_velocity(in);
  expect_shape("the DiT's output", &vel, {n, host::kLatentChannels});
  return vel;
}

Tensor Graphs::decode(const Tensor& latents, const host::ImageSize& size) {
  host::check_image_size(size);
  if (!fixed_decoder_sizes().empty()) host::check_fixed_decoder_size(size, fixed_decoder_sizes());
  expect_shape("latents", &latents, {size.tokens(), host::kLatentChannels});
  Tensor image = run_decode(latents, size);
  expect_shape("the decoder's output", &image, {4, size.height, size.width});
  return image;
}

}  // namespace rgbaq::engine
