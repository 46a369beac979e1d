#include "engine/model/fp8_e4m3.h"

#include <algorithm>
#include <cmath>

namespace rgbaq::engine::fp8 {

void quantize_rows(const float* x, int64_t rows, int64_t cols, uint8_t* codes, float* scales) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float max_abs = 0;
    for (int64_t c = 0; c < cols; ++c) max_abs = std::max(max_abs, std::fabs(row[c]));
    const float scale = row_scale(max_abs);
    scales[r] = scale;
    for (int64_t c = 0; c < cols; ++c) codes[r * cols + c] = quantized(row[c], scale);
  }
}

}  // namespace rgbaq::engine::fp8
