#include "engine/cuda/gemm.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/cuda/cublaslt_library.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/w8a8_plan.h"
#include "engine/cuda/workspace_plan.h"

namespace rgbaq::engine::cuda {
namespace {


// The largest power of two up to 16 that divides every address: cuBLASLt's algorithms need it.
unsigned alignment_of(const void* a, const void* b, const void* c) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) | reinterpret_cast<uintptr_t>(c);
  unsigned align = 16;
  while (align > 1 && (bits % align) != 0) align /= 2;
  return align;
}

}  // namespace

size_t element_size(ElementType t) { return t == ElementType::kBf16 ? 2 : 4; }

Gemm::Gemm(DeviceArena& arena, cudaStream_t stream) : lt_(cublaslt()), arena_(arena), stream_(stream) {
  check_cublas(lt_.create(&handle_), arena.device(), "cublasLtCreate");
  workspace_ = arena.allocate(static_cast<size_t>(kGemmWorkspaceBytes), "cuBLASLt workspace");
}

Gemm::~Gemm() {
  for (auto& [key, p] : plans_) destroy_plan(p);
  if (handle_) lt_.destroy(handle_);
}

void Gemm::destroy_plan(Plan& p) const {
  if (p.op) lt_.matmul_desc_destroy(p.op);
  for (cublasLtMatrixLayout_t l : {p.a, p.b, p.c}) {
    if (l) lt_.matrix_layout_destroy(l);
  }
  p = Plan{};
}

Gemm::Plan Gemm::make_plan(const GemmShape& s, Operands type, unsigned alignment) {
  Plan p;
  try {
    if (type == Operands::kFp8) {
      if (build_plan(p, s, type, alignment, true)) return p;
      destroy_plan(p);  // no outer-vector algorithm for this shape: the unscaled one and a scaling pass
      type = Operands::kFp8Unscaled;
    }
    build_plan(p, s, type, alignment);
    p.unscaled_fp8 = type == Operands::kFp8Unscaled;
  } catch (...) {
    destroy_plan(p);  // whatever was created before the failure
    throw;
  }
  return p;
}

bool Gemm::build_plan(Plan& p, const GemmShape& s, Operands type, unsigned alignment, bool may_find_none) {
  const int device = arena_.device();
  const bool fp8 = type == Operands::kFp8 || type == Operands::kFp8Unscaled;
  const bool int8 = type == Operands::kInt8;
  const cudaDataType_t in = type == Operands::kBf16 ? CUDA_R_16BF : fp8 ? CUDA_R_8F_E4M3 : int8 ? CUDA_R_8I : CUDA_R_32F;
  const cudaDataType_t out = int8 ? CUDA_R_32I : CUDA_R_32F;
  // Row-major C = A op(B) is column-major C^T = op(B)^T A^T: cuBLASLt's first operand is our B.
  // int8: CUBLAS_COMPUTE_32I with an int32 scale type, the only IMMA form with an int32 result.
  check_cublas(lt_.matmul_desc_create(&p.op, int8 ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F, out), device,
               "cublasLtMatmulDescCreate");
  if (type == Operands::kFp8) {
    // One scale per row of cuBLASLt's A (our W's output rows) and per column of its B (our x's rows);
    // the pointers are set at each call. FP8 takes only this transposed-A form, which a Linear is.
    const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    for (auto attr : {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_DESC_B_SCALE_MODE}) {
      check_cublas(lt_.matmul_desc_set_attribute(p.op, attr, &mode, sizeof mode), device,
                   "cublasLtMatmulDescSetAttribute(SCALE_MODE: outer vectors, FP8 per-row scales)");
    }
  }
  const cublasOperation_t trans_first = s.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, trans_second = CUBLAS_OP_N;
  check_cublas(lt_.matmul_desc_set_attribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_first, sizeof trans_first), device,
               "cublasLtMatmulDescSetAttribute(TRANSA)");
  check_cublas(lt_.matmul_desc_set_attribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_second, sizeof trans_second), device,
               "cublasLtMatmulDescSetAttribute(TRANSB)");
  // Our B as stored, column-major: [k x n] when it is [n, k] row-major, else [n x k].
  const uint64_t b_rows = s.b_transposed ? s.k : s.n, b_cols = s.b_transposed ? s.n : s.k;
  check_cublas(lt_.matrix_layout_create(&p.a, in, b_rows, b_cols, s.ldb), device, "cublasLtMatrixLayoutCreate");
  check_cublas(lt_.matrix_layout_create(&p.b, in, s.k, s.m, s.lda), device, "cublasLtMatrixLayoutCreate");
  check_cublas(lt_.matrix_layout_create(&p.c, out, s.n, s.m, s.ldc), device, "cublasLtMatrixLayoutCreate");
  if (s.batch > 1) {
    const int32_t count = s.batch;
    const int64_t strides[3] = {s.stride_b, s.stride_a, s.stride_c};
    cublasLtMatrixLayout_t layouts[3] = {p.a, p.b, p.c};
    for (int i = 0; i < 3; ++i) {
      check_cublas(lt_.matrix_layout_set_attribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
                   device, "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
      check_cublas(lt_.matrix_layout_set_attribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
                                                    sizeof strides[i]),
                   device, "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  check_cublas(lt_.preference_create(&pref), device, "cublasLtMatmulPreferenceCreate");
  size_t ws = workspace_.bytes();
  const uint32_t align = alignment;
  cublasStatus_t set = lt_.preference_set_attribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    if (set == CUBLAS_STATUS_SUCCESS) set = lt_.preference_set_attribute(pref, attr, &align, sizeof align);
  }
  if (set != CUBLAS_STATUS_SUCCESS) {
    lt_.preference_destroy(pref);
    check_cublas(set, device, "cublasLtMatmulPreferenceSetAttribute");
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = lt_.algo_get_heuristic(handle_, p.op, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  lt_.preference_destroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
    if (may_find_none) return false;
    throw CudaError(device_label(device) + ": cuBLASLt has no algorithm for a " +
                    (type == Operands::kBf16 ? "bf16" : fp8 ? "fp8 (E4M3)" : int8 ? "int8 (IMMA)" : "fp32") +
                    " GEMM of m " + std::to_string(s.m) + ", n " +
                    std::to_string(s.n) + ", k " + std::to_string(s.k) + ", batch " + std::to_string(s.batch) +
                    ", lda " + std::to_string(s.lda) + ", ldb " + std::to_string(s.ldb) + ", ldc " + std::to_string(s.ldc) +
                    " at " + std::to_string(alignment) + "-byte alignment (status " + std::to_string(status) + ")");
  }
  p.algo = result.algo;
  return true;
}

const Gemm::Plan& Gemm::plan_for(const GemmShape& s, Operands type, unsigned alignment) {
  const Key key{s.m, s.n, s.k, s.lda, s.ldb, s.ldc, s.b_transposed, s.batch, s.stride_a, s.stride_b, s.stride_c,
                static_cast<int>(type), static_cast<int>(alignment)};
  auto it = plans_.find(key);
  if (it == plans_.end()) it = plans_.emplace(key, make_plan(s, type, alignment)).first;
  return it->second;
}

bool Gemm::fp8_falls_back(int64_t rows, int64_t out, int64_t in) {
  return plan_for({rows, out, in, in, in, out, true, 1, 0, 0, 0}, fp8_operands(), 16).unscaled_fp8;
}

void Gemm::linear_fp8(const uint8_t* x, const float* x_scales, int64_t rows, const uint8_t* w, const float* w_scales,
                      int64_t out, int64_t in, float* y, float beta, float* accumulator, int64_t accumulator_elements) {
  if (rows == 0 || out == 0) return;
  const GemmShape s{rows, out, in, in, in, out, true, 1, 0, 0, 0};
  const int device = arena_.device();
  // The fallback's product goes to y itself unless y is to be added to.
  float* product = beta == 0.0f ? y : accumulator;
  const Plan& p = plan_for(s, fp8_operands(), std::min(alignment_of(x, w, y), alignment_of(x, w, product)));
  const float alpha = 1.0f, zero = 0.0f;
  if (p.unscaled_fp8) {
    if (product == accumulator && (!accumulator || accumulator_elements < rows * out)) {
      throw std::logic_error("Gemm::linear_fp8: the fallback needs " + std::to_string(rows * out) +
                             " accumulator floats, " + std::to_string(accumulator ? accumulator_elements : 0) + " given");
    }
    count_launch();
    check_cublas(lt_.matmul(handle_, p.op, &alpha, w, p.a, x, p.b, &zero, product, p.c, product, p.c, &p.algo,
                            workspace_.get(), workspace_.bytes(), stream_),
                 device, "cublasLtMatmul (fp8, unscaled)");
    scale_fp8_product(product, x_scales, w_scales, rows, out, y, beta, stream_);
    return;
  }
  // cuBLASLt's A is our W, its B our x (see build_plan).
  check_cublas(lt_.matmul_desc_set_attribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scales, sizeof w_scales), device,
               "cublasLtMatmulDescSetAttribute(A_SCALE_POINTER)");
  check_cublas(lt_.matmul_desc_set_attribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scales, sizeof x_scales), device,
               "cublasLtMatmulDescSetAttribute(B_SCALE_POINTER)");
  count_launch();
  check_cublas(lt_.matmul(handle_, p.op, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, workspace_.get(),
                          workspace_.bytes(), stream_),
               device, "cublasLtMatmul (fp8)");
}

void Gemm::linear_int8(const int8_t* x, int64_t rows, const int8_t* w, int64_t out, int64_t in, int32_t* acc) {
  if (rows == 0 || out == 0) return;
  // The TN call w8a8_plan.h lays out is the one build_plan makes for a Linear: cuBLASLt's A our W
  // transposed, its B our x; refused here rather than by a heuristic that finds nothing.
  const ImmaCall call = imma_call(rows, out, in);
  if (const std::string problem = imma_shape_problem(call); !problem.empty()) {
    throw std::invalid_argument("int8 GEMM of [" + std::to_string(rows) + ", " + std::to_string(in) + "] x [" +
                                std::to_string(out) + ", " + std::to_string(in) + "]^T: " + problem);
  }
  const GemmShape s{rows, out, in, call.ldb, call.lda, call.ldc, true, 1, 0, 0, 0};
  const Plan& p = plan_for(s, Operands::kInt8,
                           imma_alignment(reinterpret_cast<uintptr_t>(x), reinterpret_cast<uintptr_t>(w),
                                          reinterpret_cast<uintptr_t>(acc)));
  const int32_t alpha = 1, beta = 0;  // the scale type is int32 (CUBLAS_COMPUTE_32I)
  count_launch();
  check_cublas(lt_.matmul(handle_, p.op, &alpha, w, p.a, x, p.b, &beta, acc, p.c, acc, p.c, &p.algo, workspace_.get(),
                          workspace_.bytes(), stream_),
               arena_.device(), "cublasLtMatmul (int8)");
}

void Gemm::run(const GemmShape& s, ElementType type, const void* a, const void* b, float* c, float alpha, float beta) {
  if (s.m == 0 || s.n == 0) return;
  const Plan& p = plan_for(s, operands_of(type), alignment_of(a, b, c));
  count_launch();
  check_cublas(lt_.matmul(handle_, p.op, &alpha, b, p.a, a, p.b, &beta, c, p.c, c, p.c, &p.algo, workspace_.get(),
                              workspace_.bytes(), stream_),
               arena_.device(), "cublasLtMatmul");
}

}  // namespace rgbaq::engine::cuda
