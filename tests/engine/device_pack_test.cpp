// scripts/device-pack (CUDA builds): the archive a GPU machine with no Debian -dev packages runs the
// device check from. Unpacked into a root that holds nothing but this machine's C and C++ runtimes
// (libc, libm, libstdc++, libgcc_s and the loader), its programs start: rgbaqd --version, the gpu tests
// (which skip: no driver there), and the engine tests, where loading cuBLASLt (not packed) fails with
// its own message. So everything else they link is in the archive, and nothing of CUDA's is needed to
// start.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_process.h"
#include "tests/test_temp_dir.h"

namespace rgbaq {
namespace {

namespace fs = std::filesystem;

std::map<std::string, std::string> read_manifest(const fs::path& file) {
  std::map<std::string, std::string> m;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return m;
}

// Copies a file's contents (following links) to `to`, making its folder.
void copy_resolved(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(fs::canonical(from), to, fs::copy_options::overwrite_existing);
}

// A child's output for a failure message: CTest takes a printed "[  SKIPPED ]" for this test skipping.
std::string shown(const ProcessResult& r) {
  std::string text = r.out + r.err;
  for (size_t at = 0; (at = text.find("SKIPPED", at)) != std::string::npos;) text.replace(at, 7, "skipped");
  return text;
}

// argv run inside `root` with chroot (as root), or in a user namespace that maps us to root.
ProcessResult run_in_root(const fs::path& root, std::vector<std::string> argv) {
  std::vector<std::string> full = geteuid() == 0 ? std::vector<std::string>{"/usr/sbin/chroot", root.string()}
                                                 : std::vector<std::string>{"/usr/bin/unshare", "--user", "--map-root-user",
                                                                            "/usr/sbin/chroot", root.string()};
  full.insert(full.end(), argv.begin(), argv.end());
  return run_process(full);
}

const fs::path source = RGBAQ_SOURCE_DIR_PATH;

// One archive of this build for the suite (packing takes seconds).
class DevicePack : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    archive_ = dir_->path() / "pack.tar.gz";
    pack_ = run_process({"/bin/bash", (source / "scripts/device-pack").string(), "--no-build", "--build",
                         RGBAQ_BINARY_DIR_PATH, "--output", archive_.string()});
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override { ASSERT_EQ(pack_.exit_code, 0) << pack_.out << pack_.err; }
  static inline TempDir* dir_ = nullptr;
  static inline fs::path archive_;
  static inline ProcessResult pack_;
};

TEST_F(DevicePack, TheArchiveStartsItsProgramsInARootHoldingOnlyTheCAndCxxRuntimes) {
  TempDir t;
  const fs::path& archive = archive_;
  EXPECT_LT(fs::file_size(archive), uintmax_t{40} << 20) << "the archive must stay under 40 MiB";

  // The root: the loader and the runtimes' files, copied from this machine; then the archive.
  const fs::path root = t.path() / "root";
  const fs::path lib = "/lib/x86_64-linux-gnu";
  copy_resolved("/lib64/ld-linux-x86-64.so.2", root / "lib64/ld-linux-x86-64.so.2");
  for (const char* name : {"libc.so.6", "libm.so.6", "libmvec.so.1", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                           "libresolv.so.2", "libutil.so.1",
                           "libstdc++.so.6", "libgcc_s.so.1"}) {
    if (fs::exists(lib / name)) copy_resolved(lib / name, root / lib.relative_path() / name);
  }
  const fs::path pack_dir = root / "pack";
  fs::create_directories(pack_dir);
  fs::create_directories(root / "tmp");
  const auto untar = run_process({"/bin/tar", "-C", pack_dir.string(), "-xzf", archive.string()});
  ASSERT_EQ(untar.exit_code, 0) << untar.err;
  const auto manifest = read_manifest(pack_dir / "device-manifest.txt");
  EXPECT_EQ(manifest.count("commit"), 1u);
  ASSERT_EQ(manifest.count("source_dir"), 1u);
  EXPECT_EQ(fs::canonical(manifest.at("source_dir")), fs::canonical(source));
  ASSERT_EQ(manifest.count("build_dir"), 1u);
  const fs::path build = fs::path("/pack") / manifest.at("build_dir");
  for (const auto& entry : fs::recursive_directory_iterator(pack_dir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find("libcublas"), std::string::npos) << "packed: " << entry.path();
    EXPECT_EQ(name.find("libcudart"), std::string::npos) << "packed: " << entry.path();
    EXPECT_EQ(name.find("libcuda.so"), std::string::npos) << "packed: " << entry.path();
    EXPECT_EQ(name.find("libc.so"), std::string::npos) << "packed: " << entry.path();
  }

  // There the working tree travels beside the archive, and device-check links the manifest's source_dir
  // to it: the programs' compiled-in paths (the tokenizer) hold. Here the one file they read stands in.
  const fs::path tokenizer = "tokenizer/data/qwen3/tokenizer.json";
  copy_resolved(source / tokenizer, root / fs::path(manifest.at("source_dir")).relative_path() / tokenizer);

  // The loader of the root, told only the archive's library folder (device-check says LD_LIBRARY_PATH).
  auto in_root = [&](const std::string& program, std::vector<std::string> args) {
    std::vector<std::string> argv = {"/lib64/ld-linux-x86-64.so.2", "--library-path", (build / "device-lib").string(),
                                     (build / program).string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_in_root(root, argv);
  };
  const auto probe = run_in_root(root, {"/lib64/ld-linux-x86-64.so.2", "--version"});
  if (probe.exit_code != 0) GTEST_SKIP() << "no chroot here (needs root or user namespaces): " << probe.err;

  const auto version = in_root("daemon/rgbaqd", {"--version"});
  EXPECT_EQ(version.exit_code, 0) << shown(version);
  EXPECT_NE(version.out.find("rgbaqd "), std::string::npos) << shown(version);
  EXPECT_NE(version.out.find("engines: cpu, cuda"), std::string::npos) << shown(version);
  const auto cli = in_root("cli/rgbaq", {"--version"});
  EXPECT_EQ(cli.exit_code, 0) << shown(cli);

  // No driver in the root: every gpu test skips, saying why, and nothing crashes.
  const auto gpu = in_root("tests/engine/engine_gpu_test", {});
  EXPECT_EQ(gpu.exit_code, 0) << shown(gpu);
  EXPECT_NE(gpu.out.find("[  SKIPPED ]"), std::string::npos) << shown(gpu);
  EXPECT_NE(gpu.out.find("no CUDA device visible"), std::string::npos) << shown(gpu);
  // cuBLASLt is not packed: its first use fails with the loader's reason and the remedy.
  const auto lt = in_root("tests/engine/engine_test", {"--gtest_filter=CublasLtLibrary.TheToolkitsLibrary*"});
  EXPECT_NE(lt.exit_code, 0) << shown(lt);
  EXPECT_NE(lt.out.find("cuBLASLt could not be loaded: libcublasLt.so."), std::string::npos) << shown(lt);
  // The rest of the engine tests' host code runs there (the plans the GPU code follows).
  const auto plans = in_root("tests/engine/engine_test", {"--gtest_filter=CudaAttentionPlan.*:CudaBlockSchedule.*"});
  EXPECT_EQ(plans.exit_code, 0) << shown(plans);
  EXPECT_NE(plans.out.find("[  PASSED  ] 2 tests"), std::string::npos) << shown(plans);
}

// device-check's plumbing, on this machine (no GPU): it unpacks the archive into the tree it runs in,
// runs every step within its limit, counts the gpu tests' skips as a failure, and writes one JSON of
// the steps and logs. (Its figures need a GPU: the bench exits 2 here, saying there is no device.)
TEST_F(DevicePack, DeviceCheckRunsFromTheArchiveAndWritesItsJson) {
  TempDir tree;
  for (const char* file : {"scripts/device-check", "bench/torch_dit_step.py"}) {
    fs::create_directories((tree.path() / file).parent_path());
    fs::copy_file(source / file, tree.path() / file);
  }
  const fs::path out = tree.path() / "device-out";
  const auto check = run_process({"/usr/bin/env", "OUT=" + out.string(), "/bin/bash", (tree.path() / "scripts/device-check").string(),
                                  "--archive", archive_.string(), "--skip", "torch", "--skip", "workers"});
  EXPECT_EQ(check.exit_code, 1) << shown(check);  // the gpu tests cannot pass without a GPU
  EXPECT_TRUE(fs::exists(tree.path() / "build/default/daemon/rgbaqd")) << "unpacked into the tree";
  ASSERT_TRUE(fs::exists(out / "device-check.json")) << shown(check);
  EXPECT_LT(fs::file_size(out / "device-check.json"), uintmax_t{1} << 20);
  const auto j = nlohmann::json::parse(std::ifstream(out / "device-check.json"));
  const auto& steps = j.at("steps");
  EXPECT_EQ(steps.at("gpu_tests"), "tests-skipped") << steps.dump();  // the gpu tests skipped: no device
  EXPECT_EQ(steps.at("host_tests"), "0") << steps.dump() << j.value("host_tests", "");
  EXPECT_EQ(steps.at("bench"), "2") << steps.dump();  // "no CUDA device visible"
  EXPECT_EQ(steps.at("bench_fp8"), "2") << steps.dump();
  EXPECT_EQ(steps.at("bench_fused"), "2") << steps.dump();
  EXPECT_EQ(steps.at("bench_blocks"), "2") << steps.dump();
  EXPECT_EQ(steps.at("torch"), "skipped");
  EXPECT_EQ(steps.at("render_1024"), "2") << j.value("render_log", "");  // the hollow model made; no device to render on
  EXPECT_NE(j.at("render_log").get<std::string>().find("cannot run here"), std::string::npos) << j.at("render_log");
  // The fp8, int8, lean and fast renders parse their flags and get as far (the hollow int8 model made too).
  for (const char* step : {"render_fp8", "render_int8", "render_lean", "render_fast"}) {
    EXPECT_EQ(steps.at(step), "2") << step;
    EXPECT_NE(j.at(std::string(step) + "_log").get<std::string>().find("cannot run here"), std::string::npos) << j.at(std::string(step) + "_log");
  }
  EXPECT_EQ(steps.at("workers"), "skipped");
  EXPECT_EQ(steps.at("bench_int8"), "2") << j.value("bench_int8_log", "");  // no device
  // The tiny ConvRot DiT file made here; the w8a8 render parses its flags and gets as far.
  EXPECT_EQ(steps.at("render_convrot"), "2") << j.value("render_convrot_log", "");
  EXPECT_NE(j.at("render_convrot_log").get<std::string>().find("cannot run here"), std::string::npos) << j.at("render_convrot_log");
  EXPECT_NE(j.at("machine").get<std::string>().find("engines: cpu, cuda"), std::string::npos);
  EXPECT_NE(j.at("bench_log").get<std::string>().find("no CUDA device visible"), std::string::npos);
  EXPECT_TRUE(j.at("bench").is_null());
}

}  // namespace
}  // namespace rgbaq
