#pragma once
// `rgbaq service install|uninstall|status`: rgbaqd as a launchd agent (macOS) or a systemd --user
// service with socket activation (Linux), from the templates in launchd/. `--print` shows the files
// without installing anything.
#include <map>
#include <string>
#include <vector>

#include "cli/cli_context.h"

namespace rgbaq::cli {

int service_command(const std::vector<std::string>& args, CliContext& ctx);

// The unit files for these settings: file name -> contents (systemd: rgbaqd.socket and rgbaqd.service;
// launchd: com.rgbaq.rgbaqd.plist). Every value is escaped for where it goes (XML; systemd's quoting,
// `%%` and `$$`); an empty `socket` is systemd's runtime directory (%t/rgbaq/rgbaqd.sock). Throws
// common::UsageError for a socket path systemd cannot listen on (a control character).
std::map<std::string, std::string> service_files(bool launchd, const std::string& rgbaqd, const std::string& model,
                                                 const std::string& data_dir, const std::string& socket, const std::string& log);

}  // namespace rgbaq::cli
