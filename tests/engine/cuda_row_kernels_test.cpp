// The VAE kernels that index by a grid of rows (kernels.cu's ROW_LOOP: im2col, the bias fill, nearest
// upsampling, DupUp3D) against naive host loops written from their definitions, bit for bit, at shapes
// the tiny model never makes: more rows than 65535 blocks of rows hold, so the grid loops (a block
// takes 256 / its width rows: 4 to 8 here; the real dims' im2col strips have 518,400 rows of 128 px,
// two a block, and loop too), and rows narrower than a warp. CTest label gpu; skips where no CUDA device is visible, which is
// every machine this was written on: it has not run yet.
#include <gtest/gtest.h>

#include "engine/cuda/kernels.h"
#include "engine/model/dtype.h"
#include "tests/engine/cuda_device_test.h"
#include "tests/engine/reference_math.h"

namespace rgbaq::engine::cuda {
namespace {

class CudaRowKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_DEVICE(0);
    check(cudaStreamCreate(&stream_), 0, "stream");
    arena_ = std::make_unique<DeviceArena>(0, 0);
  }
  void TearDown() override {
    arena_.reset();
    if (stream_) cudaStreamDestroy(stream_);
  }
  void wait() { check(cudaStreamSynchronize(stream_), 0, "the kernel"); }
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<DeviceArena> arena_;
};

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}

// 450 x 9 x 130 = 526,500 rows of 37 columns (4 a block: 131,625 blocks of rows), a window past the
// map's right edge, and a strip inside.
TEST_F(CudaRowKernels, Im2colOfAWindowIsTheNaiveOneBitForBit) {
  const int64_t c = 450, h = 130, w = 37;
  const auto x = testing::random_floats(c * h * w, 31, 1.0f);
  const std::vector<uint16_t> xb = to_bf16(x);
  DeviceBuffer dx = upload_values(*arena_, xb);
  struct Window {
    int64_t y0, y1, x0, x1;
  };
  for (const Window win : {Window{0, 130, 3, 40}, Window{50, 60, 0, 37}}) {
    const int64_t width = win.x1 - win.x0, cols = (win.y1 - win.y0) * width;
    std::vector<uint16_t> want(static_cast<size_t>(c * 9 * cols));
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t tap = 0; tap < 9; ++tap)
        for (int64_t py = 0; py < win.y1 - win.y0; ++py)
          for (int64_t px = 0; px < width; ++px) {
            const int64_t yy = win.y0 + py + tap / 3 - 1, xx = win.x0 + px + tap % 3 - 1;
            const bool inside = yy >= 0 && yy < h && xx >= 0 && xx < w;
            want[(ch * 9 + tap) * cols + py * width + px] = inside ? xb[(ch * h + yy) * w + xx] : 0;
          }
    DeviceBuffer col = arena_->allocate(want.size() * 2, "im2col");
    check(cudaMemset(col.get(), 0xff, col.bytes()), 0, "NaN fill");
    im2col3x3(dx.get(), ElementType::kBf16, c, h, w, win.y0, win.y1, win.x0, win.x1, col.get(), stream_);
    wait();
    EXPECT_EQ(download<uint16_t>(col, want.size()), want) << "window rows " << win.y0 << ".." << win.y1;
  }
}

// 2200 x 240 = 528,000 output rows of 18 columns (8 a block: 66,000 blocks of rows).
TEST_F(CudaRowKernels, UpsamplingIsTheNaiveOneBitForBit) {
  const int64_t c = 2200, h = 120, w = 9;
  const auto x = testing::random_floats(c * h * w, 32, 1.0f);
  DeviceBuffer dx = upload_values(*arena_, x);
  std::vector<float> want(static_cast<size_t>(c * 4 * h * w));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t yy = 0; yy < 2 * h; ++yy)
      for (int64_t xx = 0; xx < 2 * w; ++xx) want[(ch * 2 * h + yy) * 2 * w + xx] = x[(ch * h + yy / 2) * w + xx / 2];
  DeviceBuffer out = arena_->allocate(want.size() * 4, "upsampled"), out_bf16 = arena_->allocate(want.size() * 2, "upsampled");
  upsample2x(dx.as<float>(), c, h, w, out.get(), ElementType::kF32, stream_);
  upsample2x(dx.as<float>(), c, h, w, out_bf16.get(), ElementType::kBf16, stream_);
  wait();
  EXPECT_EQ(download<float>(out, want.size()), want);
  EXPECT_EQ(download<uint16_t>(out_bf16, want.size()), to_bf16(want));
}

// DupUp3D for the first frame, out(o, Y, X) += in[c' / r, Y/2, X/2], c' = ((o ft + ft - 1) 2 + Y % 2) 2
// + X % 2, r = out ft 4 / in: 2200 output channels from 4400 at ft 2 (r 4) and ft 1 (r 2), 528,000
// rows of 14.
TEST_F(CudaRowKernels, DupUpAddsTheNaiveSumBitForBit) {
  const int64_t out_c = 2200, in_c = 4400, h = 120, w = 7;
  const auto x = testing::random_floats(in_c * h * w, 33, 1.0f), y0 = testing::random_floats(out_c * 4 * h * w, 34, 1.0f);
  DeviceBuffer dx = upload_values(*arena_, x);
  for (int ft : {2, 1}) {
    const int64_t r = out_c * ft * 4 / in_c;
    std::vector<float> want = y0;
    for (int64_t o = 0; o < out_c; ++o)
      for (int64_t yy = 0; yy < 2 * h; ++yy)
        for (int64_t xx = 0; xx < 2 * w; ++xx) {
          const int64_t c = ((o * ft + ft - 1) * 2 + yy % 2) * 2 + xx % 2;
          want[(o * 2 * h + yy) * 2 * w + xx] += x[(c / r * h + yy / 2) * w + xx / 2];
        }
    DeviceBuffer dy = upload_values(*arena_, y0);
    add_dup_up(dy.as<float>(), out_c, 2 * h, 2 * w, dx.as<float>(), in_c, ft, stream_);
    wait();
    EXPECT_EQ(download<float>(dy, want.size()), want) << "ft " << ft;
  }
}

// 530,000 channels of 5 pixels, a row each (8 a block: 66,250 blocks of rows).
TEST_F(CudaRowKernels, TheBiasFillWritesEachChannelsBias) {
  const int64_t c = 530000, pixels = 5;
  const auto bias = testing::random_floats(c, 35, 1.0f);
  DeviceBuffer db = upload_values(*arena_, bias), out = arena_->allocate(c * pixels * 4, "bias");
  fill_bias(out.as<float>(), db.as<float>(), c, pixels, stream_);
  wait();
  std::vector<float> want(static_cast<size_t>(c * pixels));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t p = 0; p < pixels; ++p) want[ch * pixels + p] = bias[ch];
  EXPECT_EQ(download<float>(out, want.size()), want);
}

}  // namespace
}  // namespace rgbaq::engine::cuda
