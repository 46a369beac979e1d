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

// The help says the I/O class --print writes (issue 27, item 8: it said idle, the unit best-effort 7).
TEST(CliService, HelpStatesTheSchedulingTheUnitSets) {
  TempDir dir;
  const auto r = run_process({"/usr/bin/env", "XDG_CONFIG_HOME=" + dir.path().string(), "RGBAQ_SYSTEMCTL=/bin/true", kRgbaq,
                              "service", "install", "--model", model().dir().string(), "--print"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string service = printed_units(r.out).at("rgbaqd.service");
  const std::string help = run_process({kRgbaq, "service", "--help"}).out;
  // Every scheduling setting of the unit, as the help words it (setting=value), and no other value.
  size_t settings = 0;
  for (const std::string key : {"Nice", "CPUSchedulingPolicy", "IOSchedulingClass", "IOSchedulingPriority"}) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(service, m, std::regex("\n" + key + "=([^\n]*)\n"))) << key << service;
    EXPECT_NE(help.find(key + "=" + m[1].str()), std::string::npos) << key << "=" << m[1] << " is not in the help:\n" << help;
    std::smatch h;
    ASSERT_TRUE(std::regex_search(help, h, std::regex(key + "=([A-Za-z0-9-]+)"))) << help;
    EXPECT_EQ(h[1].str(), m[1].str()) << key;
    ++settings;
  }
  EXPECT_EQ(settings, 4u);
}

// systemctl without a user session bus (su, a container) prints "Failed to connect to bus: No medium
// found"; status says what that means and how to check rgbaqd another way (issue 27, item 8), naming
// the log that exists (issue 43: it named logs/rgbaqd.out).
TEST(CliService, StatusWithoutASessionBusSaysWhatItMeans) {
  TempDir dir;
  const fs::path fake = dir.path() / "systemctl";
  // systemd 252's words when $DBUS_SESSION_BUS_ADDRESS and $XDG_RUNTIME_DIR/bus are missing.
  std::ofstream(fake) << "#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n";
  fs::permissions(fake, fs::perms::owner_all);
  const auto r = run_process({"/usr/bin/env", "RGBAQ_SYSTEMCTL=" + fake.string(), kRgbaq, "service", "status",
                              "--data-dir", (dir.path() / "data").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no user session bus"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"Failed to connect to bus: No medium found\""), std::string::npos) << "systemctl's words, quoted:\n" << r.err;
  EXPECT_NE(r.err.find("rgbaq status"), std::string::npos) << r.err;
  // The log rgbaqd writes (daemon_config.h log_file), not the service manager's capture of its output.
  EXPECT_NE(r.err.find("Its log:            " + (dir.path() / "data" / "logs" / "rgbaqd.log").string() + "\n"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("rgbaqd.out"), std::string::npos) << r.err;
  // Any other failure of systemctl goes through as it is.
  std::ofstream(fake) << "#!/bin/sh\necho 'Unit rgbaqd.service could not be found.' >&2\nexit 4\n";
  const auto other = run_process({"/usr/bin/env", "RGBAQ_SYSTEMCTL=" + fake.string(), kRgbaq, "service", "status"});
  EXPECT_EQ(other.exit_code, 4);
  EXPECT_EQ(other.err, "Unit rgbaqd.service could not be found.\n");
}

}  // namespace
}  // namespace rgbaq
