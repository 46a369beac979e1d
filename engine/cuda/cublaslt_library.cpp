#include "engine/cuda/cublaslt_library.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

#include "engine/cuda/cuda_check.h"

namespace rgbaq::engine::cuda {
namespace {

std::atomic<const CublasLt*> loaded{nullptr};

std::string loader_error() {
  const char* e = dlerror();
  return e ? e : "no reason given";
}

template <typename F>
void resolve(void* handle, const std::string& file, const char* name, F& out) {
  dlerror();  // clear an earlier error
  void* symbol = dlsym(handle, name);
  if (!symbol) throw CudaError(file + " has no " + name + " (" + loader_error() + "): not the cuBLASLt this build needs");
  out = reinterpret_cast<F>(symbol);
}

}  // namespace

const CublasLt& open_cublaslt(const std::string& file) {
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    throw CudaError("cuBLASLt could not be loaded: " + loader_error() + " (install CUDA " +
                    std::to_string(CUBLAS_VER_MAJOR) + "'s cuBLAS, or put the folder holding " + file +
                    " on LD_LIBRARY_PATH)");
  }
  auto* api = new CublasLt{};  // kept for the process's life, as the library is
  try {
    resolve(handle, file, "cublasLtCreate", api->create);
    resolve(handle, file, "cublasLtDestroy", api->destroy);
    resolve(handle, file, "cublasLtGetStatusString", api->status_string);
    resolve(handle, file, "cublasLtMatmul", api->matmul);
    resolve(handle, file, "cublasLtMatmulDescCreate", api->matmul_desc_create);
    resolve(handle, file, "cublasLtMatmulDescDestroy", api->matmul_desc_destroy);
    resolve(handle, file, "cublasLtMatmulDescSetAttribute", api->matmul_desc_set_attribute);
    resolve(handle, file, "cublasLtMatrixLayoutCreate", api->matrix_layout_create);
    resolve(handle, file, "cublasLtMatrixLayoutDestroy", api->matrix_layout_destroy);
    resolve(handle, file, "cublasLtMatrixLayoutSetAttribute", api->matrix_layout_set_attribute);
    resolve(handle, file, "cublasLtMatmulPreferenceCreate", api->preference_create);
    resolve(handle, file, "cublasLtMatmulPreferenceDestroy", api->preference_destroy);
    resolve(handle, file, "cublasLtMatmulPreferenceSetAttribute", api->preference_set_attribute);
    resolve(handle, file, "cublasLtMatmulAlgoGetHeuristic", api->algo_get_heuristic);
  } catch (...) {
    delete api;
    dlclose(handle);
    throw;
  }
  return *api;
}

std::string cublaslt_file_name() { return "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR); }

const CublasLt& cublaslt() {
  static std::mutex mutex;
  if (const CublasLt* api = loaded.load(std::memory_order_acquire)) return *api;
  const std::lock_guard<std::mutex> lock(mutex);
  if (const CublasLt* api = loaded.load(std::memory_order_acquire)) return *api;
  const CublasLt* api = &open_cublaslt(cublaslt_file_name());  // a failure loads nothing: the next call tries again
  loaded.store(api, std::memory_order_release);
  return *api;
}

const CublasLt* cublaslt_if_loaded() { return loaded.load(std::memory_order_acquire); }

}  // namespace rgbaq::engine::cuda
