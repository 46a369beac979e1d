#pragma once
// `rgbaq qa FILE.png... [--json]`: the alpha check (assets/alpha_check.h) of any PNG, here, with no
// daemon: the figures and flags the daemon records for each image it renders.
#include <string>
#include <vector>

#include "cli/cli_context.h"

namespace rgbaq::cli {

// Exit 0 when every file was read and checked (whatever its flags), 1 when one could not be read (the
// others are still checked and printed), 2 for usage.
int qa_command(const std::vector<std::string>& args, CliContext& ctx);

// The value of a listing's --qa option (ls jobs, sheet, export): "ok" or a flag of the alpha check;
// throws common::UsageError naming the choices for anything else.
std::string qa_filter_option(const std::string& text);

}  // namespace rgbaq::cli
