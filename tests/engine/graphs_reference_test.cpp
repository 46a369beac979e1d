// The three graphs of every backend this build has, through the Graphs interface, against float64
// naive implementations written from the models' definitions (dit_reference.h,
// text_encoder_reference.h, vae_reference.h): the encoder on a real prompt, the DiT on a non-square
// grid and the smallest legal N with several steps on one text prefix, the VAE on a non-square grid.
// A backend that cannot run here (cuda without a device) is skipped with the reason.
#include <gtest/gtest.h>

#include <iostream>

#include "engine/model/weight_store.h"
#include "host/rope.h"
#include "tests/engine/backend_params.h"
#include "tests/engine/dit_reference.h"
#include "tests/engine/text_encoder_reference.h"
#include "tests/engine/tiny_model_fixture.h"
#include "tests/engine/vae_reference.h"
#include "tokenizer/prompt_template.h"
#include "tokenizer/tokenizer.h"

namespace rgbaq::engine {
namespace {

using testing::Vec;

class GraphsReference : public ::testing::TestWithParam<std::string> {};

TEST_P(GraphsReference, EncoderMatchesFloat64) {
  for (DType dtype : {DType::kBF16, DType::kF32}) {
    const TinyModel model(dtype);
    RGBAQ_OPEN_BACKEND_OR_SKIP(graphs, GetParam(), model.dir());
    const auto tk = tokenizer::Tokenizer::from_file(model.dir() / "tokenizer" / "tokenizer.json");
    const auto ids = tokenizer::PromptTemplate(tk).apply("a red fox in the snow, game asset, transparent background").ids;
    const Tensor hidden = graphs->encode(ids);
    const auto weights = WeightStore::open(model.dir() / "text_encoder");
    const auto config = load_text_encoder_config(model.dir() / "text_encoder" / "config.json");
    const double err = testing::relative_error(hidden.to_f32_vector(), testing::reference_encode(weights, config, ids));
    EXPECT_LT(err, 1e-4) << dtype_name(dtype);
    std::cout << GetParam() << " text encoder, " << dtype_name(dtype) << " weights: relative error " << err << "\n";
  }
}

TEST_P(GraphsReference, DitMatchesFloat64NonSquareAndSmallestGrid) {
  const TinyModel model(DType::kBF16);
  RGBAQ_OPEN_BACKEND_OR_SKIP(graphs, GetParam(), model.dir());
  const auto weights = WeightStore::open(model.dir() / "transformer");
  const auto config = load_dit_config(model.dir() / "transformer" / "config.json");
  const testing::DitReference ref{weights, config};
  for (const auto& [size, l] : {std::pair{host::ImageSize{192, 128}, int64_t{13}}, std::pair{host::ImageSize{128, 128}, int64_t{8}}}) {
    const Tensor txt = Tensor::from_f32({l, config.context_dim}, testing::random_floats(l * config.context_dim, 6, 3.0f));
    const auto rope = host::build_rope(host::RopeTables::from_formula(), static_cast<int>(l), size);
    graphs->begin_image(txt, rope);
    for (const auto& [t, seed] : {std::pair{0.704534f, 5u}, std::pair{1.0f, 7u}}) {  // two steps on one prefix
      const Tensor img = Tensor::from_f32({size.tokens(), 64}, testing::random_floats(size.tokens() * 64, seed, 1.7f));
      const auto got = graphs->step(img, t).to_f32_vector();
      const Vec want = ref.velocity(img.to_f32_vector(), txt.to_f32_vector(), l, size.tokens(), t, rope);
      const double err = testing::relative_error(got, want);
      EXPECT_LT(err, 1e-4) << size.to_string() << " t " << t;
      std::cout << GetParam() << " DiT at " << size.to_string() << ", L " << l << ", t " << t << ": relative error " << err << "\n";
    }
    graphs->end_image();
  }
}

TEST_P(GraphsReference, VaeMatchesFloat64NonSquare) {
  const TinyModel model(DType::kBF16);
  RGBAQ_OPEN_BACKEND_OR_SKIP(graphs, GetParam(), model.dir());
  const int h = 8, w = 12;  // 128 x 192 px
  const auto latents = testing::random_floats(static_cast<size_t>(h * w * 64), 21, 1.5f);
  const Tensor image = graphs->decode(Tensor::from_f32({h * w, 64}, latents), {16 * w, 16 * h});
  const auto weights = WeightStore::open(model.dir() / "vae");
  const Vec want = testing::VaeReference{weights}.decode(latents, h, w, load_vae_config(model.dir() / "vae" / "config.json"));
  const double err = testing::relative_error(image.to_f32_vector(), want);
  EXPECT_LT(err, 1e-4);
  std::cout << GetParam() << " VAE at a " << h << "x" << w << " grid: relative error " << err << "\n";
  int inside = 0;  // not trivially clipped: most values inside (-1, 1)
  for (double v : want) inside += std::abs(v) < 0.99;
  EXPECT_GT(inside, static_cast<int>(want.size() / 2));
}

TEST_P(GraphsReference, StepWithoutBeginImageIsAnError) {
  const TinyModel model(DType::kBF16);
  RGBAQ_OPEN_BACKEND_OR_SKIP(graphs, GetParam(), model.dir());
  const Tensor img = Tensor::zeros(DType::kF32, Shape{64, 64});
  EXPECT_THROW(graphs->step(img, 0.5f), std::logic_error);
  const Tensor txt = Tensor::zeros(DType::kF32, Shape{8, graphs->text_dim()});
  graphs->begin_image(txt, host::build_rope(host::RopeTables::from_formula(), 8, {128, 128}));
  EXPECT_THROW(graphs->step(Tensor::zeros(DType::kF32, Shape{128, 64}), 0.5f), std::invalid_argument);  // N of another size
  graphs->end_image();
}

INSTANTIATE_TEST_SUITE_P(Backends, GraphsReference, ::testing::ValuesIn(testing::backend_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace rgbaq::engine
