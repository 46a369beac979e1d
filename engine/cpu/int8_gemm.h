#pragma once
// C[m, n] = A[m, k] B[n, k]^T in int8 x int8 -> int32, exact: A row-major (the quantized activations),
// B the stored int8 weight [n, k] row-major, read in place. B is never repacked whole (a copy of a 7 GB
// DiT would double its memory); a panel of 64 (AVX-512) or 16 (AVX2, AVX-VNNI) weight rows is interleaved
// on the fly into a thread-local buffer (64 x k bytes: 256 KiB at k = 4096, L2-resident) and reused for
// every row of A.
//
// The kernel is chosen once, at run time, from cpuid (__builtin_cpu_supports), and each ISA's code sits
// behind a target attribute, so one binary runs on any x86-64 and the file builds on other CPUs (scalar).
// VPDPBUSD multiplies u8 by s8: the weight panel is stored as b + 128 (u8), the activations stay s8, and
// 128 * sum_k a[r, k] is subtracted from each row, so every int8 value (-128 included) is exact.
//
// Why our own kernels and not oneDNN (the issue allows either; measured, not assumed): on the 2-core
// AVX-512 VNNI build machine (AMD EPYC, Zen 5), one thread, K = 4096, N = 4096, Debian's libdnnl 2.6.3
// gave 680-800 GOP/s (matmul s8 x s8 -> s32 with the weight as stored, its brgemm avx512_core_vnni
// kernel; gemm_s8s8s32 570-800) and this kernel 790-850 GOP/s at M = 256 and 1024, with identical results.
// oneDNN is not faster, so the engine takes no new dependency and no OpenMP runtime beside its own
// thread pool; the weight is read in its stored layout; results are exact integers, bitwise the same
// for any thread count and kernel.
#include <cstdint>

namespace rgbaq::engine::cpu {

enum class Int8GemmKernel { kScalar, kAvx2, kAvxVnni, kAvx512Vnni };

// C = A B^T with the best kernel this CPU supports. Single-threaded: callers split columns in tiles.
void int8_gemm_nt(int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                  int32_t* c, int64_t ldc);

// The same with A's row sums (sum_k a[r, k], e.g. from int8_row_sums) given, so a caller that tiles the
// columns computes them once; null computes them here.
void int8_gemm_nt(int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                  int32_t* c, int64_t ldc, const int32_t* a_row_sums);

// The same with one named kernel (tests run every kernel the CPU supports). Throws std::invalid_argument
// when this CPU or build lacks it.
void int8_gemm_nt_with(Int8GemmKernel kernel, int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda,
                       const int8_t* b, int64_t ldb, int32_t* c, int64_t ldc, const int32_t* a_row_sums);

// sums[r] = sum_k a[r, k] for r < m.
void int8_row_sums(const int8_t* a, int64_t m, int64_t k, int64_t lda, int32_t* sums);

bool int8_gemm_kernel_supported(Int8GemmKernel kernel);
Int8GemmKernel int8_gemm_best_kernel();              // chosen once
const char* int8_gemm_kernel_name(Int8GemmKernel kernel);
const char* int8_gemm_kernel_name();                 // the chosen one's

}  // namespace rgbaq::engine::cpu
