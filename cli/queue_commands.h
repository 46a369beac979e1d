#pragma once
// The commands that ask the daemon something and print the answer: status, ls, cancel, retry, mark,
// pause, resume, prioritize, export. Every read command takes --json.
#include <string>
#include <vector>

#include "cli/cli_context.h"

namespace rgbaq::cli {

int status_command(const std::vector<std::string>& args, CliContext& ctx);
int ls_command(const std::vector<std::string>& args, CliContext& ctx);
int cancel_command(const std::vector<std::string>& args, CliContext& ctx);
int rm_command(const std::vector<std::string>& args, CliContext& ctx);
int retry_command(const std::vector<std::string>& args, CliContext& ctx);
int mark_command(const std::vector<std::string>& args, CliContext& ctx);
int pause_command(const std::vector<std::string>& args, CliContext& ctx);
int resume_command(const std::vector<std::string>& args, CliContext& ctx);
int prioritize_command(const std::vector<std::string>& args, CliContext& ctx);
int export_command(const std::vector<std::string>& args, CliContext& ctx);

}  // namespace rgbaq::cli
