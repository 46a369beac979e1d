#pragma once
// A file of job rows (CSV with a header, or JSONL) turned into jobs: every row validated, every error
// collected with its line, column and field, and sweeps expanded in a deterministic order (row order,
// then seed order). A file with any error yields no jobs: nothing of a bad file is queued.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/image_size.h"
#include "jobs/seed_spec.h"

namespace rgbaq::jobs {

enum class FileFormat { kCsv, kJsonl };

// What the submit command line sets for rows that leave a field out.
struct SubmitDefaults {
  std::optional<std::string> seeds;  // a seed specification
  std::string size = "1024";
  int count = 1;
  int priority = 0;
};

struct JobSpec {
  std::string prompt;
  uint64_t seed = 0;
  bool seed_was_random = false;  // drawn at submit because the row had none; recorded all the same
  host::ImageSize size;
  std::string name;  // empty: the output is named after the prompt
  int priority = 0;
  int line = 0;      // the row it came from
};

struct FileError {
  int line = 0, column = 0;  // 0: the whole file or row
  std::string field;         // empty when not about one field
  std::string message;
  std::string to_string(const std::string& file_name) const;  // "prompts.csv:3:14: seed: ..."
};

struct JobFile {
  std::vector<JobSpec> jobs;
  std::vector<FileError> errors;
  uint64_t duplicates_skipped = 0;  // identical jobs (same prompt, seed, size, name) listed twice
};

struct ParseOptions {
  SubmitDefaults defaults;
  uint64_t max_jobs = 1'000'000;  // a sweep is counted before anything is built
  // Returns an error message for a prompt the encoder cannot take (too many tokens), else empty.
  std::function<std::string(const std::string& prompt)> check_prompt;
  // Draws a seed for rows without one (std::random_device when empty; tests pass their own).
  std::function<uint64_t()> random_seed;
};

JobFile parse_job_file(std::string_view text, FileFormat format, const ParseOptions& options);

// By extension: .jsonl / .ndjson are JSONL, anything else CSV.
FileFormat format_for_path(const std::string& path);

}  // namespace rgbaq::jobs
