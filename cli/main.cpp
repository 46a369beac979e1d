// rgbaq: the command-line client of rgbaqd.
#include <unistd.h>

#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/cli_context.h"
#include "cli/command_help.h"
#include "cli/contact_sheet.h"
#include "cli/host_commands.h"
#include "cli/http_commands.h"
#include "cli/model_command.h"
#include "cli/qa_command.h"
#include "cli/queue_commands.h"
#include "cli/service_command.h"
#include "cli/submit_command.h"
#include "cli/watch_command.h"
#include "common/build_info.h"
#include "common/printable_text.h"
#include "daemon/socket_paths.h"
#include "engine/backend_registry.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args;
  std::filesystem::path socket = rgbaq::paths::default_socket_path();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--socket" && i + 1 < argc) {
      socket = argv[++i];
    } else if (a.rfind("--socket=", 0) == 0) {
      socket = a.substr(9);
    } else {
      args.push_back(a);
    }
  }
  using rgbaq::cli::kUsage;
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  if (args[0] == "--version") {
    std::vector<std::string> engines;
    for (const auto& b : rgbaq::engine::backends()) engines.push_back(b.name);
    std::cout << rgbaq::common::version_text("rgbaq", engines);
    return 0;
  }
  if (args[0] == "help" && args.size() > 1) args = {args[1], "--help"};
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (args[0] == "host") return rgbaq::cli::run_host_command({args.begin() + 1, args.end()}, std::cin, std::cout, std::cerr);
  if (args[0] == "model") return rgbaq::cli::run_model_command({args.begin() + 1, args.end()}, std::cout, std::cerr);
  static const std::map<std::string, rgbaq::cli::Command> commands = {
      {"submit", rgbaq::cli::submit_command},     {"watch", rgbaq::cli::watch_command},
      {"status", rgbaq::cli::status_command},     {"ls", rgbaq::cli::ls_command},
      {"cancel", rgbaq::cli::cancel_command},     {"retry", rgbaq::cli::retry_command},
      {"pause", rgbaq::cli::pause_command},       {"resume", rgbaq::cli::resume_command},
      {"prioritize", rgbaq::cli::prioritize_command}, {"export", rgbaq::cli::export_command},
      {"sheet", rgbaq::cli::sheet_command},       {"service", rgbaq::cli::service_command},
      {"http-url", rgbaq::cli::http_url_command}, {"gallery", rgbaq::cli::gallery_command},
      {"mark", rgbaq::cli::mark_command},         {"rm", rgbaq::cli::rm_command},
      {"qa", rgbaq::cli::qa_command},
  };
  const auto it = commands.find(args[0]);
  if (it == commands.end()) {
    // A near miss is named, as an option's is; the usage follows only when there is no guess.
    const std::string guess = rgbaq::cli::nearest_command(args[0]);
    std::cerr << "rgbaq: unknown command \"" << rgbaq::common::printable(args[0]) << "\""
              << (guess.empty() ? std::string() : " (did you mean " + guess + "?)") << "\n";
    if (guess.empty()) std::cerr << kUsage;
    else std::cerr << "(rgbaq --help lists the commands)\n";
    return 2;
  }
  rgbaq::cli::CliContext ctx{std::filesystem::absolute(socket), std::cin, std::cout, std::cerr, isatty(STDOUT_FILENO) != 0};
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const auto& a : rest) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      const char* help = rgbaq::cli::command_help(args[0]);
      std::cout << (help ? help : kUsage);
      return 0;
    }
  }
  const int code = rgbaq::cli::guarded(args[0], ctx, [&] { return it->second(rest, ctx); });
  std::cout.flush();
  return code;
}
