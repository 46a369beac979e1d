// rgbaqd: the render daemon. Today it renders single images (`rgbaqd render`).
#include <iostream>
#include <string>
#include <vector>

#include "daemon/render_command.h"

namespace {

constexpr const char* kUsage = R"(usage: rgbaqd COMMAND [options]

commands:
  render    one image, no queue: rgbaqd render --model DIR --prompt TEXT -o out.png (see --help)

Exit codes: 0 ok, 1 failure, 2 usage.
)";

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? std::cerr : std::cout) << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "render") return rgbaq::daemon::run_render_command({args.begin() + 1, args.end()}, std::cout, std::cerr);
  std::cerr << "rgbaqd: unknown command \"" << args[0] << "\"\n" << kUsage;
  return 2;
}
