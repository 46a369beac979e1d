// cuBLASLt is loaded on first use (engine/cuda/cublaslt_library.h), so that a CUDA build starts where no
// CUDA library is installed. Runs without a GPU: loading and resolving need none. (That such a program
// starts with no CUDA library at all is checked by the device-pack test, in a root holding only libc.)
#include <gtest/gtest.h>

#include <string>

#include "engine/cuda/cublaslt_library.h"
#include "engine/cuda/cuda_check.h"

namespace rgbaq::engine::cuda {
namespace {

TEST(CublasLtLibrary, TheToolkitsLibraryLoadsWithEveryEntryPoint) {
  EXPECT_EQ(cublaslt_file_name(), "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
  const CublasLt& lt = cublaslt();
  EXPECT_EQ(&lt, cublaslt_if_loaded());
  EXPECT_EQ(&lt, &cublaslt());  // once per process
  // Functions that need no device: a status's description ("the requested functionality is not supported").
  EXPECT_NE(std::string(lt.status_string(CUBLAS_STATUS_SUCCESS)).find("success"), std::string::npos);
  EXPECT_NE(std::string(lt.status_string(CUBLAS_STATUS_NOT_SUPPORTED)).find("not supported"), std::string::npos);
  for (const void* f : {(const void*)lt.create, (const void*)lt.destroy, (const void*)lt.matmul,
                        (const void*)lt.matmul_desc_create, (const void*)lt.matmul_desc_destroy,
                        (const void*)lt.matmul_desc_set_attribute, (const void*)lt.matrix_layout_create,
                        (const void*)lt.matrix_layout_destroy, (const void*)lt.matrix_layout_set_attribute,
                        (const void*)lt.preference_create, (const void*)lt.preference_destroy,
                        (const void*)lt.preference_set_attribute, (const void*)lt.algo_get_heuristic}) {
    EXPECT_NE(f, nullptr);
  }
  // A layout made and destroyed through the table: the entry points are cuBLASLt's own.
  cublasLtMatrixLayout_t layout = nullptr;
  ASSERT_EQ(lt.matrix_layout_create(&layout, CUDA_R_16BF, 64, 32, 64), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(lt.matrix_layout_destroy(layout), CUBLAS_STATUS_SUCCESS);
}

TEST(CublasLtLibrary, AMissingLibraryIsAnErrorNamingItAndTheRemedy) {
  try {
    open_cublaslt("libcublasLt.so.999");
    FAIL() << "a library that does not exist was loaded";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cuBLASLt could not be loaded: libcublasLt.so.999"), std::string::npos) << what;
    EXPECT_NE(what.find("LD_LIBRARY_PATH"), std::string::npos) << what;
  }
}

TEST(CublasLtLibrary, ALibraryWithoutItsEntryPointsIsRefusedByName) {
  try {
    open_cublaslt("libz.so.1");  // loads, but is no cuBLASLt
    FAIL() << "libz was taken for cuBLASLt";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("libz.so.1 has no cublasLtCreate"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace rgbaq::engine::cuda
