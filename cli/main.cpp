// rgbaq: the command-line client of rgbaqd.
#include <unistd.h>

#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/cli_context.h"
#include "cli/contact_sheet.h"
#include "cli/host_commands.h"
#include "cli/model_command.h"
#include "cli/queue_commands.h"
#include "cli/service_command.h"
#include "cli/submit_command.h"
#include "cli/watch_command.h"
#include "daemon/socket_paths.h"

namespace {

constexpr const char* kUsage = R"(usage: rgbaq [--socket PATH] COMMAND [options]

  submit FILE|- [--seeds S] [--size SIZE] [--count N] [--priority N] [--out DIR] [--name RUN]
                [--format csv|jsonl] [--skip-duplicates] [--dry-run] [--wait] [--max-jobs N]
                [--lora NAME:W[;NAME:W]]
                          queue a file of prompts (CSV with a header, or JSONL); prints the run id;
                          at most --max-jobs jobs (default 100000, up to rgbaqd --max-jobs-per-submit)
                          --lora: LoRAs for the rows that name none (a lora column, or
                          <lora:NAME:W> in the prompt); NAME is NAME.safetensors in rgbaqd --lora-dir
  watch [RUN]             progress bars: the image in hand and the run, with rate and ETA
  status                  the daemon, its queue and its counters
  ls runs | ls jobs [--run R] [--state S] [--limit N]
  cancel RUN | cancel --job JOB
  retry RUN [--canceled]  failed (and canceled) jobs back to the queue
  pause | resume          stop or restart taking new jobs
  prioritize RUN N        higher goes first
  export RUN [--format csv|jsonl] [-o FILE]
                          the run's jobs, outputs and metadata
  sheet RUN [-o FILE] [--thumb PX]
                          a contact sheet PNG: prompts as rows, seeds as columns
  service install|uninstall|status [--model DIR] [--print]
                          rgbaqd as a launchd agent (macOS) or systemd --user service (Linux)
  host noise|rope|sigmas|tokenize
                          the host contract's values, computed locally (see rgbaq host --help)
  model check DIR [--json] | model quantize SRC DST [--components transformer,text_encoder]
                          inspect a model directory; write int8 weights (see rgbaq model --help)

Read commands take --json. The socket is --socket, $RGBAQ_SOCKET, or the platform default.
Exit codes: 0 ok, 1 failure, 2 usage or bad input, 3 the daemon is not reachable.
)";

}  // namespace

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
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
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
  };
  const auto it = commands.find(args[0]);
  if (it == commands.end()) {
    std::cerr << "rgbaq: unknown command \"" << args[0] << "\"\n" << kUsage;
    return 2;
  }
  rgbaq::cli::CliContext ctx{std::filesystem::absolute(socket), std::cin, std::cout, std::cerr, isatty(STDOUT_FILENO) != 0};
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const auto& a : rest) {
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
  }
  const int code = rgbaq::cli::guarded(args[0], ctx, [&] { return it->second(rest, ctx); });
  std::cout.flush();
  return code;
}
