// libFuzzer target for the job-file parsers (CSV and JSONL): any bytes must give jobs or errors, never
// a crash, a hang or a sanitizer report. Build and run with scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "jobs/job_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  rgbaq::jobs::ParseOptions options;
  options.max_jobs = 5000;  // keep sweeps small enough for the fuzzer's memory limit
  options.random_seed = [] { return uint64_t{42}; };
  for (auto format : {rgbaq::jobs::FileFormat::kCsv, rgbaq::jobs::FileFormat::kJsonl}) {
    const auto file = rgbaq::jobs::parse_job_file(text, format, options);
    if (!file.errors.empty() && !file.jobs.empty()) __builtin_trap();  // a bad file queues nothing
    for (const auto& e : file.errors) (void)e.to_string("fuzz");
  }
  return 0;
}
