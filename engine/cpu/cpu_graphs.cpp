#include "engine/cpu/cpu_graphs.h"

#include "engine/cpu/linear.h"

namespace rgbaq::engine::cpu {

CpuGraphs::CpuGraphs(const ModelDirectory& model, int threads)
    : pool_(threads),
      text_weights_(model.open_weights("text_encoder")),
      dit_weights_(model.open_weights("transformer")),
      vae_weights_(model.open_weights("vae")) {
  use_single_threaded_blas();
  const TextEncoderConfig& text_config = model.text_encoder_config();
  const DitConfig& dit_config = model.dit_config();  // its context width checked by ModelDirectory
  encoder_ = std::make_unique<TextEncoder>(text_weights_, text_config);
  dit_ = std::make_unique<Dit>(dit_weights_, dit_config);
  vae_ = std::make_unique<VaeDecoder>(vae_weights_, model.vae_config());
}

Tensor CpuGraphs::run_encode(std::span<const int32_t> ids) { return encoder_->encode(ids, pool_); }

std::string CpuGraphs::device_description() const {
  return "cpu, " + std::to_string(pool_.size()) + (pool_.size() == 1 ? " thread" : " threads");
}

void CpuGraphs::run_begin_image(const Tensor& txt_feats, const host::RopeTensors& rope) {
  rope_ = rope;
  dit_->text_prefix(txt_feats, rope_, workspace_, prefix_, pool_);
  if (vel_.shape() != Shape{rope.image_tokens, 64}) vel_ = Tensor::zeros(DType::kF32, {rope.image_tokens, 64});
}

const Tensor& CpuGraphs::run_step(const Tensor& img_tokens, float timestep) {
  dit_->velocity(img_tokens, prefix_, timestep, rope_, workspace_, vel_.mutable_f32(), pool_);
  return vel_;
}

void CpuGraphs::run_end_image() {}  // the buffers stay for the next image of the same size

Tensor CpuGraphs::run_decode(const Tensor& latents, const host::ImageSize& size) {
  return vae_->decode(latents, size.grid_height(), size.grid_width(), pool_);
}

}  // namespace rgbaq::engine::cpu
