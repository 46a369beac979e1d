#pragma once
// What every rgbaq command gets: where the daemon is, the standard streams, and whether stdout is a
// terminal (progress redraws in place there, and prints plain lines elsewhere).
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace rgbaq::cli {

struct CliContext {
  std::filesystem::path socket;
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
  bool out_is_tty = false;
};

using Command = int (*)(const std::vector<std::string>& args, CliContext& ctx);

// Runs `body`, turning exceptions into exit codes: UsageError 2, DaemonUnreachable 3, DaemonError 2
// for bad input (invalid_file, bad_request, not_found) else 1, anything else 1. Messages go to
// ctx.err prefixed with "rgbaq <command>: ".
int guarded(const std::string& command, CliContext& ctx, const std::function<int()>& body);

}  // namespace rgbaq::cli
