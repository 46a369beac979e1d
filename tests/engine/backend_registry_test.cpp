// The backend registry: names, "auto", and the errors a caller meets (an unknown engine; cuda where it
// cannot run). Which of the two cuda cases applies depends on the machine, and the test says which.
#include "engine/backend_registry.h"

#include <gtest/gtest.h>

#include <iostream>
#ifdef __linux__
#include <sys/sysinfo.h>
#endif

#include "engine/session.h"
#include "tests/engine/tiny_model_fixture.h"

namespace rgbaq::engine {
namespace {

bool cuda_usable(std::string* why) {
  for (const auto& b : backends()) {
    if (b.name == "cuda") return b.usable({}, why);
  }
  *why = "not in this build";
  return false;
}

#ifdef __linux__
// The cpu's "device" is the machine: its memory as the kernel counts it (sysinfo(2), read here apart
// from /proc/meminfo, which the registry reads).
TEST(BackendRegistry, TheCpusMemoryIsTheMachines) {
  const BackendEntry& cpu = backends().front();
  EXPECT_FALSE(cpu.device_count) << "the cpu has no devices to choose";
  ASSERT_TRUE(cpu.device_memory);
  const DeviceMemory m = cpu.device_memory(0);
  struct sysinfo info {};
  ASSERT_EQ(sysinfo(&info), 0);
  const uint64_t total = static_cast<uint64_t>(info.totalram) * info.mem_unit;
  EXPECT_EQ(m.total, total / 1024 * 1024) << "MemTotal is in KiB";
  EXPECT_GT(m.free, 0u);
  EXPECT_LE(m.free, m.total);
}
#endif

TEST(BackendRegistry, CpuIsAlwaysFirstAndUsable) {
  ASSERT_FALSE(backends().empty());
  EXPECT_EQ(backends().front().name, "cpu");
  const auto names = usable_backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu"), names.end());
  EngineOptions cpu;
  cpu.backend = "cpu";
  EXPECT_EQ(resolve_backend(cpu).name, "cpu");
}

TEST(BackendRegistry, AutoPicksCudaOnlyWhenADeviceIsVisible) {
  std::string why;
  const bool cuda = cuda_usable(&why);
  std::cout << "cuda here: " << (cuda ? "usable" : "not usable (" + why + ")") << "\n";
  EXPECT_EQ(resolve_backend({}).name, cuda ? "cuda" : "cpu");
}

TEST(BackendRegistry, CudaWithoutADeviceSaysSo) {
  std::string why;
  if (cuda_usable(&why)) GTEST_SKIP() << "a CUDA device is visible here";
  EngineOptions o;
  o.backend = "cuda";
  try {
    resolve_backend(o);
    FAIL() << "resolved cuda with no device";
  } catch (const BackendUnavailable& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
    EXPECT_TRUE(msg.find("device") != std::string::npos || msg.find("not in this build") != std::string::npos) << msg;
    std::cout << "message: " << msg << "\n";
  }
  const TinyModel model;
  EXPECT_THROW(Session::open(model.dir(), o), BackendUnavailable);
}

TEST(BackendRegistry, UnknownEngineNamesTheChoices) {
  EngineOptions o;
  o.backend = "metal";
  try {
    resolve_backend(o);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"metal\" is not one of auto, cpu"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_precision("fp16"), std::invalid_argument);
  EXPECT_EQ(parse_precision("fp32"), Precision::kFp32);
}

}  // namespace
}  // namespace rgbaq::engine
