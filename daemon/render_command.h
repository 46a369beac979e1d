#pragma once
// `rgbaqd render`: one image, no queue (debugging, benchmarks).
#include <iosfwd>
#include <string>
#include <vector>

namespace rgbaq::daemon {

// args are the words after `render`. Returns the exit code: 0 ok, 1 failure, 2 usage or bad input.
int run_render_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace rgbaq::daemon
