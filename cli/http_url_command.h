#pragma once
// `rgbaq http-url`: the daemon's HTTP address with its token, for a browser or another program.
#include <string>
#include <vector>

#include "cli/cli_context.h"

namespace rgbaq::cli {

int http_url_command(const std::vector<std::string>& args, CliContext& ctx);

}  // namespace rgbaq::cli
