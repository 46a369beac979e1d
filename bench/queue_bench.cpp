// The queue's speed: submitting 100,000 jobs from one CSV (parse + validate + build + insert, in one
// transaction), with and without the tokenizer's prompt-length check; and claim-complete cycles per
// second on a database holding a million jobs, each cycle with a durable commit (synchronous = FULL).
// usage: queue_bench [--jobs-in-db N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "daemon/job_submission.h"
#include "jobs/job_file.h"
#include "storage/sqlite/sqlite_queue_store.h"
#include "tests/test_temp_dir.h"
#include "tokenizer/prompt_template.h"
#include "tokenizer/tokenizer.h"

using Clock = std::chrono::steady_clock;
using namespace rgbaq;

static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

static std::string make_csv(int rows) {
  std::string csv = "prompt,seed,size,priority\n";
  const char* subjects[] = {"a red fox", "an isometric castle", "a glass teapot, studio lighting", "a \"quoted\" robot, game asset"};
  for (int i = 0; i < rows; ++i) {
    std::string prompt = std::string(subjects[i % 4]) + ", variant " + std::to_string(i / 4);
    std::string quoted = "\"";
    for (char c : prompt) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    csv += quoted + "\"," + std::to_string(i) + ",1024," + std::to_string(i % 3) + "\n";
  }
  return csv;
}

int main(int argc, char** argv) {
  int64_t db_jobs = 1'000'000;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--jobs-in-db") == 0) db_jobs = std::atoll(argv[i + 1]);
  }
  const std::string csv = make_csv(100'000);
  const auto tk = tokenizer::Tokenizer::from_file(std::filesystem::path(RGBAQ_SOURCE_DIR_PATH) / "tokenizer/data/qwen3/tokenizer.json");
  const tokenizer::PromptTemplate tmpl(tk);

  for (bool check_tokens : {false, true}) {
    TempDir dir;
    storage::SqliteQueueStore store(dir.path() / "q.db");
    const auto t0 = Clock::now();
    jobs::ParseOptions options;
    if (check_tokens) {
      options.check_prompt = [&](const std::string& p) -> std::string {
        try {
          tmpl.apply(p);
          return "";
        } catch (const std::exception& e) {
          return e.what();
        }
      };
    }
    const auto file = jobs::parse_job_file(csv, jobs::FileFormat::kCsv, options);
    const double parse_s = seconds_since(t0);
    const auto t1 = Clock::now();
    const auto rows = daemon::to_queue_rows(file.jobs, "/renders");
    const auto result = store.submit({"bench", "{}", "/renders"}, rows);
    const double insert_s = seconds_since(t1);
    std::printf("submit 100,000 jobs from one CSV (%.1f MB)%s: %.3f s (parse + validate %.3f s, build + insert %.3f s), %llu inserted\n",
                csv.size() / 1e6, check_tokens ? " with the tokenizer's length check" : "", parse_s + insert_s, parse_s,
                insert_s, static_cast<unsigned long long>(result.inserted));
  }

  TempDir dir;
  storage::SqliteQueueStore store(dir.path() / "big.db");
  const auto t0 = Clock::now();
  std::vector<storage::NewJob> batch;
  for (int64_t i = 0; i < db_jobs; ++i) {
    storage::NewJob j;
    j.prompt = "prompt " + std::to_string(i % 5000);
    j.seed = static_cast<uint64_t>(i);
    j.width = j.height = 1024;
    j.output_path = "/renders/p" + std::to_string(i) + ".png";
    j.content_key = static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull;
    j.prompt_key = static_cast<uint64_t>(i % 5000);
    batch.push_back(std::move(j));
    if (batch.size() == 100'000) {
      store.submit({"fill", "{}", "/renders"}, batch);
      batch.clear();
    }
  }
  if (!batch.empty()) store.submit({"fill", "{}", "/renders"}, batch);
  std::printf("filled a database with %lld jobs in %.1f s\n", static_cast<long long>(db_jobs), seconds_since(t0));

  auto job = store.claim("bench");
  int cycles = 0;
  const auto t1 = Clock::now();
  while (seconds_since(t1) < 3.0 && job) {
    job = store.complete_and_claim(job->id, job->output_path, "{\"bench\": true}", "bench", {job->prompt_key});
    ++cycles;
  }
  const double one_commit = cycles / seconds_since(t1);
  cycles = 0;
  const auto t2 = Clock::now();
  while (seconds_since(t2) < 3.0 && job) {
    store.complete(job->id, job->output_path, "{\"bench\": true}");
    job = store.claim("bench", {job->prompt_key});
    ++cycles;
  }
  const double two_commits = cycles / seconds_since(t2);
  std::printf("claim-complete cycles on %lld jobs, durable commits: %.0f/s as one transaction (complete_and_claim), "
              "%.0f/s as two (complete, then claim)\n",
              static_cast<long long>(db_jobs), one_commit, two_commits);
  std::printf("integrity_check: %s\n", store.integrity_check().c_str());
  return 0;
}
