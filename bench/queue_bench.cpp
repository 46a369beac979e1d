// The queue's speed: submitting 100,000 jobs from one CSV (parse + validate + build + insert, in one
// transaction), with and without the tokenizer's prompt-length check; and claim-complete cycles per
// second on a database holding a million jobs, each cycle with a durable commit (synchronous = FULL).
// With --queue postgresql://...: the stores side by side in the same run: submitting 100,000 jobs, and
// claim-complete cycles per second with 1 and 4 claimers (threads, each on its own connection; with 4
// also as the daemon writes a cycle, a complete and then a claim), on
// SQLite (a temporary file) and on the PostgreSQL database given (its tables are created if missing),
// with the server's durability settings and its durable commits per second, which bound the cycles.
// And a prompt template of 50,000 combinations submitted (expansion included) against a CSV of the same
// 50,000 prompts, one a row, both measured in this run (issue 41's goal: within 20%).
// usage: queue_bench [--jobs-in-db N] [--queue URL] [--templates (that comparison only)]
#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/api/job_submission.h"
#include "jobs/job_file.h"
#include "jobs/wildcard_set.h"
#include "storage/open_queue_store.h"
#include "storage/postgres/pg_connection.h"
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

static std::vector<storage::NewJob> synthetic_jobs(int64_t n, uint64_t tag) {
  std::vector<storage::NewJob> jobs;
  jobs.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    storage::NewJob j;
    j.line = static_cast<int>(i + 2);
    j.prompt = "a red fox, variant " + std::to_string(i % 5000);
    j.seed = static_cast<uint64_t>(i);
    j.width = j.height = 1024;
    j.output_path = "/renders/" + std::to_string(tag) + "/p" + std::to_string(i) + ".png";
    j.content_key = (tag << 40) ^ (static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull);
    j.prompt_key = static_cast<uint64_t>(i % 5000);
    jobs.push_back(std::move(j));
  }
  return jobs;
}

// How a cycle is written: one transaction (complete_and_claim), or as the daemon does it, a complete (by
// its output writer) and then a claim (by its render worker), each its own.
enum class Cycle { kOneTransaction, kCompleteThenClaim };

// Claim-complete cycles per second with `claimers` threads for `seconds`, each with its own store
// (connection) and worker.
static double cycles_per_second(const std::string& url, int claimers, double seconds, Cycle cycle) {
  std::vector<std::thread> threads;
  std::vector<int64_t> cycles(static_cast<size_t>(claimers), 0);
  const auto t0 = Clock::now();
  for (int c = 0; c < claimers; ++c) {
    threads.emplace_back([&, c] {
      auto store = storage::open_queue_store(url, {.busy_timeout_ms = 60000});
      const int64_t worker = store->register_worker({"bench-host", "boot", c, "none", "none"});
      auto job = store->claim(worker);
      while (job && seconds_since(t0) < seconds) {
        if (cycle == Cycle::kOneTransaction) {
          job = store->complete_and_claim(job->id, job->output_path, "{\"bench\": true}", worker, {job->prompt_key});
        } else {
          store->complete(job->id, worker, job->output_path, "{\"bench\": true}");
          job = store->claim(worker, {job->prompt_key});
        }
        ++cycles[static_cast<size_t>(c)];
      }
      if (job) store->requeue(job->id, worker);
    });
  }
  for (auto& t : threads) t.join();
  int64_t total = 0;
  for (const int64_t n : cycles) total += n;
  return static_cast<double>(total) / seconds_since(t0);
}

static std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one, five, fifteen;
  f >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// What bounds a cycle on this server: its durability settings and how many durable commits per second
// one connection gets (one-row inserts into a scratch table, dropped after; a transaction that writes
// nothing is not flushed at its commit, so it would not measure the disk).
static void print_server(const std::string& url) {
  storage::pg::Connection db(url, std::chrono::milliseconds(0));
  const auto settings = db.exec(
      "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit'), "
      "current_setting('wal_sync_method'), current_setting('full_page_writes'), current_setting('commit_delay')");
  std::printf("postgresql server %s: fsync %s, synchronous_commit %s, wal_sync_method %s, full_page_writes %s, "
              "commit_delay %s\n",
              settings.text(0, 0).c_str(), settings.text(0, 1).c_str(), settings.text(0, 2).c_str(),
              settings.text(0, 3).c_str(), settings.text(0, 4).c_str(), settings.text(0, 5).c_str());
  db.exec("CREATE TABLE IF NOT EXISTS queue_bench_commits (n BIGINT)");
  int commits = 0;
  const auto t0 = Clock::now();
  while (seconds_since(t0) < 1.0) {
    db.exec("INSERT INTO queue_bench_commits VALUES (1)");
    ++commits;
  }
  db.exec("DROP TABLE queue_bench_commits");
  std::printf("postgresql durable commits/s on one connection (the bound on 1 claimer's cycles): %.0f\n",
              commits / seconds_since(t0));
}

// SQLite next to the given queue: submit 100,000 jobs, then cycles with 1 and 4 claimers, each cycle
// one transaction, and with 4 claimers as the daemon writes them (two transactions).
static int compare_stores(const std::string& other_url) {
  TempDir dir;
  const std::string sqlite_url = (dir.path() / "q.db").string();
  const uint64_t tag = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::printf("load average: %s\n", load_average().c_str());
  print_server(other_url);
  std::printf("%-10s %22s %22s %22s %26s\n", "store", "submit 100,000 jobs", "cycles/s, 1 claimer", "cycles/s, 4 claimers",
              "4, complete then claim");
  double figures[2][4] = {};
  int row = 0;
  for (const std::string& url : {sqlite_url, other_url}) {
    auto store = storage::open_queue_store(url);
    const auto jobs = synthetic_jobs(100'000, tag);
    // As the daemon submits: batches of 5,000, each its own transaction, the run published at the end.
    const auto t0 = Clock::now();
    const storage::RunOptions run{"bench", "{}", "/renders"};
    const int64_t run_id = store->begin_run(run);
    uint64_t inserted = 0;
    for (size_t i = 0; i < jobs.size(); i += 5000) {
      const std::vector<storage::NewJob> batch(jobs.begin() + static_cast<long>(i),
                                               jobs.begin() + static_cast<long>(std::min(jobs.size(), i + 5000)));
      inserted += store->append_jobs(run_id, run, batch).inserted;
    }
    store->publish_run(run_id, inserted);
    const double submit_s = seconds_since(t0);
    const double one = cycles_per_second(url, 1, 3.0, Cycle::kOneTransaction);
    const double four = cycles_per_second(url, 4, 3.0, Cycle::kOneTransaction);
    const double four_split = cycles_per_second(url, 4, 3.0, Cycle::kCompleteThenClaim);
    std::printf("%-10s %20.3f s %22.0f %22.0f %26.0f\n",
                storage::parse_queue_url(url).kind == storage::QueueKind::kSqlite ? "sqlite" : "postgresql", submit_s, one, four,
                four_split);
    std::printf("%-10s integrity_check: %s\n", "", store->integrity_check().c_str());
    figures[row][0] = submit_s;
    figures[row][1] = one;
    figures[row][2] = four;
    figures[row][3] = four_split;
    ++row;
  }
  std::printf("%-10s %20.2fx %21.2fx %21.2fx %25.2fx   (postgresql / sqlite; submit: time, cycles: rate)\n", "ratio",
              figures[1][0] / figures[0][0], figures[1][1] / figures[0][1], figures[1][2] / figures[0][2],
              figures[1][3] / figures[0][3]);
  std::printf("load average: %s\n", load_average().c_str());
  return 0;
}

// A template of 10 x 10 x 100 (a wildcard) x 5 = 50,000 combinations, and a CSV of its prompts written
// out by plain loops in the same order, one row each; both with seed 1.
struct TemplateCase {
  std::string template_file, csv, style;
  TemplateCase() {
    const std::vector<std::string> colours = {"red", "blue", "green", "gold", "silver", "black", "white", "purple", "orange", "pink"};
    const std::vector<std::string> items = {"sword", "shield", "helmet", "bow", "axe", "staff", "ring", "amulet", "boots", "gloves"};
    const std::vector<std::string> views = {"front", "side", "top", "back", "isometric"};
    std::vector<std::string> styles;
    for (int i = 0; i < 100; ++i) styles.push_back("style " + std::to_string(i) + " shading");
    for (const auto& st : styles) style += st + "\n";
    const auto alternatives = [](const std::vector<std::string>& v) {
      std::string s = "{";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "|" : "") + v[i];
      return s + "}";
    };
    template_file = "prompt,seed\n\"a " + alternatives(colours) + " " + alternatives(items) + ", game icon, __style__, " +
                    alternatives(views) + " view\",1\n";
    csv = "prompt,seed\n";
    for (const auto& c : colours)
      for (const auto& it : items)
        for (const auto& st : styles)
          for (const auto& v : views) csv += "\"a " + c + " " + it + ", game icon, " + st + ", " + v + " view\",1\n";
  }
};

// The daemon's prompt check at submit: the prompt's token length under the template ("" when it fits).
static std::function<std::string(const std::string&)> prompt_check(const tokenizer::PromptTemplate& tmpl) {
  return [&tmpl](const std::string& p) -> std::string {
    try {
      tmpl.apply(p);
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  };
}

// Parse (and expand) with the tokenizer's length check, as the daemon does, then build and insert into
// a fresh SQLite queue; the seconds it took.
static double submit_seconds(const std::string& file, jobs::WildcardSet* wildcards, const tokenizer::PromptTemplate& tmpl,
                             uint64_t expect_jobs) {
  TempDir dir;
  storage::SqliteQueueStore store(dir.path() / "q.db");
  const auto t0 = Clock::now();
  jobs::ParseOptions options;
  options.wildcards = wildcards;
  options.check_prompt = prompt_check(tmpl);
  const auto parsed = jobs::parse_job_file(file, jobs::FileFormat::kCsv, options);
  const auto rows = daemon::to_queue_rows(parsed.jobs, "/renders");
  const auto result = store.submit({"bench", "{}", "/renders"}, rows);
  const double s = seconds_since(t0);
  if (!parsed.errors.empty() || result.inserted != expect_jobs) {
    std::fprintf(stderr, "a submit case queued %llu jobs, not %llu\n", static_cast<unsigned long long>(result.inserted),
                 static_cast<unsigned long long>(expect_jobs));
    std::exit(1);
  }
  return s;
}

static void template_against_csv(const tokenizer::PromptTemplate& tmpl) {
  const TemplateCase c;
  // Alternately, twice each, the best of each: the first of a kind warms the allocator and the disk cache.
  double csv_s = 1e9, template_s = 1e9;
  for (int round = 0; round < 2; ++round) {
    csv_s = std::min(csv_s, submit_seconds(c.csv, nullptr, tmpl, 50'000));
    auto wildcards = jobs::WildcardSet::from_texts({{"style", c.style}}, "");
    template_s = std::min(template_s, submit_seconds(c.template_file, &wildcards, tmpl, 50'000));
  }
  std::printf("submit 50,000 jobs: from a CSV of 50,000 rows (%.1f MB) %.3f s; from one template of 50,000 combinations "
              "(%zu bytes + a 100-line wildcard) %.3f s: template / CSV = %.2f (goal: at most 1.20)\n",
              c.csv.size() / 1e6, csv_s, c.template_file.size(), template_s, template_s / csv_s);
}

int main(int argc, char** argv) {
  int64_t db_jobs = 1'000'000;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--jobs-in-db") == 0) db_jobs = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--queue") == 0) return compare_stores(argv[i + 1]);
  }
  const std::string csv = make_csv(100'000);
  const auto tk = tokenizer::Tokenizer::from_file(std::filesystem::path(RGBAQ_SOURCE_DIR_PATH) / "tokenizer/data/qwen3/tokenizer.json");
  const tokenizer::PromptTemplate tmpl(tk);
  if (std::any_of(argv + 1, argv + argc, [](const char* a) { return std::strcmp(a, "--templates") == 0; })) {
    template_against_csv(tmpl);
    return 0;
  }

  for (bool check_tokens : {false, true}) {
    TempDir dir;
    storage::SqliteQueueStore store(dir.path() / "q.db");
    const auto t0 = Clock::now();
    jobs::ParseOptions options;
    if (check_tokens) {
      options.check_prompt = prompt_check(tmpl);
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

  template_against_csv(tmpl);

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

  const int64_t worker = store.register_worker({"bench-host", "boot", 1, "none", "none"});
  auto job = store.claim(worker);
  int cycles = 0;
  const auto t1 = Clock::now();
  while (seconds_since(t1) < 3.0 && job) {
    job = store.complete_and_claim(job->id, job->output_path, "{\"bench\": true}", worker, {job->prompt_key});
    ++cycles;
  }
  const double one_commit = cycles / seconds_since(t1);
  cycles = 0;
  const auto t2 = Clock::now();
  while (seconds_since(t2) < 3.0 && job) {
    store.complete(job->id, worker, job->output_path, "{\"bench\": true}");
    job = store.claim(worker, {job->prompt_key});
    ++cycles;
  }
  const double two_commits = cycles / seconds_since(t2);
  std::printf("claim-complete cycles on %lld jobs, durable commits: %.0f/s as one transaction (complete_and_claim), "
              "%.0f/s as two (complete, then claim)\n",
              static_cast<long long>(db_jobs), one_commit, two_commits);
  std::printf("integrity_check: %s\n", store.integrity_check().c_str());
  return 0;
}
