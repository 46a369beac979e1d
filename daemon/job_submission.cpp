#include "daemon/job_submission.h"

#include "jobs/output_name.h"

namespace rgbaq::daemon {

std::vector<storage::NewJob> to_queue_rows(const std::vector<jobs::JobSpec>& specs, const std::filesystem::path& out_dir) {
  std::vector<storage::NewJob> rows;
  rows.reserve(specs.size());
  const std::string dir = out_dir.string();
  for (const auto& s : specs) {
    storage::NewJob j;
    j.prompt = s.prompt;
    j.seed = s.seed;
    j.width = s.size.width;
    j.height = s.size.height;
    j.name = s.name;
    j.priority = s.priority;
    j.output_path = (out_dir / jobs::output_file_name(s.prompt, s.name, s.seed, s.size)).string();
    j.content_key = jobs::content_key(s.prompt, s.seed, s.size, s.name, dir);
    j.prompt_key = jobs::prompt_key(s.prompt);
    rows.push_back(std::move(j));
  }
  return rows;
}

}  // namespace rgbaq::daemon
