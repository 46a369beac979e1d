// rgbaqd's engine flags: --engine auto|cpu|cuda (default auto), --device, --devices, --workers,
// --precision, --gpu-memory, and their config-file keys; bad values are usage errors that name the flag.
// And --max-deaths, the queue's bound on deaths in a row.
#include "daemon/base/daemon_config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/arguments.h"
#include "tests/daemon/daemon_config_parse.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::daemon {
namespace {

using config_test::parse;
using config_test::usage_error;

TEST(DaemonConfig, EngineFlags) {
  const DaemonConfig d = parse({});
  EXPECT_EQ(d.engine, "auto");
  EXPECT_EQ(d.engine_options().backend, "auto");
  EXPECT_EQ(d.engine_options().precision, engine::Precision::kBf16);
  EXPECT_EQ(d.engine_options().gpu_memory_gib, 0.0);
  const DaemonConfig c = parse({"--engine", "cuda", "--device", "1", "--precision", "fp32", "--gpu-memory", "22.5"});
  const auto o = c.engine_options();
  EXPECT_EQ(o.backend, "cuda");
  EXPECT_EQ(o.device, 1);
  EXPECT_EQ(o.precision, engine::Precision::kFp32);
  EXPECT_EQ(o.gpu_memory_gib, 22.5);
  EXPECT_NE(usage_error({"--engine", "metal"}).find("--engine \"metal\" is not one of auto, cpu, cuda"), std::string::npos);
  EXPECT_NE(usage_error({"--precision", "fp16"}).find("--precision"), std::string::npos);
  EXPECT_NE(usage_error({"--gpu-memory", "lots"}).find("--gpu-memory \"lots\""), std::string::npos);
  EXPECT_NE(usage_error({"--gpu-memory", "-1"}).find("--gpu-memory"), std::string::npos);
  EXPECT_FALSE(d.engine_options().random_weights.has_value());
  EXPECT_EQ(parse({"--engine", "cuda", "--random-weights", "18446744073709551615"}).engine_options().random_weights,
            std::optional<uint64_t>(18446744073709551615ull));
  EXPECT_NE(usage_error({"--random-weights", "3"}).find("--random-weights takes --engine cuda"), std::string::npos);
  EXPECT_NE(usage_error({"--engine", "cpu", "--random-weights", "3"}).find("not \"cpu\""), std::string::npos);
  EXPECT_NE(usage_error({"--engine", "cuda", "--random-weights", "x"}).find("--random-weights \"x\""), std::string::npos);
  // The weight formats (issue 22): fp8 is cuda's; int8 widened unless kept.
  EXPECT_EQ(d.engine_options().gpu_int8, engine::GpuInt8::kWiden);
  const auto fp8 = parse({"--engine", "cuda", "--precision", "fp8", "--gpu-int8", "keep"}).engine_options();
  EXPECT_EQ(fp8.precision, engine::Precision::kFp8);
  EXPECT_EQ(fp8.gpu_int8, engine::GpuInt8::kKeep);
  EXPECT_EQ(engine::embedding_precision_mark(fp8), "+fp8");
  EXPECT_EQ(engine::embedding_precision_mark(o), "");
  // A ConvRot text encoder: W8A8 on the cpu and with --gpu-int8 w8a8; widened on cuda otherwise.
  EXPECT_EQ(engine::embedding_precision_mark(o, "cpu", true), "");
  EXPECT_EQ(engine::embedding_precision_mark(o, "cuda", true), "+convrot-widened");
  EXPECT_EQ(engine::embedding_precision_mark(o, "cuda", false), "");
  EXPECT_EQ(engine::embedding_precision_mark(parse({"--engine", "cuda", "--gpu-int8", "w8a8"}).engine_options(), "cuda", true), "");
  EXPECT_NE(usage_error({"--engine", "cpu", "--precision", "fp8"}).find("--precision fp8 is the cuda engine's"), std::string::npos);
  EXPECT_NE(usage_error({"--gpu-int8", "narrow"}).find("--gpu-int8: \"narrow\" is not one of widen, keep"), std::string::npos);
  // The tiled VAE (issue 21): off unless asked for.
  EXPECT_FALSE(d.engine_options().vae_tiles);
  EXPECT_TRUE(parse({"--engine", "cuda", "--vae-tiles", "on"}).engine_options().vae_tiles);
  EXPECT_FALSE(parse({"--vae-tiles", "off"}).engine_options().vae_tiles);
  EXPECT_FALSE(d.engine_options().fused_blocks);
  EXPECT_TRUE(parse({"--engine", "cuda", "--fused-blocks", "on"}).engine_options().fused_blocks);
  EXPECT_NE(usage_error({"--fused-blocks", "yes"}).find("--fused-blocks: \"yes\" is not one of on, off"), std::string::npos);
  EXPECT_NE(usage_error({"--vae-tiles", "yes"}).find("--vae-tiles: \"yes\" is not one of on, off"), std::string::npos);
  // The fused attention kernel (issue 21): the GEMM path unless asked for.
  EXPECT_EQ(d.engine_options().attention, engine::AttentionKernel::kGemm);
  EXPECT_EQ(parse({"--engine", "cuda", "--attention", "fused"}).engine_options().attention, engine::AttentionKernel::kFused);
  EXPECT_NE(usage_error({"--attention", "flash"}).find("--attention: \"flash\" is not one of gemm, fused"), std::string::npos);
}

TEST(DaemonConfig, EngineKeysInTheConfigFile) {
  TempDir dir;
  const auto file = dir.path() / "rgbaqd.json";
  std::ofstream(file) << R"({"engine": "cpu", "device": 0, "precision": "fp32", "gpu_memory_gib": 8, "gpu_int8": "keep"})";
  const auto o = parse({"--config", file.string()}).engine_options();
  EXPECT_EQ(o.gpu_int8, engine::GpuInt8::kKeep);
  EXPECT_EQ(o.backend, "cpu");
  EXPECT_EQ(o.precision, engine::Precision::kFp32);
  EXPECT_EQ(o.gpu_memory_gib, 8.0);
  std::ofstream(file) << R"({"attention": "fused"})";
  EXPECT_EQ(parse({"--config", file.string()}).engine_options().attention, engine::AttentionKernel::kFused);
  EXPECT_EQ(parse({"--config", file.string(), "--attention", "gemm"}).engine_options().attention,
            engine::AttentionKernel::kGemm);  // the flag wins
  std::ofstream(file) << R"({"attention": "fast"})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("--attention: \"fast\" is not one of gemm, fused"), std::string::npos);
  std::ofstream(file) << R"({"vae_tiles": true})";
  EXPECT_TRUE(parse({"--config", file.string()}).engine_options().vae_tiles);
  EXPECT_FALSE(parse({"--config", file.string(), "--vae-tiles", "off"}).engine_options().vae_tiles);  // the flag wins
  std::ofstream(file) << R"({"vae_tiles": "on"})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("\"vae_tiles\" must be true or false"), std::string::npos);
  std::ofstream(file) << R"({"fused_blocks": true})";
  EXPECT_TRUE(parse({"--config", file.string()}).engine_options().fused_blocks);
  EXPECT_FALSE(parse({"--config", file.string(), "--fused-blocks", "off"}).engine_options().fused_blocks);  // the flag wins
  std::ofstream(file) << R"({"fused_blocks": 1})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("\"fused_blocks\" must be true or false"), std::string::npos);
  std::ofstream(file) << R"({"gpu_memory_gib": "big"})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("\"gpu_memory_gib\" must be a non-negative number"), std::string::npos);
}

TEST(DaemonConfig, LoraFoldersFromFlagsRepeatedOrTheConfigFile) {
  TempDir dir;
  for (const char* d : {"a", "b", "c"}) std::filesystem::create_directories(dir.path() / d);
  const auto c = parse({"--lora-dir", (dir.path() / "a").string(), "--lora-dir", (dir.path() / "b").string(),
                        "--lora-cache-mb", "64"});
  EXPECT_EQ(c.lora_dirs, (std::vector<std::filesystem::path>{dir.path() / "a", dir.path() / "b"}));
  EXPECT_EQ(c.engine_options().lora_cache_bytes, size_t{64} << 20);
  const auto file = dir.path() / "rgbaqd.json";
  std::ofstream(file) << R"({"lora_dirs": ["c", "a"], "lora_cache_mb": 8})";  // relative to the file
  const auto f = parse({"--config", file.string()});
  EXPECT_EQ(f.lora_dirs, (std::vector<std::filesystem::path>{dir.path() / "c", dir.path() / "a"}));
  EXPECT_EQ(f.lora_cache_mb, 8u);
  EXPECT_EQ(parse({"--config", file.string(), "--lora-dir", (dir.path() / "b").string()}).lora_dirs,
            std::vector<std::filesystem::path>{dir.path() / "b"}) << "flags win over the file's list";
  EXPECT_NE(usage_error({"--lora-dir", (dir.path() / "none").string()}).find("is not a folder"), std::string::npos);
  std::ofstream(file) << R"({"lora_dirs": "c"})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("\"lora_dirs\" must be a list of folders"), std::string::npos);
}

TEST(DaemonConfig, DevicesAndWorkersFlags) {
  const DaemonConfig d = parse({});
  EXPECT_EQ(d.devices, "");
  EXPECT_FALSE(d.device_set);
  EXPECT_EQ(d.workers, 1);
  EXPECT_EQ(parse_device_list(""), std::nullopt);
  EXPECT_EQ(parse_device_list("all"), std::nullopt);
  EXPECT_EQ(parse_device_list("0,2,3"), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(parse_device_list("0,0"), (std::vector<int>{0, 0})) << "two sessions on one device";
  EXPECT_EQ(parse({"--devices", "1,0"}).devices, "1,0");
  EXPECT_EQ(parse({"--workers", "4"}).workers, 4);
  const DaemonConfig one = parse({"--device", "2"});
  EXPECT_TRUE(one.device_set);
  EXPECT_EQ(one.device, 2);
  EXPECT_NE(usage_error({"--devices", "0,x"}).find("--devices \"0,x\": \"x\" is not a device ordinal"), std::string::npos);
  EXPECT_NE(usage_error({"--devices", "0,,1"}).find("\"\" is not a device ordinal"), std::string::npos);
  EXPECT_NE(usage_error({"--devices", "-1"}).find("is not a device ordinal"), std::string::npos);
  EXPECT_NE(usage_error({"--device", "0", "--devices", "1"}).find("--device and --devices both name devices"), std::string::npos);
  EXPECT_NE(usage_error({"--workers", "0"}).find("--workers must be from 1 to 64"), std::string::npos);
  EXPECT_NE(usage_error({"--workers", "65"}).find("--workers must be from 1 to 64"), std::string::npos);
  std::string many = "0";
  for (int i = 1; i < 65; ++i) many += ",0";
  EXPECT_NE(usage_error({"--devices", many}).find("lists 65 devices; at most 64"), std::string::npos);
}

TEST(DaemonConfig, DevicesAndWorkersInTheConfigFile) {
  TempDir dir;
  const auto file = dir.path() / "rgbaqd.json";
  std::ofstream(file) << R"({"devices": [0, 0, 1], "workers": 3})";
  const DaemonConfig c = parse({"--config", file.string()});
  EXPECT_EQ(c.devices, "0,0,1");
  EXPECT_EQ(c.workers, 3);
  EXPECT_EQ(parse({"--config", file.string(), "--device", "1"}).devices, "") << "the flag wins over the file's list";
  std::ofstream(file) << R"({"devices": "all"})";
  EXPECT_EQ(parse({"--config", file.string()}).devices, "all");
  std::ofstream(file) << R"({"devices": "0,1", "device": 1})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("\"device\" and \"devices\" both name devices"), std::string::npos);
  std::ofstream(file) << R"({"devices": [0, "one"]})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("\"devices\" must be \"all\", \"0,2,...\" or a list"), std::string::npos);
  std::ofstream(file) << R"({"devices": "two"})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("\"devices\": --devices \"two\""), std::string::npos);
}

// The embeddings' disk budget (issue 26, item 14): the flag or the config key in MiB; by default 10 GiB
// or 5% of the data directory's file system, whichever is smaller.
// --max-deaths (issue 42): the daemon's deaths in a row with one job in hand, no other job finishing in
// between, before that job fails; for the queue store (StoreOptions::max_deaths), flag over file.
TEST(DaemonConfig, MaxDeathsFromTheFlagOrTheConfigFile) {
  EXPECT_EQ(parse({}).store_options().max_deaths, 5);
  EXPECT_EQ(parse({"--max-deaths", "8"}).store_options().max_deaths, 8);
  EXPECT_NE(usage_error({"--max-deaths", "1"}).find("--max-deaths must be at least 2: a single death is no job's fault"),
            std::string::npos);
  TempDir dir;
  const auto file = dir.path() / "rgbaqd.json";
  std::ofstream(file) << R"({"max_deaths": 3, "max_interruptions": 50})";
  const auto o = parse({"--config", file.string()}).store_options();
  EXPECT_EQ(o.max_deaths, 3);
  EXPECT_EQ(o.max_interruptions, 50);
  EXPECT_EQ(parse({"--config", file.string(), "--max-deaths", "6"}).store_options().max_deaths, 6);  // the flag wins
  std::ofstream(file) << R"({"max_deaths": "five"})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("\"max_deaths\" must be a non-negative integer"), std::string::npos);
  const std::string help = kDaemonHelp;
  EXPECT_NE(help.find("--max-deaths N"), std::string::npos);
  EXPECT_LT(help.find("--max-interruptions N"), help.find("--max-deaths N")) << "beside --max-interruptions";
  EXPECT_NE(help.find("\"max_deaths\""), std::string::npos) << "a config file key";
}

TEST(DaemonConfig, EncoderCacheDiskBudget) {
  TempDir dir;
  EXPECT_EQ(parse({"--encoder-cache-disk-mb", "7"}).encoder_cache_disk_bytes(), uint64_t{7} << 20);
  EXPECT_EQ(parse({"--encoder-cache-disk-mb", "0"}).encoder_cache_disk_bytes(), 0u);
  const auto file = dir.path() / "rgbaqd.json";
  std::ofstream(file) << R"({"encoder_cache_disk_mb": 300})";
  EXPECT_EQ(parse({"--config", file.string()}).encoder_cache_disk_bytes(), uint64_t{300} << 20);
  EXPECT_EQ(parse({"--config", file.string(), "--encoder-cache-disk-mb", "5"}).encoder_cache_disk_bytes(), uint64_t{5} << 20);
  DaemonConfig d = parse({});
  d.data_dir = dir.path();
  const uint64_t capacity = std::filesystem::space(dir.path()).capacity;
  EXPECT_EQ(d.encoder_cache_disk_bytes(), capacity / 20 < (uint64_t{10} << 30) ? capacity / 20 : uint64_t{10} << 30);
  std::ofstream(file) << R"({"encoder_cache_disk_mb": -1})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("\"encoder_cache_disk_mb\" must be a non-negative integer"), std::string::npos);
}

// --model ORG/NAME (flag or config file) is the snapshot refs/main names in $HF_HUB_CACHE; a repo id
// the cache lacks is a usage error that says how to fetch it.
TEST(DaemonConfig, AModelRepoIdIsItsSnapshotInTheHuggingFaceCache) {
  TempDir tmp;
  const auto commit = std::string(40, 'a');
  const auto snapshot = tmp.path() / "hub" / "models--Org--Tiny" / "snapshots" / commit;
  for (const char* f : {"processor/tokenizer.json", "scheduler/scheduler_config.json", "text_encoder/config.json",
                        "text_encoder/model.safetensors", "transformer/config.json",
                        "transformer/diffusion_pytorch_model.safetensors", "vae/config.json",
                        "vae/diffusion_pytorch_model.safetensors"}) {
    std::filesystem::create_directories((snapshot / f).parent_path());
    std::ofstream(snapshot / f) << "{}";
  }
  std::ofstream(snapshot / "model_index.json") << R"({"_class_name": "QwenImage21Pipeline", "processor": ["transformers", "P"]})";
  std::filesystem::create_directories(tmp.path() / "hub" / "models--Org--Tiny" / "refs");
  std::ofstream(tmp.path() / "hub" / "models--Org--Tiny" / "refs" / "main") << commit;
  setenv("HF_HUB_CACHE", (tmp.path() / "hub").c_str(), 1);
  EXPECT_EQ(parse({"--model", "Org/Tiny"}).model_dir, snapshot);
  std::ofstream(tmp.path() / "c.json") << R"({"model": "Org/Tiny@main"})";
  EXPECT_EQ(parse_daemon_config({"--config", (tmp.path() / "c.json").string(), "--socket", "/tmp/x.sock", "--data-dir", "/tmp/d"})
                .model_dir,
            snapshot);
  const std::string error = usage_error({"--model", "Org/Missing"});
  EXPECT_NE(error.find("--model Org/Missing: no such directory, and the Hugging Face cache"), std::string::npos) << error;
  EXPECT_NE(error.find("rgbaq model pull Org/Missing"), std::string::npos) << error;
  unsetenv("HF_HUB_CACHE");
}

}  // namespace
}  // namespace rgbaq::daemon
