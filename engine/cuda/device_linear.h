#pragma once
// A Linear weight on the device in its format (linear_format.h), and LinearRunner, which computes
// y = x W^T for any of them on the session's stream: a dense weight goes straight to cuBLASLt; an int8
// one is dequantized into one reused scratch matrix in the GEMM type first; an fp8 one takes x
// quantized per token into a reused scratch (codes and row scales) and an FP8 GEMM (whose fallback,
// when it adds to y, keeps its product in one more scratch); a ConvRot one kept (--gpu-int8 w8a8) takes x
// rotated and quantized per row into the scratch, an int8 GEMM into an int32 scratch, and an epilogue
// that applies both scales into y (convrot_kernels.h). The scratch is
// sized by reserve (workspace_plan.h's linear_scratch) before the first render. Never run on a GPU yet.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/device_memory.h"
#include "engine/cuda/gemm.h"
#include "engine/cuda/linear_format.h"
#include "engine/cuda/w8a8_plan.h"
#include "engine/model/tensor.h"

namespace rgbaq::engine::cuda {

// Where a Linear's device bytes are: values (dense: the GEMM type; int8; E4M3 codes) and, for int8 and
// fp8, its scales (bf16 block scales; fp32 per output row); a ConvRot one's group G.
struct LinearView {
  LinearFormat format = LinearFormat::kDense;
  const void* values = nullptr;
  const void* scales = nullptr;
  int group = 0;
};

struct DeviceLinear {
  LinearFormat format = LinearFormat::kDense;
  DeviceBuffer values, scales;
  int group = 0;  // kInt8ConvRot's G
  LinearView view() const { return {format, values.get(), scales.get(), group}; }
};

// A streamed Linear's host bytes in `format`, as the device holds them: values, then the scales when the
// format has them (parts_of). Bit for bit what WeightSource::linear uploads; `what` names it in errors.
std::vector<std::vector<uint8_t>> staged_parts(const Tensor& t, LinearFormat format, ElementType type, const std::string& what);
inline int parts_of(LinearFormat f) { return f == LinearFormat::kDense ? 1 : 2; }
// Linears [out_i, in] of one format stacked by rows into one [sum out_i, in] (--fused-blocks: Q|K|V and
// gate|up each one GEMM). Every format keeps an output row's values, and its scales, in row order, so a
// stack is each part's bytes one Linear after the other: staged_parts' here, the device's in
// WeightSource::stacked_linear. Throws, naming `what` and the formats, when they differ.
void require_one_format(const std::vector<LinearFormat>& formats, const std::string& what);
std::vector<std::vector<uint8_t>> staged_stack(const std::vector<const Tensor*>& ts, LinearFormat format, ElementType type,
                                               const std::string& what);
// `group`: a ConvRot Linear's G (the stored tensor's convrot_group()), else 0.
LinearView view_of_parts(LinearFormat f, const void* const* parts, int group = 0);

class LinearRunner {
 public:
  LinearRunner(DeviceArena& arena, Gemm& gemm, ElementType type, cudaStream_t stream)
      : arena_(arena), gemm_(gemm), type_(type), stream_(stream) {}
  // y[rows, out] = beta y + x[rows, in] W^T; x in the GEMM type, contiguous.
  void run(const LinearView& w, const void* x, int64_t rows, int64_t out, int64_t in, float* y, float beta = 0.0f);
  // w ready for several runs in a row (row chunks of one input): an int8 Linear dequantized into the
  // scratch now, as a dense view of it (valid until the next prepared, or run of an int8 Linear); any
  // other as it is.
  LinearView prepared(const LinearView& w, int64_t out, int64_t in);
  // The scratch: a dequantized weight of `weight_bytes`, fp8 inputs of `code_bytes` with `scale_bytes`
  // of row scales, and the fp8 fallback's `accumulator_bytes` (any of them 0 when its format is not
  // used). Throws a DeviceFault when they do not fit.
  void reserve(int64_t weight_bytes, int64_t code_bytes, int64_t scale_bytes, int64_t accumulator_bytes);
  // The W8A8 scratch (w8a8_plan.h): the widest rotated input's codes and row scales, the largest int32
  // product. Throws a DeviceFault when it does not fit.
  void reserve_w8a8(const W8A8Scratch& most);
  Gemm& gemm() const { return gemm_; }
  ElementType type() const { return type_; }

 private:
  DeviceArena& arena_;
  Gemm& gemm_;
  ElementType type_;
  cudaStream_t stream_;
  DeviceBuffer dequantized_, codes_, row_scales_, accumulator_;
  DeviceBuffer int8_codes_, int8_scales_, int32_product_;  // W8A8's
};

}  // namespace rgbaq::engine::cuda
