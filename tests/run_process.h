#pragma once
// Runs a real child process for integration tests: argv, optional stdin text, captured stdout/stderr.
#include <cstdint>
#include <string>
#include <vector>

namespace rgbaq {

struct ProcessResult {
  int exit_code = -1;  // the exit status, or 128 + signal number
  std::string out;
  std::string err;
  uint64_t max_rss_bytes = 0;  // the child's peak resident memory, as wait4 reports it
};

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& stdin_text = {});

// How many times longer than a plain build a process test may wait for the daemon: a sanitizer build
// runs it several times slower (ThreadSanitizer 8, AddressSanitizer 3). RGBAQ_TEST_TIME_SCALE overrides.
int test_time_scale();

}  // namespace rgbaq
