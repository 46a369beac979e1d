// rgbaq: the command-line client.
#include <iostream>
#include <string>
#include <vector>

#include "cli/host_commands.h"

namespace {

constexpr const char* kUsage = R"(usage: rgbaq COMMAND [options]

commands:
  host      print the host contract's values (noise, rope, sigmas, tokenize); see `rgbaq host --help`

Exit codes: 0 ok, 1 failure, 2 usage.
)";

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (args[0] == "host") return rgbaq::cli::run_host_command({args.begin() + 1, args.end()}, std::cin, std::cout, std::cerr);
  std::cerr << "rgbaq: unknown command \"" << args[0] << "\"\n" << kUsage;
  return 2;
}
