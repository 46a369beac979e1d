#pragma once
// cuBLASLt, loaded when the first GEMM object is made rather than when the program starts: an rgbaqd
// or rgbaq built with the CUDA backend then runs on a machine with no CUDA libraries at all (the cpu
// engine, the CLI, `--version`), and the device check's archive needs to carry none of cuBLAS's 0.5 GB
// (it is found there under the toolkit or the torch wheels). The library is looked up as the dynamic
// loader does for `libcublasLt.so.<major>` (LD_LIBRARY_PATH, then the program's RUNPATH, which names
// the toolkit's lib directory it was built against), so the version is the one compiled against.
#include <cublasLt.h>
#include <cublas_api.h>  // CUBLAS_VER_MAJOR

#include <string>

namespace rgbaq::engine::cuda {

// The entry points the backend calls, with cuBLASLt's own signatures.
struct CublasLt {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtGetStatusString) status_string;
  decltype(&cublasLtMatmul) matmul;
  decltype(&cublasLtMatmulDescCreate) matmul_desc_create;
  decltype(&cublasLtMatmulDescDestroy) matmul_desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) matmul_desc_set_attribute;
  decltype(&cublasLtMatrixLayoutCreate) matrix_layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) matrix_layout_destroy;
  decltype(&cublasLtMatrixLayoutSetAttribute) matrix_layout_set_attribute;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set_attribute;
  decltype(&cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic;
};

// The file name looked for: "libcublasLt.so.13" for the toolkit this was built with.
std::string cublaslt_file_name();

// The loaded library; throws CudaError naming the file and the loader's reason when it cannot be
// loaded or lacks an entry point. Loaded once per process (thread-safe); never unloaded.
const CublasLt& cublaslt();

// Loads `file` (a name the loader searches for, or a path) and resolves every entry point: what
// cublaslt() does once with cublaslt_file_name(). The table lives as long as the process.
const CublasLt& open_cublaslt(const std::string& file);

// The loaded library, or null when it has not been loaded (or could not be): for error messages,
// which must not load anything.
const CublasLt* cublaslt_if_loaded();

}  // namespace rgbaq::engine::cuda
