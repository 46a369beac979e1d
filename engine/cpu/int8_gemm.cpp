#include "engine/cpu/int8_gemm.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cpu/int8_gemm_kernels.h"

namespace rgbaq::engine::cpu {
namespace {

bool cpu_has(Int8GemmKernel kernel) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  switch (kernel) {
    case Int8GemmKernel::kScalar: return true;
    case Int8GemmKernel::kAvx2: return __builtin_cpu_supports("avx2");
    case Int8GemmKernel::kAvxVnni: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avxvnni");
    case Int8GemmKernel::kAvx512Vnni:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  }
  return false;
#else
  return kernel == Int8GemmKernel::kScalar;
#endif
}

int8_kernels::BlockKernel block_kernel(Int8GemmKernel kernel) {
  switch (kernel) {
    case Int8GemmKernel::kAvx2: return int8_kernels::avx2();
    case Int8GemmKernel::kAvxVnni: return int8_kernels::avx_vnni();
    case Int8GemmKernel::kAvx512Vnni: return int8_kernels::avx512_vnni();
    case Int8GemmKernel::kScalar: break;
  }
  return {nullptr, nullptr, 0, 0};
}

void scalar_gemm(int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                 int32_t* c, int64_t ldc) {
  for (int64_t r = 0; r < m; ++r) {
    const int8_t* ar = a + r * lda;
    for (int64_t j = 0; j < n; ++j) {
      const int8_t* bj = b + j * ldb;
      int32_t sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += int32_t(ar[i]) * int32_t(bj[i]);
      c[r * ldc + j] = sum;
    }
  }
}

void blocked_gemm(const int8_kernels::BlockKernel& kernel, int64_t m, int64_t n, int64_t k, const int8_t* a,
                  int64_t lda, const int8_t* b, int64_t ldb, int32_t* c, int64_t ldc, const int32_t* a_row_sums) {
  thread_local std::vector<int32_t> sums;
  if (a_row_sums == nullptr) {
    sums.resize(static_cast<size_t>(m));
    int8_row_sums(a, m, k, lda, sums.data());
    a_row_sums = sums.data();
  }
  // The blocks read A a 4-byte word at a time: a k that is not a multiple of 4 (no real Linear has one)
  // runs on a zero-padded copy of A.
  const int64_t k4 = (k + 3) / 4 * 4;
  thread_local std::vector<int8_t> padded;
  if (k4 != k) {
    padded.assign(static_cast<size_t>(m * k4), 0);
    for (int64_t r = 0; r < m; ++r) std::memcpy(padded.data() + r * k4, a + r * lda, static_cast<size_t>(k));
    a = padded.data();
    lda = k4;
  }
  thread_local std::vector<uint8_t> panel;
  const size_t panel_bytes = static_cast<size_t>(k4) * kernel.cols;
  if (panel.size() < panel_bytes) panel.resize(panel_bytes);
  for (int64_t n0 = 0; n0 < n; n0 += kernel.cols) {
    const int64_t nb = std::min<int64_t>(kernel.cols, n - n0);
    kernel.pack(b + n0 * ldb, ldb, nb, k, kernel.cols, panel.data());
    for (int64_t m0 = 0; m0 < m; m0 += kernel.rows) {
      const int64_t mb = std::min<int64_t>(kernel.rows, m - m0);
      kernel.block(mb, nb, k4, a + m0 * lda, lda, panel.data(), a_row_sums + m0, c + m0 * ldc + n0, ldc);
    }
  }
}

void check_shape(int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  if (m < 0 || n < 0 || k < 0 || lda < k || ldb < k || ldc < n) {
    throw std::invalid_argument("int8_gemm_nt: bad shape m=" + std::to_string(m) + " n=" + std::to_string(n) +
                                " k=" + std::to_string(k) + " lda=" + std::to_string(lda) + " ldb=" +
                                std::to_string(ldb) + " ldc=" + std::to_string(ldc));
  }
  // 255 * 128 * k must fit an int32 accumulator lane.
  if (k > (int64_t{1} << 16)) throw std::invalid_argument("int8_gemm_nt: k=" + std::to_string(k) + " exceeds 65536");
}

}  // namespace

void int8_row_sums(const int8_t* a, int64_t m, int64_t k, int64_t lda, int32_t* sums) {
  for (int64_t r = 0; r < m; ++r) {
    const int8_t* row = a + r * lda;
    int32_t s = 0;
    for (int64_t i = 0; i < k; ++i) s += row[i];
    sums[r] = s;
  }
}

bool int8_gemm_kernel_supported(Int8GemmKernel kernel) {
  return cpu_has(kernel) && (kernel == Int8GemmKernel::kScalar || block_kernel(kernel).block != nullptr);
}

Int8GemmKernel int8_gemm_best_kernel() {
  static const Int8GemmKernel best = [] {
    for (Int8GemmKernel k : {Int8GemmKernel::kAvx512Vnni, Int8GemmKernel::kAvxVnni, Int8GemmKernel::kAvx2}) {
      if (int8_gemm_kernel_supported(k)) return k;
    }
    return Int8GemmKernel::kScalar;
  }();
  return best;
}

const char* int8_gemm_kernel_name(Int8GemmKernel kernel) {
  switch (kernel) {
    case Int8GemmKernel::kScalar: return "scalar";
    case Int8GemmKernel::kAvx2: return "avx2";
    case Int8GemmKernel::kAvxVnni: return "avx-vnni";
    case Int8GemmKernel::kAvx512Vnni: return "avx512-vnni";
  }
  return "unknown";
}

const char* int8_gemm_kernel_name() { return int8_gemm_kernel_name(int8_gemm_best_kernel()); }

void int8_gemm_nt_with(Int8GemmKernel kernel, int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda,
                       const int8_t* b, int64_t ldb, int32_t* c, int64_t ldc, const int32_t* a_row_sums) {
  check_shape(m, n, k, lda, ldb, ldc);
  if (!int8_gemm_kernel_supported(kernel)) {
    throw std::invalid_argument(std::string("int8_gemm_nt: kernel ") + int8_gemm_kernel_name(kernel) +
                                " is not supported on this CPU or build");
  }
  if (m == 0 || n == 0) return;
  if (kernel == Int8GemmKernel::kScalar) return scalar_gemm(m, n, k, a, lda, b, ldb, c, ldc);
  blocked_gemm(block_kernel(kernel), m, n, k, a, lda, b, ldb, c, ldc, a_row_sums);
}

void int8_gemm_nt(int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                  int32_t* c, int64_t ldc, const int32_t* a_row_sums) {
  int8_gemm_nt_with(int8_gemm_best_kernel(), m, n, k, a, lda, b, ldb, c, ldc, a_row_sums);
}

void int8_gemm_nt(int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                  int32_t* c, int64_t ldc) {
  int8_gemm_nt(m, n, k, a, lda, b, ldb, c, ldc, nullptr);
}

}  // namespace rgbaq::engine::cpu
