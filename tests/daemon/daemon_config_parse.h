#pragma once
// rgbaqd's flags parsed as the daemon parses them, with the three it always needs given: for the config
// tests, which then look at one setting or at the usage error a bad value gives.
#include <string>
#include <vector>

#include "common/arguments.h"
#include "daemon/base/daemon_config.h"

namespace rgbaq::daemon::config_test {

inline DaemonConfig parse(std::vector<std::string> args) {
  args.insert(args.begin(), {"--model", "/m", "--socket", "/tmp/x.sock", "--data-dir", "/tmp/d"});
  return parse_daemon_config(args);
}

// The usage error's text, or "(no error)".
inline std::string usage_error(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const common::UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace rgbaq::daemon::config_test
