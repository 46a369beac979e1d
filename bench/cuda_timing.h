#pragma once
// What the CUDA benchmarks (engine_bench --engine cuda, int8_gemm_bench) time with: CUDA events recorded
// on the stream the work runs on, one warm-up call first (plans, workspaces, clocks), then the median
// and the best of `reps` calls.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels.h"

namespace rgbaq::bench {

struct Timed {
  double median = 0, best = 0;  // seconds
  uint64_t launches = 0;        // in one call (kernels plus cuBLASLt calls)
};

inline Timed time_on(cudaStream_t stream, int reps, const std::function<void()>& f) {
  using engine::cuda::check;
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), 0, "cudaEventCreate");
  check(cudaEventCreate(&stop), 0, "cudaEventCreate");
  const uint64_t before = engine::cuda::launch_count();
  f();  // warm-up
  Timed t;
  t.launches = engine::cuda::launch_count() - before;
  check(cudaStreamSynchronize(stream), 0, "cudaStreamSynchronize");
  std::vector<double> s;
  for (int i = 0; i < reps; ++i) {
    check(cudaEventRecord(start, stream), 0, "cudaEventRecord");
    f();
    check(cudaEventRecord(stop, stream), 0, "cudaEventRecord");
    check(cudaEventSynchronize(stop), 0, "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), 0, "cudaEventElapsedTime");
    s.push_back(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(s.begin(), s.end());
  t.median = s[s.size() / 2];
  t.best = s.front();
  return t;
}

}  // namespace rgbaq::bench
