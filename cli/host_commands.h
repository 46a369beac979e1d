#pragma once
// `rgbaq host ...`: the host contract's intermediate values, printed so anyone can diff rgbaq against
// the Python reference. Local tools over host/ (and tokenizer/); they never talk to the daemon.
#include <iosfwd>
#include <string>
#include <vector>

namespace rgbaq::cli {

// args are the words after `host`. Returns the exit code: 0 ok, 1 failure, 2 usage.
int run_host_command(const std::vector<std::string>& args, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace rgbaq::cli
