// The cuda backend against the cpu backend on the tiny model (CTest label gpu). Each test skips with
// the reason when no CUDA device is visible or the build has no CUDA, which is every machine this was
// written on: none of these has run yet.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "engine/device_fault.h"
#include "engine/session.h"
#include "tests/engine/backend_params.h"
#include "tests/engine/reference_math.h"
#include "tests/engine/tiny_model_fixture.h"
#include "tokenizer/prompt_template.h"
#include "tokenizer/tokenizer.h"

namespace rgbaq::engine {
namespace {

struct Compared {
  double relative = 0, cosine = 0;
};

Compared compare(const std::vector<float>& got, const std::vector<float>& want) {
  Compared c;
  c.relative = testing::relative_error(got, testing::widen(want));
  c.cosine = testing::cosine(got, want);
  return c;
}

// Every graph on cuda at `precision` against cpu; returns the worst of the three.
Compared compare_graphs(Precision precision) {
  const TinyModel model(DType::kBF16);
  std::string why;
  auto cuda = testing::open_backend("cuda", model.dir(), &why, precision);
  if (!cuda) return {-1, -1};
  auto cpu = testing::open_backend("cpu", model.dir(), &why);
  const auto tk = tokenizer::Tokenizer::from_file(model.dir() / "tokenizer" / "tokenizer.json");
  const auto ids = tokenizer::PromptTemplate(tk).apply("a red fox in the snow, game asset").ids;
  Compared worst{0, 1};
  auto note = [&](const char* what, const Compared& c) {
    std::cout << "cuda " << precision_name(precision) << " " << what << " vs cpu: relative " << c.relative << ", cosine " << c.cosine << "\n";
    worst.relative = std::max(worst.relative, c.relative);
    worst.cosine = std::min(worst.cosine, c.cosine);
  };
  note("encode", compare(cuda->encode(ids).to_f32_vector(), cpu->encode(ids).to_f32_vector()));
  const host::ImageSize size{192, 128};
  const int64_t l = 13;
  const Tensor txt = Tensor::from_f32({l, cpu->text_dim()}, testing::random_floats(l * cpu->text_dim(), 6, 3.0f));
  const Tensor img = Tensor::from_f32({size.tokens(), 64}, testing::random_floats(size.tokens() * 64, 5, 1.7f));
  const auto rope = host::build_rope(host::RopeTables::from_formula(), static_cast<int>(l), size);
  note("velocity", compare(cuda->velocity({&img, &txt, 0.704534f, &rope}).to_f32_vector(),
                           cpu->velocity({&img, &txt, 0.704534f, &rope}).to_f32_vector()));
  const Tensor latents = Tensor::from_f32({size.tokens(), 64}, testing::random_floats(size.tokens() * 64, 21, 1.5f));
  note("decode", compare(cuda->decode(latents, size).to_f32_vector(), cpu->decode(latents, size).to_f32_vector()));
  return worst;
}

#define SKIP_WITHOUT_CUDA(model_dir)                                                        \
  do {                                                                                      \
    std::string why;                                                                        \
    if (!testing::open_backend("cuda", model_dir, &why)) GTEST_SKIP() << why;               \
  } while (0)

TEST(CudaGraphs, Fp32ModeMatchesCpuWithin1e5) {
  const TinyModel probe;
  SKIP_WITHOUT_CUDA(probe.dir());
  const Compared c = compare_graphs(Precision::kFp32);
  EXPECT_LE(c.relative, 1e-5);
}

TEST(CudaGraphs, Bf16ModeWithin2e2AndCosine0_9999) {
  const TinyModel probe;
  SKIP_WITHOUT_CUDA(probe.dir());
  const Compared c = compare_graphs(Precision::kBf16);
  EXPECT_LE(c.relative, 2e-2);
  EXPECT_GE(c.cosine, 0.9999);
}

// Odd sizes everywhere: 9 x 11 grid (99 image tokens, odd map widths and pixel counts in the VAE's
// bf16 GEMMs), L 13 (odd key counts). cuBLASLt must find algorithms at these leading dimensions.
TEST(CudaGraphs, OddGridAndTextLengthMatchCpuInBf16) {
  const TinyModel model(DType::kBF16);
  std::string why;
  auto cuda = testing::open_backend("cuda", model.dir(), &why, Precision::kBf16);
  if (!cuda) GTEST_SKIP() << why;
  auto cpu = testing::open_backend("cpu", model.dir(), &why);
  const host::ImageSize size{176, 144};  // width x height: grid 11 x 9
  const int64_t l = 13;
  const Tensor txt = Tensor::from_f32({l, cpu->text_dim()}, testing::random_floats(l * cpu->text_dim(), 8, 3.0f));
  const Tensor img = Tensor::from_f32({size.tokens(), 64}, testing::random_floats(size.tokens() * 64, 9, 1.7f));
  const auto rope = host::build_rope(host::RopeTables::from_formula(), static_cast<int>(l), size);
  const Compared v = compare(cuda->velocity({&img, &txt, 0.5f, &rope}).to_f32_vector(),
                             cpu->velocity({&img, &txt, 0.5f, &rope}).to_f32_vector());
  const Compared d = compare(cuda->decode(img, size).to_f32_vector(), cpu->decode(img, size).to_f32_vector());
  std::cout << "odd sizes, bf16: velocity relative " << v.relative << " cosine " << v.cosine << "; decode relative "
            << d.relative << " cosine " << d.cosine << "\n";
  EXPECT_LE(std::max(v.relative, d.relative), 2e-2);
  EXPECT_GE(std::min(v.cosine, d.cosine), 0.9999);
}

TEST(CudaGraphs, WholeRenderBf16Within30DbOfCpuAndDeterministic) {
  const TinyModel model;
  SKIP_WITHOUT_CUDA(model.dir());
  EngineOptions cuda;
  cuda.backend = "cuda";
  const RenderRequest request{"a red fox, game asset", 7, {256, 256}};
  auto gpu = Session::open(model.dir(), cuda);
  const auto a = gpu->render(request);
  const auto b = gpu->render(request);
  EXPECT_EQ(a.rgba, b.rgba) << "same seed, same device: the same bytes";
  const auto want = Session::open(model.dir(), "cpu", 2)->render(request);
  const double db = testing::psnr(a.rgba, want.rgba);
  std::cout << "cuda bf16 render vs cpu: " << db << " dB PSNR\n";
  EXPECT_GE(db, 30.0);
}

TEST(CudaGraphs, StreamedBlocksEqualResident) {
  const TinyModel model;
  SKIP_WITHOUT_CUDA(model.dir());
  EngineOptions resident, streamed;
  resident.backend = streamed.backend = "cuda";
  streamed.force_block_streaming = true;
  const RenderRequest request{"a red fox, game asset", 3, {128, 192}};
  const auto a = Session::open(model.dir(), resident)->render(request);
  auto s = Session::open(model.dir(), streamed);
  EXPECT_NE(s->device_description().find("streamed"), std::string::npos) << s->device_description();
  EXPECT_EQ(s->render(request).rgba, a.rgba);
}

TEST(CudaGraphs, TooLittleMemoryIsAClearError) {
  const TinyModel model;
  SKIP_WITHOUT_CUDA(model.dir());
  EngineOptions tiny;
  tiny.backend = "cuda";
  tiny.gpu_memory_gib = 1.0 / 1024;  // 1 MiB: not even the GEMM workspace fits
  try {
    Session::open(model.dir(), tiny);
    FAIL() << "opened in 1 MiB";
  } catch (const DeviceFault& e) {  // the daemon gives a job back for it, and refuses a start
    EXPECT_EQ(e.kind(), DeviceFaultKind::kOutOfMemory);
    const std::string m = e.what();
    EXPECT_NE(m.find("CUDA device"), std::string::npos) << m;
    EXPECT_NE(m.find("--gpu-memory"), std::string::npos) << m;
  }
}

// What a daemon's worker does at start: a session that opens in its share of the device but cannot
// hold the largest render's workspace (the tiny model's VAE maps alone take ~356 MiB at 1024x1024) fails
// there, as out of memory, and still renders the sizes that fit.
TEST(CudaGraphs, ReservingTheLargestRenderFailsWhereItDoesNotFit) {
  const TinyModel model;
  SKIP_WITHOUT_CUDA(model.dir());
  EngineOptions small;
  small.backend = "cuda";
  small.gpu_memory_gib = 128.0 / 1024;
  auto session = Session::open(model.dir(), small);
  try {
    session->graphs().reserve(512, 4096);
    FAIL() << "reserved 1024x1024 in 128 MiB";
  } catch (const DeviceFault& e) {
    EXPECT_EQ(e.kind(), DeviceFaultKind::kOutOfMemory) << e.what();
  }
  EXPECT_EQ(session->render({"a red fox, game asset", 3, {128, 128}}).rgba.size(), size_t{128} * 128 * 4);
  EngineOptions ample;
  ample.backend = "cuda";
  auto roomy = Session::open(model.dir(), ample);
  roomy->graphs().reserve(512, 4096);  // all the device has free: fits
  EXPECT_EQ(roomy->render({"a red fox, game asset", 3, {1024, 1024}}).rgba.size(), size_t{1024} * 1024 * 4);
}

}  // namespace
}  // namespace rgbaq::engine
