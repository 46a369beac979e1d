#pragma once
// Float64 naive implementations of the engine's math, written from the formulas (not from the engine's
// code), for tests to compare against. Row-major throughout.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace rgbaq::testing {

using Vec = std::vector<double>;

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline Vec widen(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

// y[r, o] = sum_i x[r, i] w[o, i]
inline Vec matmul_nt(const Vec& x, int64_t rows, int64_t in, const Vec& w, int64_t out) {
  Vec y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}

inline Vec rms_norm(const Vec& x, int64_t rows, int64_t dim, const Vec& weight, double offset, double eps) {
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (int64_t i = 0; i < dim; ++i) ms += x[r * dim + i] * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ms / dim + eps);
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = x[r * dim + i] * inv * (weight[i] + offset);
  }
  return y;
}

inline Vec layer_norm(const Vec& x, int64_t rows, int64_t dim, double eps) {
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < dim; ++i) mean += x[r * dim + i];
    mean /= dim;
    for (int64_t i = 0; i < dim; ++i) var += (x[r * dim + i] - mean) * (x[r * dim + i] - mean);
    var /= dim;
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = (x[r * dim + i] - mean) / std::sqrt(var + eps);
  }
  return y;
}

inline double silu(double v) { return v / (1 + std::exp(-v)); }
inline double gelu_tanh(double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }

// Multi-head attention; query row i sees keys k < (i < causal_rows ? i + 1 : kv_rows).
inline Vec attention(const Vec& q, const Vec& k, const Vec& v, int64_t q_rows, int64_t kv_rows, int heads, int kv_heads,
                     int d, int64_t causal_rows, double scale) {
  Vec out(static_cast<size_t>(q_rows * heads * d), 0.0);
  const int group = heads / kv_heads;
  for (int h = 0; h < heads; ++h) {
    const int kvh = h / group;
    for (int64_t i = 0; i < q_rows; ++i) {
      const int64_t visible = i < causal_rows ? i + 1 : kv_rows;
      std::vector<double> s(static_cast<size_t>(visible));
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < visible; ++j) {
        double dot = 0;
        for (int c = 0; c < d; ++c) dot += q[(i * heads + h) * d + c] * k[(j * kv_heads + kvh) * d + c];
        s[j] = dot * scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - mx));
      for (int64_t j = 0; j < visible; ++j)
        for (int c = 0; c < d; ++c) out[(i * heads + h) * d + c] += s[j] / sum * v[(j * kv_heads + kvh) * d + c];
    }
  }
  return out;
}

// max |a - b| / max |b|: the error relative to the reference's scale.
inline double relative_error(const std::vector<float>& got, const Vec& want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

// The cosine of the angle between two vectors, in float64.
inline double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, x = 0, y = 0;
  for (size_t i = 0; i < a.size(); ++i) dot += double(a[i]) * b[i], x += double(a[i]) * a[i], y += double(b[i]) * b[i];
  return dot / std::sqrt(x * y);
}

// Peak signal-to-noise ratio of two 8-bit images in dB; identical images give infinity.
inline double psnr(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  double se = 0;
  for (size_t i = 0; i < a.size(); ++i) se += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  const double mse = se / a.size();
  return mse == 0 ? INFINITY : 10 * std::log10(255.0 * 255.0 / mse);
}

}  // namespace rgbaq::testing
