// rgbaqd: the render daemon (`rgbaqd [serve] --model DIR`), and one-off renders (`rgbaqd render`).
#include <iostream>
#include <string>
#include <vector>

#include "common/build_info.h"
#include "daemon/base/daemon_config.h"
#include "daemon/render_command.h"
#include "daemon/serve.h"
#include "engine/backend_registry.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << rgbaq::daemon::kDaemonHelp;
    return 2;
  }
  if (args[0] == "--version") {
    std::vector<std::string> engines;
    for (const auto& b : rgbaq::engine::backends()) engines.push_back(b.name);
    std::cout << rgbaq::common::version_text("rgbaqd", engines);
    return 0;
  }
  if (args[0] == "render") return rgbaq::daemon::run_render_command({args.begin() + 1, args.end()}, std::cout, std::cerr);
  if (args[0] == "serve") return rgbaq::daemon::run_serve_command({args.begin() + 1, args.end()});
  if (args[0].rfind("-", 0) == 0) return rgbaq::daemon::run_serve_command(args);
  std::cerr << "rgbaqd: unknown command \"" << args[0] << "\"\n" << rgbaq::daemon::kDaemonHelp;
  return 2;
}
