#include "daemon/base/queue_row.h"

#include <algorithm>

#include "jobs/lora_list.h"
#include "jobs/output_name.h"

namespace rgbaq::daemon {

storage::NewJob to_queue_row(const jobs::JobSpec& s, const std::filesystem::path& out_dir) {
  storage::NewJob j;
  j.line = s.line;
  j.prompt = s.prompt;
  j.seed = s.seed;
  j.width = s.size.width;
  j.height = s.size.height;
  j.name = s.name;
  j.priority = s.priority;
  j.output_path = (out_dir / jobs::output_file_name(s.prompt, s.name, s.seed, s.size, s.lora)).string();
  j.content_key = jobs::content_key(s.prompt, s.seed, s.size, s.name, out_dir.string(), s.lora);
  j.row_key = jobs::row_key(s.prompt, s.size, s.name, out_dir.string(), s.lora);
  j.prompt_key = jobs::prompt_key(jobs::prompt_text(s.prompt));  // what the encoder sees: no <lora:...> tags
  j.lora = s.lora;
  j.template_text = s.template_text;
  j.choices_json = s.choices_json;
  j.reseed_on = s.reseed_on;
  j.reseed_max = s.reseed_max;
  return j;
}

std::vector<storage::NewJob> to_queue_rows(const std::vector<jobs::JobSpec>& specs, const std::filesystem::path& out_dir) {
  std::vector<storage::NewJob> rows;
  rows.reserve(specs.size());
  for (const auto& s : specs) rows.push_back(to_queue_row(s, out_dir));
  return rows;
}

std::optional<std::vector<storage::NewJob>> reseed_rows(const storage::Job& job, const std::vector<uint64_t>& used, int count) {
  jobs::JobSpec spec;
  spec.prompt = job.prompt;
  spec.seed = job.seed;
  spec.size = {job.width, job.height};
  spec.name = job.name;
  spec.priority = job.priority;
  spec.lora = job.lora;
  spec.template_text = job.template_text;
  spec.choices_json = job.choices_json;
  spec.reseed_on = job.reseed_on;
  spec.reseed_max = job.reseed_max;
  // The submit's folder: every output path is that folder and a file name.
  const std::filesystem::path out_dir = std::filesystem::path(job.output_path).parent_path();
  const storage::NewJob self = to_queue_row(spec, out_dir);
  if (self.output_path != job.output_path || self.content_key != job.content_key || self.row_key != job.row_key) return std::nullopt;
  std::vector<storage::NewJob> rows;
  // `used` is ascending (row_seeds): its last is the row's highest, and a lookup is a binary search, so
  // that a big row costs O(count log n) here. Seeds above the highest are free until the wrap past
  // 2^64 - 1 to 0, where at most used.size() are skipped: the loop ends however the seeds lie.
  uint64_t seed = used.empty() ? job.seed : std::max(job.seed, used.back());
  for (size_t tried = 0; rows.size() < static_cast<size_t>(count) && tried <= used.size() + static_cast<size_t>(count); ++tried) {
    ++seed;  // wraps past 2^64 - 1 to 0
    if (std::binary_search(used.begin(), used.end(), seed)) continue;
    spec.seed = seed;
    rows.push_back(to_queue_row(spec, out_dir));
  }
  return rows;
}

}  // namespace rgbaq::daemon
