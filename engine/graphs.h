#pragma once
// The contract's three graphs (host_contract.md §1), the one interface every backend implements:
//   encode(ids [Lfull]) -> hidden [Lfull, D]
//   velocity(img_tokens [N, 64], txt_feats [L, D], t, txt_cos/sin [L, 64], img_cos/sin [N, 64]) -> [N, 64]
//   decode(latents [N, 64], size) -> image [4, H, W] in [-1, 1]
// The public functions check the contract's axes and the tensors' shapes, then call the backend, so
// every backend shares the checks (and the host code and its tests).
#include <cstdint>
#include <span>
#include <string>

#include "host/image_size.h"
#include "host/rope.h"
#include "engine/tensor.h"

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
  Tensor velocity(const VelocityInputs& in);
  Tensor decode(const Tensor& latents, const host::ImageSize& size);

  virtual std::string backend_name() const = 0;
  virtual int text_dim() const = 0;  // D
  // Square sizes the decoder is fixed to (Core AI's bundles), or empty for any legal size.
  virtual std::span<const int> fixed_decoder_sizes() const { return {}; }

 protected:
  virtual Tensor run_encode(std::span<const int32_t> ids) = 0;
  virtual Tensor run_velocity(const VelocityInputs& in) = 0;
  virtual Tensor run_decode(const Tensor& latents, const host::ImageSize& size) = 0;
};

}  // namespace rgbaq::engine
