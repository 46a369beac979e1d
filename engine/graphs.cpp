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

void Graphs::begin_image(const Tensor& txt_feats, const host::RopeTensors& rope) {
  const int64_t l = txt_feats.rank() == 2 ? txt_feats.dim(0) : -1, n = rope.image_tokens;
  host::check_text_tokens(static_cast<int>(l));
  host::check_image_tokens(static_cast<int>(n));
  expect_shape("txt_feats", &txt_feats, {l, text_dim()});
  if (rope.text_len != l || rope.txt_cos.size() != static_cast<size_t>(l * 64) ||
      rope.txt_sin.size() != rope.txt_cos.size() || rope.img_cos.size() != static_cast<size_t>(n * 64) ||
      rope.img_sin.size() != rope.img_cos.size()) {
    throw std::invalid_argument("RoPE tensors are for L " + std::to_string(rope.text_len) + ", N " +
                                std::to_string(rope.image_tokens) + "; txt_feats has L " + std::to_string(l));
  }
  image_text_len_ = -1;
  run_begin_image(txt_feats, rope);
  image_text_len_ = l;
  image_tokens_ = n;
}

const Tensor& Graphs::step(const Tensor& img_tokens, float timestep) {
  if (image_text_len_ < 0) throw std::logic_error("velocity step without begin_image");
  expect_shape("img_tokens", &img_tokens, {image_tokens_, host::kLatentChannels});
  const Tensor& vel = run_step(img_tokens, timestep);
  expect_shape("the DiT's output", &vel, {image_tokens_, host::kLatentChannels});
  return vel;
}

void Graphs::reserve(int64_t text_tokens, int64_t image_tokens) {
  host::check_text_tokens(static_cast<int>(text_tokens));
  host::check_image_tokens(static_cast<int>(image_tokens));
  run_reserve(text_tokens, image_tokens);
}

void Graphs::end_image() {
  if (image_text_len_ < 0) return;
  image_text_len_ = image_tokens_ = -1;
  run_end_image();
}

void Graphs::set_loras(const LoraSet& set) {
  if (image_text_len_ >= 0) throw std::logic_error("set_loras between begin_image and end_image");
  run_set_loras(set);
}

Tensor Graphs::velocity(const VelocityInputs& in) {
  if (!in.img_tokens || !in.txt_feats || !in.rope) throw std::invalid_argument("velocity: an input is missing");
  begin_image(*in.txt_feats, *in.rope);
  try {
    const Tensor& step_vel = step(*in.img_tokens, in.timestep);
    // A copy of its own: the step's buffer belongs to the backend.
    Tensor vel = Tensor::from_f32(step_vel.shape(), {step_vel.f32(), step_vel.f32() + step_vel.numel()});
    end_image();
    return vel;
  } catch (...) {
    end_image();
    throw;
  }
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
