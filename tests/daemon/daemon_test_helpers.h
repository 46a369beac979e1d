#pragma once
// Helpers shared by the daemon's integration tests: the tiny model (made once per binary), rgbaq
// calls against a running daemon, and output listings.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/daemon/daemon_process.h"
#include "tests/engine/tiny_model_fixture.h"
#include "tests/run_process.h"

namespace rgbaq {

using nlohmann::json;
namespace fs = std::filesystem;

inline const std::string kRgbaqd = RGBAQD_PATH;
inline const std::string kRgbaq = RGBAQ_CLI_PATH;

inline const TinyModel& model() {
  static const TinyModel m;
  return m;
}

inline ProcessResult rgbaq(const DaemonProcess& d, std::vector<std::string> args, const std::string& input = {}) {
  args.insert(args.begin(), {kRgbaq, "--socket", d.socket().string()});
  return run_process(args, input);
}

inline json status(const DaemonProcess& d) {
  const auto r = rgbaq(d, {"status", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

inline std::vector<fs::path> pngs_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".png" && e.path().filename().string().rfind("sheet", 0) != 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary | std::ios::trunc) << text; }


}  // namespace rgbaq
