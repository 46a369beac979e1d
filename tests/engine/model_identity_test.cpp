// A model directory that changes is a different model at the next open: a weight file rewritten in
// place (same size, same first and last 64 KiB) changes the identity through its modification time.
#include "engine/model/model_identity.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/engine/tiny_model_fixture.h"

namespace rgbaq::engine {
namespace {

namespace fs = std::filesystem;

TEST(ModelIdentity, AWeightFileRewrittenInTheMiddleIsANewModel) {
  const TinyModel model;
  const std::string before = model_identity(model.dir());
  const std::string encoder_before = text_encoder_identity(model.dir());
  EXPECT_EQ(model_identity(model.dir()), before) << "stable while nothing changes";
  const fs::path weights = model.dir() / "transformer" / "diffusion_pytorch_model.safetensors";
  const auto size = fs::file_size(weights);
  ASSERT_GT(size, 4u * 64 * 1024) << "the middle is outside the sampled ends";
  {
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size / 2));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.write(&c, 1);
  }
  fs::last_write_time(weights, fs::last_write_time(weights) + std::chrono::seconds(1));
  EXPECT_EQ(fs::file_size(weights), size);
  EXPECT_NE(model_identity(model.dir()), before);
  EXPECT_EQ(text_encoder_identity(model.dir()), encoder_before) << "another component's change leaves the encoder's";
}

}  // namespace
}  // namespace rgbaq::engine
