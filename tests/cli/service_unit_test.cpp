// `rgbaq service install` writes every value into the systemd unit quoted and escaped (issue 26, item
// 13): a model path holding a newline, `%h` and `$HOME` wrote an extra ExecStartPre= line and left the
// specifier and the variable to systemd. The units are read back by systemd's own parser
// (`systemd-analyze verify`, whose debug dump shows each Exec line as parsed).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

// The blocks of `--print`: "# PATH" then the file's text.
std::map<std::string, std::string> printed_units(const std::string& out) {
  std::map<std::string, std::string> files;
  std::string current;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# /", 0) == 0) current = fs::path(line.substr(2)).filename().string();
    else files[current] += line + "\n";
  }
  return files;
}

// How systemd 252 prints a parsed argument in its dump: as a shell word, double-quoted when it holds
// anything but [A-Za-z0-9_./:=+-], with `"`, `\`, `$` and a backtick escaped, a newline as \n; `$$`
// (a literal dollar) is kept as written until the command runs.
std::string systemd_dump_word(const std::string& arg) {
  bool plain = true;
  std::string q;
  for (const char c : arg) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string("_./:=+-%").find(c) == std::string::npos) plain = false;
    if (c == '"' || c == '\\' || c == '`') q += std::string("\\") + c;
    else if (c == '$') q += "\\$\\$";
    else if (c == '\n') q += "\\n";
    else q += c;
  }
  return plain ? q : "\"" + q + "\"";
}

TEST(CliService, EveryValueInTheUnitIsQuotedSoSystemdRunsExactlyThePath) {
  if (run_process({"/bin/sh", "-c", "command -v systemd-analyze"}).exit_code != 0) GTEST_SKIP() << "no systemd-analyze here";
  TempDir dir;
  const std::string evil = "m\nExecStartPre=touch pwned %h $HOME \"q\" \\b";
  const fs::path model_dir = dir.path() / evil;
  fs::create_directory_symlink(model().dir(), model_dir);
  const fs::path data_dir = dir.path() / "data 100% $USER";
  const auto r = run_process({"/usr/bin/env", "XDG_CONFIG_HOME=" + dir.path().string(), "RGBAQ_SYSTEMCTL=/bin/true", kRgbaq,
                              "service", "install", "--model", model_dir.string(), "--data-dir", data_dir.string(), "--print"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto units = printed_units(r.out);
  ASSERT_EQ(units.size(), 2u) << r.out;
  const fs::path unit_dir = dir.path() / "units";
  fs::create_directories(unit_dir);
  for (const auto& [name, text] : units) std::ofstream(unit_dir / name) << text;

  const auto verify = run_process({"/usr/bin/env", "SYSTEMD_LOG_LEVEL=debug", "systemd-analyze", "verify", "--man=no",
                                   (unit_dir / "rgbaqd.socket").string(), (unit_dir / "rgbaqd.service").string()});
  const std::string dump = verify.out + verify.err;
  EXPECT_EQ(dump.find("-> ExecStartPre:"), std::string::npos) << "a value added a setting:\n" << units.at("rgbaqd.service");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dump, m, std::regex("-> ExecStart:\\s*\\n\\s*Command Line: ([^\\n]*)"))) << dump;
  const std::string line = m[1];
  EXPECT_NE(line.find(" --model " + systemd_dump_word(model_dir.string()) + " "), std::string::npos)
      << line << "\nwanted " << systemd_dump_word(model_dir.string());
  EXPECT_NE(line.find(" --data-dir " + systemd_dump_word(data_dir.string()) + " "), std::string::npos) << line;
  // Our own specifier stays one: systemd puts its runtime directory there (/run for verify's manager).
  EXPECT_TRUE(std::regex_search(line, std::regex(" --socket /[^ %]*/rgbaq/rgbaqd\\.sock$"))) << line;
  EXPECT_EQ(dump.find("-> ExecStart:", dump.find("-> ExecStart:") + 1), std::string::npos) << "one ExecStart:\n" << dump;
}

}  // namespace
}  // namespace rgbaq
