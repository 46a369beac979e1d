#pragma once
// The native CPU backend: the reference implementation of the three graphs, and what every test uses.
// begin_image computes the DiT's text prefix (keys and values of the L text rows) once; each step then
// runs the N image rows in a workspace reused across steps.
#include <memory>

#include "engine/cpu/dit.h"
#include "engine/cpu/text_encoder.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vae_decoder.h"
#include "engine/graphs.h"
#include "engine/model/model_directory.h"

namespace rgbaq::engine::cpu {

class CpuGraphs final : public Graphs {
 public:
  // Loads (maps) all three components' weights; `threads` 0 means one per hardware thread.
  CpuGraphs(const ModelDirectory& model, int threads = 0);

  std::string backend_name() const override { return "cpu"; }
  std::string precision() const override { return "fp32"; }
  std::string device_description() const override;
  int text_dim() const override { return encoder_->config().hidden; }
  ThreadPool& pool() { return pool_; }
  const Dit& dit() const { return *dit_; }

 protected:
  Tensor run_encode(std::span<const int32_t> ids) override;
  void run_begin_image(const Tensor& txt_feats, const host::RopeTensors& rope) override;
  const Tensor& run_step(const Tensor& img_tokens, float timestep) override;
  void run_end_image() override;
  void run_set_loras(const LoraSet& set) override { dit_->set_loras(set); }
  Tensor run_decode(const Tensor& latents, const host::ImageSize& size) override;

 private:
  ThreadPool pool_;
  WeightStore text_weights_, dit_weights_, vae_weights_;
  std::unique_ptr<TextEncoder> encoder_;
  std::unique_ptr<Dit> dit_;
  std::unique_ptr<VaeDecoder> vae_;
  // The image begun: its RoPE, text prefix, workspace and velocity buffer.
  host::RopeTensors rope_;
  TextPrefix prefix_;
  DitWorkspace workspace_;
  Tensor vel_;
};

}  // namespace rgbaq::engine::cpu
