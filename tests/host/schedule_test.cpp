#include "host/schedule.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <random>

#include "tests/test_temp_dir.h"

namespace rgbaq::host {
namespace {

const double kContractSigmas[8] = {1.0, 0.978453, 0.95418, 0.926626, 0.89508, 0.845148, 0.704534, 0.414568};

TEST(Schedule, TurboSigmasAreTheContractsWithTerminalZero) {
  const auto s = make_schedule(turbo_scheduler_config(), 1024);
  ASSERT_EQ(s.steps(), 8);
  ASSERT_EQ(s.sigmas.size(), 9u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(s.sigmas[i], static_cast<float>(kContractSigmas[i])) << i;
  EXPECT_EQ(s.sigmas[8], 0.0f);
}

TEST(Schedule, TurboTimestepEqualsSigmaBitForBitAtAllEightSteps) {
  const auto s = make_schedule(turbo_scheduler_config(), 256);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(s.timesteps[i], static_cast<float>(s.sigmas[i] * 1000.0f)) << i;
    EXPECT_EQ(std::bit_cast<uint32_t>(s.dit_timestep(i)), std::bit_cast<uint32_t>(s.sigmas[i])) << i;
  }
}

TEST(Schedule, ShiftOneLeavesSigmasUnchangedAndGridIsSizeIndependent) {
  auto config = turbo_scheduler_config();
  config.shift = 1.0;
  EXPECT_EQ(make_schedule(config, 64).sigmas, make_schedule(config, 4096).sigmas);
  EXPECT_EQ(make_schedule(config, 64).sigmas[3], static_cast<float>(0.926626));
}

TEST(Schedule, StaticShiftMatchesFloat32Formula) {
  auto config = turbo_scheduler_config();
  config.shift = 3.0;
  const auto s = make_schedule(config, 256);
  for (int i = 0; i < 8; ++i) {
    const double sigma = static_cast<float>(kContractSigmas[i]);
    EXPECT_NEAR(s.sigmas[i], 3 * sigma / (1 + 2 * sigma), 2e-7) << i;
  }
}

TEST(Schedule, BaseModelFortyStepsAgainstFloat64) {
  SchedulerConfig config;  // no fixed grid: the base pipeline's linspace, dynamic shift, terminal 0.02
  config.use_dynamic_shifting = true;
  config.shift_terminal = 0.02;
  for (int n_tokens : {256, 1024, 4096}) {
    const auto s = make_schedule(config, n_tokens);
    ASSERT_EQ(s.steps(), 40);
    const double mu = n_tokens * (0.4 / 7936) + (0.5 - 256 * 0.4 / 7936);
    std::vector<double> ref(40);
    for (int i = 0; i < 40; ++i) {
      const double lin = 1.0 + i * ((1.0 / 40 - 1.0) / 39);
      ref[i] = std::exp(mu) / (std::exp(mu) + 1 / lin - 1);
    }
    const double scale = (1 - ref[39]) / 0.98;
    for (int i = 0; i < 40; ++i) {
      EXPECT_NEAR(s.sigmas[i], 1 - (1 - ref[i]) / scale, 2e-6) << "N " << n_tokens << " step " << i;
    }
    EXPECT_EQ(s.sigmas[0], 1.0f);
    EXPECT_NEAR(s.sigmas[39], 0.02, 1e-6);
    EXPECT_EQ(s.sigmas[40], 0.0f);
  }
}

TEST(Schedule, FixedGridRejectsAnotherStepCount) {
  EXPECT_THROW(make_schedule(turbo_scheduler_config(), 256, 20), std::invalid_argument);
  EXPECT_NO_THROW(make_schedule(turbo_scheduler_config(), 256, 8));
}

TEST(Schedule, EulerStepIsTwoFp32RoundingsWithoutFma) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist;
  std::vector<float> x(4096), v(4096);
  for (size_t i = 0; i < x.size(); ++i) x[i] = dist(rng), v[i] = dist(rng);
  auto y = x;
  const float sigma = 0.978453f, next = 0.95418f;
  euler_step(y, v, sigma, next);
  const float dt = next - sigma;
  int fma_differs = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float product = static_cast<float>(static_cast<double>(dt) * v[i]);  // exact in double, then rounded
    const float want = static_cast<float>(static_cast<double>(x[i]) + product);
    ASSERT_EQ(y[i], want) << i;
    fma_differs += std::fma(dt, v[i], x[i]) != want;
  }
  EXPECT_GT(fma_differs, 0) << "the data does not tell a fused step from an unfused one";
}

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(Schedule, LoadsSampleSigmasAndSchedulerConfigFromAModelDirectory) {
  TempDir dir;
  write(dir.path() / "model_index.json", R"({"_class_name": "X", "sample_sigmas": [1.0, 0.75, 0.5, 0.25]})");
  write(dir.path() / "scheduler" / "scheduler_config.json",
        R"({"shift": 1.0, "num_train_timesteps": 1000, "use_dynamic_shifting": false, "shift_terminal": null})");
  const auto s = make_schedule(load_scheduler_config(dir.path()), 256);
  EXPECT_EQ(s.sigmas, (std::vector<float>{1.0f, 0.75f, 0.5f, 0.25f, 0.0f}));
  EXPECT_EQ(s.timesteps, (std::vector<float>{1000.0f, 750.0f, 500.0f, 250.0f}));
}

TEST(Schedule, MalformedConfigNamesFileAndField) {
  TempDir dir;
  write(dir.path() / "scheduler" / "scheduler_config.json", R"({"shift": "three"})");
  try {
    load_scheduler_config(dir.path());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("scheduler_config.json: field \"shift\""), std::string::npos) << e.what();
  }
  write(dir.path() / "scheduler" / "scheduler_config.json", "{}");
  write(dir.path() / "model_index.json", R"({"sample_sigmas": [1.0, 1.5]})");
  EXPECT_THROW(load_scheduler_config(dir.path()), std::runtime_error);
  TempDir empty;
  EXPECT_THROW(load_scheduler_config(empty.path()), std::runtime_error);
}

}  // namespace
}  // namespace rgbaq::host
