#pragma once
// Runs a real child process for integration tests: argv, optional stdin text, captured stdout/stderr.
#include <string>
#include <vector>

namespace rgbaq {

struct ProcessResult {
  int exit_code = -1;  // the exit status, or 128 + signal number
  std::string out;
  std::string err;
};

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& stdin_text = {});

}  // namespace rgbaq
