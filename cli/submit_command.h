#pragma once
// `rgbaq submit FILE|-`: the file is read and validated here first (every error with its line, column
// and field, exit 2, nothing queued), then sent to the daemon, which validates again with the
// tokenizer and queues the run in one transaction. Output paths are made absolute here.
#include <string>
#include <vector>

#include "cli/cli_context.h"

namespace rgbaq::cli {

int submit_command(const std::vector<std::string>& args, CliContext& ctx);

}  // namespace rgbaq::cli
