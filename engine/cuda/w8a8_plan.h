#pragma once
// The host-side plan of a ConvRot Linear run as W8A8 on the device (--gpu-int8 w8a8; engine/model/convrot.h
// has the math): which shapes it takes, how the int8 x int8 -> int32 cuBLASLt call (IMMA) is laid out,
// and the scratch it needs. Plain arithmetic, so the host tests check exactly what gemm.cpp and
// convrot_kernels.cu use. Never run on a GPU yet.
//
// cuBLASLt's IMMA rules for the regular (column-major) ordering, from its cublasLtMatmul documentation:
// CUBLAS_COMPUTE_32I with CUDA_R_32I scale type, CUDA_R_8I A and B, CUDA_R_32I C; only the "TN" form
// (A transposed, B not); m and k multiples of 4; lda, ldb, ldc multiples of 4; every pointer 4-byte
// aligned (16 for the fast kernels). Our row-major y[rows, out] = x[rows, in] W[out, in]^T is the
// column-major C[out x rows] = W^T(T) x^T: cuBLASLt's A is the stored weight, transposed, its B our x.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/model/convrot.h"

namespace rgbaq::engine::cuda {

// cuBLASLt's view of the call (column-major): C[m x n] = op(A)[m x k] B[k x n], op(A) = A^T.
struct ImmaCall {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  bool transpose_a = true, transpose_b = false;  // "TN", the only form IMMA takes
};

inline ImmaCall imma_call(int64_t rows, int64_t out, int64_t in) {
  return {out, rows, in, in, in, out, true, false};
}

// Why the IMMA call cannot take this call ("" when it can): the shape rules above.
inline std::string imma_shape_problem(const ImmaCall& c) {
  if (c.m % 4 != 0) return "its " + std::to_string(c.m) + " outputs are not a multiple of 4";
  if (c.k % 4 != 0) return "its " + std::to_string(c.k) + " inputs are not a multiple of 4";
  if (c.lda % 4 != 0 || c.ldb % 4 != 0 || c.ldc % 4 != 0) return "a leading dimension is not a multiple of 4";
  return "";
}

// The largest power of two up to 16 that divides every address; throws std::logic_error when it is
// below IMMA's 4 bytes (our buffers come from the arena, 256-byte aligned, so this is a broken caller).
inline unsigned imma_alignment(uintptr_t a, uintptr_t b, uintptr_t c) {
  const uintptr_t bits = a | b | c;
  unsigned align = 16;
  while (align > 1 && (bits % align) != 0) align /= 2;
  if (align < 4) throw std::logic_error("int8 GEMM: an operand is only " + std::to_string(align) + "-byte aligned (IMMA needs 4)");
  return align;
}

// The rotate-and-quantize kernel holds one row in dynamic shared memory as fp32, beside the 32 partial
// maxima of its block reduction in static shared memory: a block needs both, and past 48 KiB together it
// must opt in (a row of 12288, the DiT's MLP width, is 48 KiB alone).
constexpr int64_t kConvRotStaticSharedBytes = 32 * 4;
inline int64_t convrot_row_shared_bytes(int64_t cols) { return cols * 4; }
inline int64_t convrot_block_shared_bytes(int64_t cols) { return convrot_row_shared_bytes(cols) + kConvRotStaticSharedBytes; }

// Throws std::invalid_argument naming `what` when a ConvRot Linear [out, in] with group `group` cannot
// run as W8A8 on the device: a group that is not a power of four >= 4 or does not divide the width (the
// loader refuses those too), or a shape IMMA does not take. Every power-of-four group is handled.
inline void check_w8a8_shape(int64_t out, int64_t in, int group, const std::string& what) {
  std::string problem;
  if (!is_convrot_group(group)) {
    problem = "its ConvRot group " + std::to_string(group) + " is not a power of four >= 4";
  } else if (in % group != 0) {
    problem = "its ConvRot group " + std::to_string(group) + " does not divide its " + std::to_string(in) + " inputs";
  } else {
    problem = imma_shape_problem(imma_call(1, out, in));
  }
  if (!problem.empty()) {
    throw std::invalid_argument(what + " [" + std::to_string(out) + ", " + std::to_string(in) +
                                "] cannot run as a W8A8 Linear on the device: " + problem + " (use --gpu-int8 widen)");
  }
}

// Throws std::invalid_argument naming `what` when a row of `cols` does not fit the kernel's shared memory.
inline void check_convrot_row_fits(int64_t cols, int64_t max_shared_bytes, const std::string& what) {
  if (convrot_block_shared_bytes(cols) > max_shared_bytes) {
    throw std::invalid_argument(what + ": a row of " + std::to_string(cols) + " inputs needs " +
                                std::to_string(convrot_block_shared_bytes(cols)) + " bytes of shared memory, the device has " +
                                std::to_string(max_shared_bytes) + " a block (use --gpu-int8 widen)");
  }
}

// The scratch one W8A8 Linear of `rows` x [out, in] uses: the rotated input's int8 codes, its row
// scales, and the int32 product the epilogue scales into y.
struct W8A8Scratch {
  int64_t codes = 0, scales = 0, accumulator = 0;
};
inline W8A8Scratch w8a8_scratch(int64_t rows, int64_t out, int64_t in) { return {rows * in, rows * 4, rows * out * 4}; }

}  // namespace rgbaq::engine::cuda
