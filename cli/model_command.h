#pragma once
// `rgbaq model check DIR [--json]` and `rgbaq model quantize SRC DST [--components LIST]`: local tools
// over engine/ (they never talk to the daemon).
#include <iosfwd>
#include <string>
#include <vector>

namespace rgbaq::cli {

// args are the words after `model`. Returns the exit code: 0 ok, 1 failure, 2 usage or a model
// directory rgbaq cannot use.
int run_model_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace rgbaq::cli
