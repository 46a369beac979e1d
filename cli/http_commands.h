#pragma once
// The daemon's HTTP address: `rgbaq http-url` prints it with its token (for a browser or another
// program); `rgbaq gallery` opens the review gallery there in the default browser.
#include <string>
#include <vector>

#include "cli/cli_context.h"

namespace rgbaq::cli {

int http_url_command(const std::vector<std::string>& args, CliContext& ctx);
int gallery_command(const std::vector<std::string>& args, CliContext& ctx);

}  // namespace rgbaq::cli
