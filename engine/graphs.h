#pragma once
// The contract's three graphs (host_contract.md §1), the one interface every backend implements:
//   encode(ids [Lfull]) -> hidden [Lfull, D]
//   velocity(img_tokens [N, 64], txt_feats [L, D], t, txt_cos/sin [L, 64], img_cos/sin [N, 64]) -> [N, 64]
//   decode(latents [N, 64], size) -> image [4, H, W] in [-1, 1]
// The velocity graph is split the way a sampler uses it: begin_image() takes the image's text features
// and RoPE once (text rows never attend to image rows and are modulated at t = 0, so a backend computes
// each block's text keys/values there, once), step() runs the image rows at one timestep, end_image()
// lets the backend drop the prefix. The public functions check the contract's axes and the tensors'
// shapes, then call the backend, so every backend shares the checks (and the host code and its tests).
#include <cstdint>
#include <span>
#include <string>

#include "host/image_size.h"
#include "host/rope.h"
#include "engine/lora.h"
#include "engine/model/tensor.h"

namespace rgbaq::engine {

struct VelocityInputs {
  const Tensor* img_tokens = nullptr;   // [N, 64] fp32
  const Tensor* txt_feats = nullptr;    // [L, D] fp32
  float timestep = 0;                   // the DiT's t (timesteps[i] / 1000)
  const host::RopeTensors* rope = nullptr;
};

class Graphs {
 public:
  virtual ~Graphs() = default;

  // Throws std::invalid_argument naming the axis or tensor at fault.
  Tensor encode(std::span<const int32_t> ids);
  Tensor decode(const Tensor& latents, const host::ImageSize& size);

  // One image's velocity calls. begin_image copies what it needs (the caller may drop its inputs);
  // step's result is backend-owned and valid until the next step or end_image (no allocation per step).
  // step without begin_image, or with an N other than the RoPE's, throws std::logic_error /
  // std::invalid_argument.
  void begin_image(const Tensor& txt_feats, const host::RopeTensors& rope);
  const Tensor& step(const Tensor& img_tokens, float timestep);
  void end_image();
  // The LoRA adapters the DiT applies from the next begin_image on (empty: none), unmerged: switching
  // sets rewrites no weight. Throws std::logic_error between begin_image and end_image (the text prefix
  // was computed with the set before), std::invalid_argument for a module this DiT does not have.
  void set_loras(const LoraSet& set);
  // begin_image + step + end_image, for a single call (tests, tools).
  Tensor velocity(const VelocityInputs& in);
  // Allocates now the work buffers that images of up to `image_tokens` with a text of up to
  // `text_tokens` need, so that a size that does not fit fails here, not in a job. A backend whose
  // buffers are not its device's (cpu) does nothing. Throws a DeviceFault (out of memory) naming what
  // did not fit and the numbers.
  void reserve(int64_t text_tokens, int64_t image_tokens);

  virtual std::string backend_name() const = 0;
  // What it runs on, for logs and status: "cpu, 8 threads", "NVIDIA H200 (device 0, sm_90, 140 GiB), bf16".
  virtual std::string device_description() const = 0;
  // What its GEMMs compute in, as PNG metadata and status record it: "fp32" (cpu), "bf16", "fp32" or "fp8".
  virtual std::string precision() const = 0;
  virtual int text_dim() const = 0;  // D
  // The most device memory the session has held since it opened (weights, workspaces, scratch), as its
  // arena counts; 0 for a backend without device memory of its own (cpu).
  virtual uint64_t device_peak_bytes() const { return 0; }
  // Square sizes the decoder is fixed to (Core AI's bundles), or empty for any legal size.
  virtual std::span<const int> fixed_decoder_sizes() const { return {}; }

 protected:
  virtual Tensor run_encode(std::span<const int32_t> ids) = 0;
  virtual void run_begin_image(const Tensor& txt_feats, const host::RopeTensors& rope) = 0;
  virtual const Tensor& run_step(const Tensor& img_tokens, float timestep) = 0;
  virtual void run_end_image() = 0;
  virtual void run_set_loras(const LoraSet& set) = 0;
  virtual Tensor run_decode(const Tensor& latents, const host::ImageSize& size) = 0;
  virtual void run_reserve(int64_t /*text_tokens*/, int64_t /*image_tokens*/) {}

 private:
  int64_t image_text_len_ = -1, image_tokens_ = -1;  // of the image begun; -1 when none
};

}  // namespace rgbaq::engine
