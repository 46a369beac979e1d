// int8_gemm_bench [--json FILE] [--reps N]: the CUDA backend's W8A8 path (--gpu-int8 w8a8, issue 39)
// against its bf16 GEMM, on device 0, at the DiT's real Linear shapes ([out, in] 4096x4096, the MLP's
// 12288x4096 and 4096x12288) and M = 256 and 1024 rows (256x256 and 512x512 images' tokens; 1024x1024
// has 4096). Per shape: cuBLASLt's int8 GEMM (IMMA, int32 out) and bf16 GEMM (fp32 out) rates, and a whole
// W8A8 Linear (rotate-and-quantize kernel, int8 GEMM, epilogue) against a bf16 Linear. Random values
// made on the device. Prints a table; --json writes the figures. Exits 2 where no device is visible.
// Never run on a GPU yet.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/cuda_timing.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device_linear.h"
#include "engine/cuda/device_memory.h"
#include "engine/cuda/gemm.h"
#include "engine/cuda/kernels.h"

using namespace rgbaq::engine::cuda;
using rgbaq::bench::time_on;

int main(int argc, char** argv) {
  std::string json_path;
  int reps = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: int8_gemm_bench [--json FILE] [--reps N]\n");
      return 2;
    }
  }
  std::string why;
  if (visible_devices(&why) == 0) {
    std::fprintf(stderr, "int8_gemm_bench: %s\n", why.c_str());
    return 2;
  }
  try {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), 0, "cudaGetDeviceProperties");
    std::printf("%s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), 0, "cudaStreamCreate");
    DeviceArena arena(0, 0);
    Gemm gemm(arena, stream);
    LinearRunner runner(arena, gemm, ElementType::kBf16, stream);
    const int64_t max_rows = 1024, max_dim = 12288;
    DeviceBuffer x_bf16 = arena.allocate(max_rows * max_dim * 2, "x (bf16)");
    DeviceBuffer w_bf16 = arena.allocate(max_dim * 4096 * 2, "W (bf16)");
    DeviceBuffer x_i8 = arena.allocate(max_rows * max_dim, "x (int8)");
    DeviceBuffer w_i8 = arena.allocate(max_dim * 4096, "W (int8)");
    DeviceBuffer w_scales = arena.allocate(max_dim * 4, "W row scales");
    DeviceBuffer y = arena.allocate(max_rows * max_dim * 4, "y (fp32)");
    DeviceBuffer acc = arena.allocate(max_rows * max_dim * 4, "acc (int32)");
    fill_random(x_bf16.get(), ElementType::kBf16, max_rows * max_dim, 1, 1.0f, 0.0f, stream);
    fill_random(w_bf16.get(), ElementType::kBf16, max_dim * 4096, 2, 0.02f, 0.0f, stream);
    fill_random_int8(x_i8.as<int8_t>(), max_rows * max_dim, 3, stream);
    fill_random_int8(w_i8.as<int8_t>(), max_dim * 4096, 4, stream);
    fill_random(w_scales.get(), ElementType::kF32, max_dim, 5, 1e-4f, 2e-4f, stream);
    check_launch(0, "fill_random");
    runner.reserve_w8a8(w8a8_scratch(max_rows, max_dim, max_dim));
    nlohmann::json rows_json = nlohmann::json::array();
    std::printf("%-6s %-12s %12s %12s %8s %14s %14s %8s\n", "M", "[out, in]", "int8 TOP/s", "bf16 TFLOP/s", "ratio",
                "W8A8 Linear ms", "bf16 Linear ms", "speedup");
    for (const int64_t m : {int64_t{256}, int64_t{1024}}) {
      for (const auto& [out, in] : {std::pair<int64_t, int64_t>{4096, 4096}, {12288, 4096}, {4096, 12288}}) {
        const double ops = 2.0 * m * out * in;
        const double t_int8 = time_on(stream, reps, [&] {
          gemm.linear_int8(x_i8.as<int8_t>(), m, w_i8.as<int8_t>(), out, in, acc.as<int32_t>());
        }).median;
        const double t_bf16 = time_on(stream, reps, [&] {
          gemm.linear(ElementType::kBf16, x_bf16.get(), m, w_bf16.get(), out, in, y.as<float>());
        }).median;
        const LinearView w8a8{LinearFormat::kInt8ConvRot, w_i8.get(), w_scales.get(), 256};
        const double t_w8a8 = time_on(stream, reps, [&] { runner.run(w8a8, x_bf16.get(), m, out, in, y.as<float>()); }).median;
        std::printf("%-6lld %5lldx%-6lld %12.1f %12.1f %7.2fx %14.4f %14.4f %7.2fx\n", static_cast<long long>(m),
                    static_cast<long long>(out), static_cast<long long>(in), ops / t_int8 / 1e12, ops / t_bf16 / 1e12,
                    t_bf16 / t_int8, t_w8a8 * 1e3, t_bf16 * 1e3, t_bf16 / t_w8a8);
        rows_json.push_back({{"m", m}, {"out", out}, {"in", in}, {"int8_gemm_s", t_int8}, {"bf16_gemm_s", t_bf16},
                             {"w8a8_linear_s", t_w8a8}, {"int8_tops", ops / t_int8 / 1e12},
                             {"bf16_tflops", ops / t_bf16 / 1e12}, {"int8_over_bf16", t_bf16 / t_int8},
                             {"w8a8_linear_over_bf16", t_bf16 / t_w8a8}});
      }
    }
    check(cudaStreamSynchronize(stream), 0, "int8_gemm_bench");
    if (!json_path.empty()) {
      std::ofstream(json_path) << nlohmann::json{{"device", prop.name}, {"sm", prop.major * 10 + prop.minor}, {"reps", reps},
                                                 {"shapes", rows_json}}
                                      .dump(1);
    }
    cudaStreamDestroy(stream);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "int8_gemm_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
