// One image end to end on the tiny model: determinism across runs and thread counts, sane pixels,
// progress and cancellation, and the errors a caller can cause.
#include "engine/session.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/tiny_model_fixture.h"

namespace rgbaq::engine {
namespace {

double pixel_stddev(const std::vector<uint8_t>& rgba, int channel) {
  double sum = 0, sq = 0;
  const size_t n = rgba.size() / 4;
  for (size_t i = 0; i < n; ++i) sum += rgba[i * 4 + channel], sq += double(rgba[i * 4 + channel]) * rgba[i * 4 + channel];
  const double mean = sum / n;
  return std::sqrt(sq / n - mean * mean);
}

TEST(Session, RenderIsDeterministicAcrossRunsAndThreadCounts) {
  const TinyModel model;
  const RenderRequest request{"a red fox, game asset", 7, {256, 256}};
  const auto one = Session::open(model.dir(), "cpu", 1)->render(request);
  auto three = Session::open(model.dir(), "cpu", 3);
  const auto a = three->render(request);
  const auto b = three->render(request);
  EXPECT_EQ(one.rgba, a.rgba);
  EXPECT_EQ(a.rgba, b.rgba);
  ASSERT_EQ(a.rgba.size(), 256u * 256 * 4);
  EXPECT_EQ(a.full_tokens, 28);
  EXPECT_EQ(a.text_tokens, 14);
  EXPECT_EQ(a.timings.step_s.size(), 8u);
  EXPECT_EQ(a.sigmas.size(), 9u);
  // Not flat: a constant image has a deviation of 0 and rounding alone gives under 1 level; every
  // channel of this render must vary by more than 8 levels (3% of the range).
  for (int c = 0; c < 4; ++c) EXPECT_GT(pixel_stddev(a.rgba, c), 8.0) << "channel " << c;
  // A different seed is a different image.
  EXPECT_NE(three->render({"a red fox, game asset", 8, {256, 256}}).rgba, a.rgba);
}

TEST(Session, NoNaNReachesTheDecoder) {
  const TinyModel model(DType::kF32, 2);
  auto session = Session::open(model.dir(), "cpu", 2);
  const auto prompt = session->tokenize("");
  const Tensor embeds = session->encode(prompt);
  for (float v : embeds.f32_span()) ASSERT_TRUE(std::isfinite(v));
  const auto r = session->render_embedded(embeds, {"", 1, {192, 128}}, {});
  EXPECT_EQ(r.rgba.size(), 192u * 128 * 4);
}

TEST(Session, ProgressAndCancellation) {
  const TinyModel model;
  auto session = Session::open(model.dir(), "cpu", 2);
  std::vector<int> seen;
  session->render({"x", 1, {128, 128}}, [&](int done, int total) {
    EXPECT_EQ(total, 8);
    seen.push_back(done);
    return true;
  });
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  int calls = 0;
  EXPECT_THROW(session->render({"x", 1, {128, 128}}, [&](int, int) { return ++calls < 3; }), RenderCanceled);
  EXPECT_EQ(calls, 3);
}

TEST(Session, ReopenedBackendRendersAsAFreshSession) {
  const TinyModel model;
  const RenderRequest request{"a red fox, game asset", 3, {128, 128}};
  const auto fresh = Session::open(model.dir(), "cpu", 1)->render(request).rgba;
  auto session = Session::open(model.dir(), "cpu", 1);
  session->render(request);
  session->reopen_backend();  // as a worker does after a device fault that poisons its session
  EXPECT_EQ(session->render(request).rgba, fresh);
  EXPECT_EQ(session->backend_name(), "cpu");
  EXPECT_EQ(session->device_description(), "cpu, 1 thread");
}

TEST(Session, CallerErrors) {
  const TinyModel model;
  auto session = Session::open(model.dir(), "cpu", 1);
  std::string long_prompt;
  for (int i = 0; i < 600; ++i) long_prompt += " word";
  EXPECT_THROW(session->render({long_prompt, 1, {128, 128}}), std::invalid_argument);
  EXPECT_THROW(session->render({"x", 1, {100, 100}}), std::invalid_argument);
  EXPECT_THROW(Session::open(model.dir(), "no-such-engine"), std::invalid_argument);
  EXPECT_THROW(Session::open("/nonexistent/model"), std::runtime_error);
}

}  // namespace
}  // namespace rgbaq::engine
