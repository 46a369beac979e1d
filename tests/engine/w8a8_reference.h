#pragma once
// ConvRot W8A8 in float64, written from its published description (stable-diffusion.cpp
// docs/int8_convrot.md), not from the engine's code: the rotation is an explicit [G, G] matrix built as
// the Kronecker power of H4 / 2 and applied by a plain product, the quantizations are absmax / 127 with
// round half to even, and the product is an exact integer sum. Used by the ConvRot tests and, through
// DitReference::w8a8, by the float64 W8A8 render.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tests/engine/reference_math.h"

namespace rgbaq::testing {

// A ConvRot Linear as the file holds it: q [out, in] = round(W R / s), s [out], group G.
struct ConvRotWeight {
  int64_t out = 0, in = 0;
  int group = 0;
  std::vector<int8_t> q;
  std::vector<float> scales;
};

// R_G = (H4 / 2) (x) ... (x) (H4 / 2), [G, G] row-major; G a power of four.
inline Vec hadamard_matrix(int g) {
  const double h4[4][4] = {{1, 1, 1, -1}, {1, 1, -1, 1}, {1, -1, 1, 1}, {-1, 1, 1, 1}};
  Vec r{1.0};
  int n = 1;
  while (n < g) {
    Vec next(static_cast<size_t>(16 * n * n));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 4; ++b) next[static_cast<size_t>((i * 4 + a) * 4 * n + j * 4 + b)] = r[i * n + j] * h4[a][b] / 2;
    r = std::move(next);
    n *= 4;
  }
  return r;
}

// x [rows, cols] -> x R (block-diagonal R_G), by the explicit matrix.
inline Vec rotate_rows(const Vec& x, int64_t rows, int64_t cols, int g) {
  const Vec h = hadamard_matrix(g);
  Vec y(x.size(), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < cols; b += g)
      for (int j = 0; j < g; ++j) {
        double s = 0;
        for (int i = 0; i < g; ++i) s += x[r * cols + b + i] * h[static_cast<size_t>(i * g + j)];
        y[r * cols + b + j] = s;
      }
  return y;
}

// y = W8A8(x): each row of x R quantized with s = max(max|.| / 127, 1e-30) and q = round half even,
// clamped to +-127; A = q_x q_w^T in integers; y = A s_x s_w.
inline Vec w8a8_linear(const Vec& x, int64_t rows, const ConvRotWeight& w) {
  const Vec xr = rotate_rows(x, rows, w.in, w.group);
  Vec y(static_cast<size_t>(rows * w.out));
  std::vector<int64_t> qx(static_cast<size_t>(w.in));
  for (int64_t r = 0; r < rows; ++r) {
    double amax = 0;
    for (int64_t i = 0; i < w.in; ++i) amax = std::max(amax, std::fabs(xr[r * w.in + i]));
    const double s = std::max(amax / 127, 1e-30);
    for (int64_t i = 0; i < w.in; ++i) qx[i] = static_cast<int64_t>(std::clamp(std::nearbyint(xr[r * w.in + i] / s), -127.0, 127.0));
    for (int64_t o = 0; o < w.out; ++o) {
      int64_t acc = 0;
      for (int64_t i = 0; i < w.in; ++i) acc += qx[i] * w.q[o * w.in + i];
      y[r * w.out + o] = double(acc) * s * double(w.scales[o]);
    }
  }
  return y;
}

// The weight the file stands for: (q s) R (R symmetric and orthogonal: W R R = W).
inline Vec convrot_dequantized(const ConvRotWeight& w) {
  Vec qs(w.q.size());
  for (int64_t o = 0; o < w.out; ++o)
    for (int64_t i = 0; i < w.in; ++i) qs[o * w.in + i] = double(w.q[o * w.in + i]) * double(w.scales[o]);
  return rotate_rows(qs, w.out, w.in, w.group);
}

}  // namespace rgbaq::testing
