#pragma once
// Tests that run on every backend this build has: the names to parameterise over, and the backend's
// graphs on a model directory, or a GTEST_SKIP with the reason it cannot run here (cuda without a
// device). The cuda backend runs in fp32 mode unless a test asks for bf16, so the float64 tolerances
// hold for it too.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/backend_registry.h"
#include "engine/model/model_directory.h"

namespace rgbaq::testing {

inline std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& b : engine::backends()) names.push_back(b.name);
  return names;
}

// The backend's graphs, or nullptr after printing why it cannot run here (the caller GTEST_SKIPs).
inline std::unique_ptr<engine::Graphs> open_backend(const std::string& name, const std::filesystem::path& model_dir,
                                                    std::string* why_not,
                                                    engine::Precision precision = engine::Precision::kFp32) {
  engine::EngineOptions options;
  options.backend = name;
  options.threads = 2;
  options.precision = precision;
  for (const auto& b : engine::backends()) {
    if (b.name != name) continue;
    std::string why;
    if (!b.usable(options, &why)) {
      *why_not = name + " backend not usable here: " + why;
      return nullptr;
    }
    return b.open(engine::ModelDirectory::open(model_dir), options);
  }
  *why_not = name + " backend not in this build";
  return nullptr;
}

}  // namespace rgbaq::testing

// Opens backend NAME on DIR into VAR, or skips the test with the reason.
#define RGBAQ_OPEN_BACKEND_OR_SKIP(var, name, dir, ...)                          \
  std::string var##_why_not;                                                     \
  auto var = ::rgbaq::testing::open_backend(name, dir, &var##_why_not, ##__VA_ARGS__); \
  if (!var) GTEST_SKIP() << var##_why_not
