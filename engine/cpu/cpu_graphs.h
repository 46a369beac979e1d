#pragma once
// The native CPU backend: the reference implementation of the three graphs, and what every test uses.
// The DiT's text prefix (keys and values of the L text rows) is kept for the last txt_feats seen, so
// the 8 steps of one image compute it once.
#include <memory>
#include <optional>

#include "engine/cpu/dit.h"
#include "engine/cpu/text_encoder.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vae_decoder.h"
#include "engine/graphs.h"
#include "engine/model_directory.h"

namespace rgbaq::engine::cpu {

class CpuGraphs final : public Graphs {
 public:
  // Loads (maps) all three components' weights; `threads` 0 means one per hardware thread.
  CpuGraphs(const ModelDirectory& model, int threads = 0);

  std::string backend_name() const override { return "cpu"; }
  int text_dim() const override { return encoder_->config().hidden; }
  ThreadPool& pool() { return pool_; }
  const Dit& dit() const { return *dit_; }

 protected:
  Tensor run_encode(std::span<const int32_t> ids) override;
  Tensor run_velocity(const VelocityInputs& in) override;
  Tensor run_decode(const Tensor& latents, const host::ImageSize& size) override;

 private:
  ThreadPool pool_;
  WeightStore text_weights_, dit_weights_, vae_weights_;
  std::unique_ptr<TextEncoder> encoder_;
  std::unique_ptr<Dit> dit_;
  std::unique_ptr<VaeDecoder> vae_;
  // The prefix and the inputs it was computed from.
  std::optional<TextPrefix> prefix_;
  std::vector<float> prefix_feats_, prefix_cos_;
};

}  // namespace rgbaq::engine::cpu
