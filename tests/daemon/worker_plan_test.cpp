// Which render workers a daemon starts for its flags (--workers on the cpu, --devices on cuda, a device
// listed twice), and how a device's memory is shared out and checked: against plans and messages worked
// out by hand.
#include "daemon/worker/worker_plan.h"

#include <gtest/gtest.h>

#include "common/arguments.h"

namespace rgbaq::daemon {
namespace {

DaemonConfig config(std::vector<std::string> args) {
  args.insert(args.begin(), {"--model", "/m", "--socket", "/tmp/x.sock", "--data-dir", "/tmp/d"});
  return parse_daemon_config(args);
}

std::string usage_error(const DaemonConfig& c, const std::string& backend, int visible) {
  try {
    plan_workers(c, backend, visible, 8);
  } catch (const common::UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

constexpr uint64_t kMib = uint64_t{1} << 20, kGib = uint64_t{1} << 30;

TEST(WorkerPlan, CpuWorkersShareTheThreadsAndOneLoraCache) {
  const auto plans = plan_workers(config({"--workers", "3"}), "cpu", 0, 8);
  ASSERT_EQ(plans.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(plans[i].index, i);
    EXPECT_EQ(plans[i].device, "cpu");
    EXPECT_EQ(plans[i].options.backend, "cpu");
    EXPECT_EQ(plans[i].options.threads, 2) << "8 hardware threads over 3 workers, rounded down";
    EXPECT_EQ(plans[i].options.lora_cache, plans[0].options.lora_cache) << "one device, one LoRA cache";
  }
  ASSERT_TRUE(plans[0].options.lora_cache);
  EXPECT_EQ(plan_workers(config({"--workers", "3", "--threads", "1"}), "cpu", 0, 8)[2].options.threads, 1);
  EXPECT_EQ(plan_workers(config({}), "cpu", 0, 8)[0].options.threads, 0) << "one worker: all the threads, as before";
  EXPECT_EQ(plan_workers(config({"--workers", "16"}), "cpu", 0, 8)[0].options.threads, 1);
  // --device is a cuda knob the cpu ignores (as it always has); --devices is not.
  EXPECT_EQ(plan_workers(config({"--device", "1"}), "cpu", 0, 8).size(), 1u);
  EXPECT_NE(usage_error(config({"--devices", "0,1"}), "cpu", 0).find("--devices 0,1 is for the cuda engine"), std::string::npos);
  EXPECT_NE(usage_error(config({"--devices", "0,1"}), "cpu", 0).find("(--engine auto found no CUDA device)"), std::string::npos);
}

TEST(WorkerPlan, CudaWorkersOnePerListedDeviceWithALoraCacheEach) {
  const auto all = plan_workers(config({}), "cuda", 3, 8);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].device, "cuda:2");
  EXPECT_EQ(all[2].options.device, 2);
  EXPECT_NE(all[0].options.lora_cache, all[1].options.lora_cache);
  const auto twice = plan_workers(config({"--devices", "0,0,2"}), "cuda", 3, 8);
  ASSERT_EQ(twice.size(), 3u);
  EXPECT_EQ(twice[0].device, "cuda:0");
  EXPECT_EQ(twice[1].device, "cuda:0");
  EXPECT_EQ(twice[2].device, "cuda:2");
  EXPECT_EQ(twice[0].options.lora_cache, twice[1].options.lora_cache) << "two sessions on one device share its cache";
  EXPECT_NE(twice[0].options.lora_cache, twice[2].options.lora_cache);
  const auto one = plan_workers(config({"--device", "1"}), "cuda", 3, 8);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].device, "cuda:1");
  EXPECT_EQ(usage_error(config({"--devices", "0,4"}), "cuda", 2), "--devices 0,4: device 4 is not visible (2 CUDA devices: 0..1)");
  EXPECT_EQ(usage_error(config({"--device", "1"}), "cuda", 1), "--device: device 1 is not visible (1 CUDA device: 0..0)");
  EXPECT_NE(usage_error(config({"--workers", "2"}), "cuda", 2).find("--workers is for the cpu engine"), std::string::npos);
}

std::string does_not_fit(std::vector<WorkerPlan> plans, uint64_t cpu_bytes, engine::DeviceMemory memory) {
  try {
    share_device_memory(plans, cpu_bytes, [&](const WorkerPlan&) { return memory; });
  } catch (const MemoryDoesNotFit& e) {
    return e.what();
  }
  return "(fits)";
}

TEST(WorkerPlan, CpuSessionsMustFitTheMachinesAvailableMemory) {
  const auto two = plan_workers(config({"--workers", "2"}), "cpu", 0, 8);
  // 2 x 300 MiB = 600 MiB = 0.5859 GiB; 300 MiB = 0.2930 GiB; 500 MiB = 0.4883 GiB; 1000 MiB = 0.9766 GiB.
  EXPECT_EQ(does_not_fit(two, 300 * kMib, {500 * kMib, 1000 * kMib}),
            "cpu: 2 workers need 0.59 GiB (0.29 GiB each: weights copied and work buffers at 1024x1024) and the "
            "machine has 0.49 GiB available of 0.98 GiB; run fewer --workers");
  EXPECT_EQ(does_not_fit(two, 250 * kMib, {500 * kMib, 1000 * kMib}), "(fits)") << "exactly the available memory";
  EXPECT_EQ(does_not_fit(plan_workers(config({}), "cpu", 0, 8), 300 * kMib, {500 * kMib, 1000 * kMib}), "(fits)");
}

TEST(WorkerPlan, ADevicesMemoryIsSharedBetweenItsSessions) {
  auto plans = plan_workers(config({"--devices", "0,0,1"}), "cuda", 2, 8);
  share_device_memory(plans, 0, [](const WorkerPlan& p) {
    return p.options.device == 0 ? engine::DeviceMemory{10 * kGib, 16 * kGib} : engine::DeviceMemory{20 * kGib, 24 * kGib};
  });
  EXPECT_DOUBLE_EQ(plans[0].options.gpu_memory_gib, 5.0) << "10 GiB free, two sessions";
  EXPECT_DOUBLE_EQ(plans[1].options.gpu_memory_gib, 5.0);
  EXPECT_DOUBLE_EQ(plans[2].options.gpu_memory_gib, 0.0) << "alone on its device: all it has, as before";
  EXPECT_EQ(does_not_fit(plan_workers(config({"--devices", "0,0", "--gpu-memory", "6"}), "cuda", 1, 8), 0,
                         {10 * kGib, 16 * kGib}),
            "cuda:0: 2 workers of --gpu-memory 6.00 GiB need 12.00 GiB and the device has 10.00 GiB free of 16.00 GiB; "
            "list it fewer times in --devices or lower --gpu-memory");
  EXPECT_EQ(does_not_fit(plan_workers(config({"--devices", "0,0", "--gpu-memory", "5"}), "cuda", 1, 8), 0,
                         {10 * kGib, 16 * kGib}),
            "(fits)");
}

}  // namespace
}  // namespace rgbaq::daemon
