#pragma once
// A file of job rows (CSV with a header, or JSONL) turned into jobs: every row validated, every error
// collected with its line, column and field, and sweeps expanded in a deterministic order (row order,
// then seed order). A file with any error yields no jobs: nothing of a bad file is queued.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/image_size.h"
#include "jobs/seed_spec.h"
#include "jobs/wildcard_set.h"

namespace rgbaq::jobs {

enum class FileFormat { kCsv, kJsonl };

// A row's re-seeded jobs at most, unless it or the submit says (reseed_max: 0..kMaxReseedMax).
inline constexpr int kDefaultReseedMax = 2;
inline constexpr int kMaxReseedMax = 1000;

// What the submit command line sets for rows that leave a field out.
struct SubmitDefaults {
  std::optional<std::string> seeds;  // a seed specification
  std::string size = "1024";
  int count = 1;
  int priority = 0;
  std::optional<std::string> lora;  // for rows that name no LoRA (field or prompt tag): "name:weight;..."
  std::string reseed_on;  // for rows without a reseed_on field: alpha-check flags, "cut_off,empty" ("": none)
  int reseed_max = kDefaultReseedMax;
};

struct JobSpec {
  std::string prompt;
  uint64_t seed = 0;
  bool seed_was_random = false;  // drawn at submit because the row had none; recorded all the same
  host::ImageSize size;
  std::string name;  // empty: the output is named after the prompt
  int priority = 0;
  int line = 0;      // the row it came from
  std::string lora;  // the field's and the prompt's LoRAs, "name:weight;..." (jobs/lora_list.h); "" for none
  // A prompt written as a template (jobs/prompt_template.h): the row's text as written, and what this
  // expansion chose as a JSON object ({"1":"red","style":"pixel art"}); "" for a plain prompt.
  std::string template_text, choices_json;
  // Re-seeding (issue 40): the alpha-check flags (jobs/qa_flags.h, canonical order, "" for none) whose
  // image gets the row a new job with its next unused seed, at most reseed_max of them for the row.
  std::string reseed_on;
  int reseed_max = 0;
};

struct FileError {
  int line = 0, column = 0;  // 0: the whole file or row
  std::string field;         // empty when not about one field
  std::string message;
  std::string to_string(const std::string& file_name) const;  // "prompts.csv:3:14: seed: ..."
};

// One valid row: its jobs are its seeds, less those an earlier identical row (same prompt, size, name)
// or an earlier part of itself already listed. Rows stay small however many jobs they expand to.
struct JobRow {
  std::string prompt, name;
  host::ImageSize size;
  int priority = 0;
  int line = 0;
  bool seed_was_random = false;
  std::vector<SeedRange> seeds;  // in expansion order
  std::string lora;              // as JobSpec::lora
  // As JobSpec's; the template's text is one copy shared by all the rows of its combinations (nullptr
  // for a plain prompt).
  std::shared_ptr<const std::string> template_text;
  std::string choices_json;
  std::string reseed_on;                    // as JobSpec's
  int reseed_max = 0;
};

struct JobFile {
  std::vector<JobSpec> jobs;  // every job, in order, when ParseOptions::expand (else empty)
  std::vector<JobRow> rows;   // the valid rows (empty when there are errors)
  uint64_t job_count = 0;     // the jobs the rows expand to
  std::vector<FileError> errors;
  uint64_t duplicates_skipped = 0;  // identical jobs (same prompt, seed, size, name) listed twice
  std::vector<int> seed_rows_over_option;  // lines whose own seed won over SubmitDefaults::seeds
  std::vector<std::string> ignored_columns;  // an `rgbaq export` CSV's columns that are no job field
};

inline constexpr uint64_t kDefaultMaxJobs = 100'000;
inline constexpr int kMinPriority = -1'000'000, kMaxPriority = 1'000'000;
inline constexpr int kMaxJsonDepth = 16;
// A file's errors reported at most (JobFile::errors then ends with one more saying it stopped).
inline constexpr size_t kMaxFileErrors = 100;  // a JSONL row nests two levels (the row, a seed list)

struct ParseOptions {
  SubmitDefaults defaults;
  uint64_t max_jobs = kDefaultMaxJobs;  // a sweep is counted before anything is built
  bool expand = true;  // build JobFile::jobs; false: rows only (memory independent of the job count)
  // Returns an error message for a prompt the encoder cannot take (too many tokens), else empty.
  // It gets the prompt without its <lora:...> tags (the text the tokenizer sees).
  std::function<std::string(const std::string& prompt)> check_prompt;
  // Returns an error message for a LoRA name that names no usable file (not found in the LoRA folders, or
  // no LoRA for this model), else empty. Called once per distinct name.
  std::function<std::string(const std::string& name)> check_lora;
  // Draws a seed for rows without one (std::random_device when empty; tests pass their own).
  std::function<uint64_t()> random_seed;
  // Prompts are templates (jobs/prompt_template.h): each combination of a row's template is a row of its
  // own (after the rows before it, in the template's order), with the row's other fields; a row with a
  // name and several combinations names combination K's files NAME-K (K from 1, in that order). false:
  // every prompt is taken as written (an image API's, or the expanded prompts of an `rgbaq export`, which
  // are always taken as written).
  bool templates = true;
  WildcardSet* wildcards = nullptr;  // where __name__ is read; nullptr: a template naming one is an error
  // Each template row takes this many of its combinations, drawn at random (distinct, reproducible
  // from sample_seed and the row's line; jobs/prompt_template.h sample_combinations), in the
  // template's order; a template with no more combinations takes them all. Rows without a template
  // are left as they are.
  std::optional<uint64_t> sample;
  uint64_t sample_seed = 0;
};

JobFile parse_job_file(std::string_view text, FileFormat format, const ParseOptions& options);

// Calls f(const JobSpec&) for each job of the file's rows, in order, one JobSpec at a time.
template <typename F>
void for_each_job(const JobFile& file, F&& f) {
  for (const JobRow& row : file.rows) {
    JobSpec spec{row.prompt, 0, row.seed_was_random, row.size, row.name, row.priority, row.line, row.lora,
                 row.template_text ? *row.template_text : std::string(), row.choices_json};
    spec.reseed_on = row.reseed_on;
    spec.reseed_max = row.reseed_max;
    for (const SeedRange& r : row.seeds) {
      for (uint64_t s = r.first;; ++s) {
        spec.seed = s;
        f(static_cast<const JobSpec&>(spec));
        if (s == r.last) break;
      }
    }
  }
}

// By extension: .jsonl / .ndjson are JSONL, anything else CSV.
FileFormat format_for_path(const std::string& path);

}  // namespace rgbaq::jobs
