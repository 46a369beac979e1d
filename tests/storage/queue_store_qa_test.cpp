// The alpha check, templates and re-seeding in the queue (issues 40 and 41), on both stores: a job's
// template, choices, row and re-seed rule stored at submit and read back; its check stored by the
// completion and listed by flag (the whole flag name, never a part of another; a filter that is not one
// flag name refused); a flagged completion that re-seeds its row (one job per completion, up to the
// row's maximum, skipping seeds the row used and paths another image owns, none when nothing fits, none
// for a job whose run was canceled as it ran); every candidate checked before anything is completed; two
// workers re-seeding one row at once never taking the same seed; and a queue an rgbaq of schema v8 made
// (a finished run, a running job, a submit in progress) migrated forward.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "tests/storage/queue_store_backends.h"
#include "tests/storage/two_worker_jobs.h"

namespace rgbaq::storage {
namespace {

constexpr uint64_t kRowA = 0xA0A0A0A0A0A0A0A0ull;  // high bit set: the store keeps all 64 bits
constexpr uint64_t kRowB = 0xB;

// A job of a template row that re-seeds on cut_off, as the daemon makes it.
NewJob row_job(const std::string& prompt, uint64_t seed, uint64_t row, int reseed_max) {
  NewJob j = job(prompt, seed);
  j.template_text = "a {red|blue} " + prompt;
  j.choices_json = R"({"1":"red"})";
  j.row_key = row;
  j.reseed_on = "cut_off,empty";
  j.reseed_max = reseed_max;
  return j;
}

std::vector<NewJob> candidates(const std::string& prompt, std::initializer_list<uint64_t> seeds, uint64_t row, int reseed_max) {
  std::vector<NewJob> c;
  for (const uint64_t seed : seeds) c.push_back(row_job(prompt, seed, row, reseed_max));
  return c;
}

Completion flagged(const Job& j, std::vector<NewJob> reseed = {}) {
  return {.output_path = j.output_path, .metadata_json = "{}", .qa_json = R"({"flags":["cut_off"]})",
          .qa_flags = "cut_off", .reseed_candidates = std::move(reseed)};
}

std::vector<uint64_t> seeds_of(const std::vector<Job>& jobs) {
  std::vector<uint64_t> seeds;
  for (const auto& j : jobs) seeds.push_back(j.seed);
  return seeds;
}

int64_t count(QueueStore& s, JobState st, int64_t run) { return s.counts(run)[static_cast<int>(st)]; }

template <class Backend>
class QueueStoreQaTest : public QueueStoreTest<Backend> {};
TYPED_TEST_SUITE(QueueStoreQaTest, QueueStoreBackends, BackendNames);

TYPED_TEST(QueueStoreQaTest, TemplateFieldsAndTheCheckAreStoredAndListedByWholeFlag) {
  auto s = this->open(), other = this->open();
  const int64_t w = s->register_worker(worker_info("h"));
  std::vector<NewJob> jobs;
  for (uint64_t seed = 1; seed <= 6; ++seed) jobs.push_back(row_job("icon", seed, kRowA, 2));
  jobs.push_back(job("plain", 1));
  const auto run = s->submit({"r", "{}", "/o"}, jobs);
  const auto read = other->list_jobs(run.run_id, std::nullopt);
  ASSERT_EQ(read.size(), 7u);
  EXPECT_EQ(read[0].template_text, "a {red|blue} icon");
  EXPECT_EQ(read[0].choices_json, R"({"1":"red"})");
  EXPECT_EQ(read[0].row_key, kRowA);
  EXPECT_EQ(read[0].reseed_on, "cut_off,empty");
  EXPECT_EQ(read[0].reseed_max, 2);
  EXPECT_EQ(std::tuple(read[0].replaces, read[0].replaced_by, read[0].qa_json, read[0].qa_flags),
            std::tuple(int64_t{0}, int64_t{0}, std::string(), std::string()));
  EXPECT_EQ(std::tuple(read[6].template_text, read[6].choices_json, read[6].row_key, read[6].reseed_on, read[6].reseed_max),
            std::tuple(std::string(), std::string(), uint64_t{0}, std::string(), 0));

  // Six checks, the last job left unchecked.
  const std::vector<std::string> flags = {"ok", "cut_off", "cut_off,fragmented", "fragmented", "no_alpha", "empty,fake_transparency"};
  for (size_t i = 0; i < flags.size(); ++i) {
    const auto j = s->claim(w);
    ASSERT_TRUE(j);
    const std::string qa = R"({"edge":0.5,"flags":")" + flags[i] + "\"}";
    ASSERT_TRUE(s->complete(j->id, w, {.output_path = j->output_path, .metadata_json = "{}", .qa_json = qa, .qa_flags = flags[i]}));
  }
  const int64_t first = read[0].id;
  EXPECT_EQ(other->job(first + 2)->qa_flags, "cut_off,fragmented");
  EXPECT_EQ(other->job(first + 2)->qa_json, R"({"edge":0.5,"flags":"cut_off,fragmented"})");
  auto ids = [&](const std::string& flag) {
    std::vector<int64_t> out;
    for (const auto& j : other->list_jobs({.qa_flag = flag})) out.push_back(j.id - first);
    return out;
  };
  EXPECT_EQ(ids("ok"), (std::vector<int64_t>{0}));
  EXPECT_EQ(ids("cut_off"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ids("fragmented"), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ids("fake_transparency"), (std::vector<int64_t>{5}));
  EXPECT_EQ(ids("empty"), (std::vector<int64_t>{5}));
  EXPECT_EQ(ids(""), (std::vector<int64_t>{6})) << "not checked yet";
  // Parts of flag names, and LIKE's wildcard '_', select nothing.
  for (const char* part : {"cut", "off", "alpha", "no", "transparency", "cut_of_", "_"}) {
    EXPECT_EQ(ids(part), std::vector<int64_t>{}) << part;
  }
  // What is not one flag name (a list, other wildcards, capitals, spaces) is refused, named.
  for (const char* bad : {"cut_off,fragmented", "ok,", ",", "%", "cut%", "Cut_off", "cut off", "*"}) {
    try {
      other->list_jobs({.qa_flag = bad});
      ADD_FAILURE() << "\"" << bad << "\" was taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("\"") + bad + "\""), std::string::npos) << e.what();
    }
  }
  // With the other filters, and in pages after an id.
  EXPECT_EQ(other->list_jobs({.run = run.run_id, .state = JobState::kDone, .qa_flag = "cut_off", .limit = 1}).at(0).id, first + 1);
  const auto page = other->list_jobs({.qa_flag = "cut_off", .after_id = first + 1, .limit = 1});
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0].id, first + 2);
  EXPECT_TRUE(other->list_jobs({.run = run.run_id + 1, .qa_flag = "cut_off"}).empty());
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreQaTest, AFlaggedCompletionReseedsItsRowOnceUpToTheRowsMaximum) {
  auto s = this->open();
  const int64_t w = s->register_worker(worker_info("h"));
  const auto run = s->submit({"r", "{}", "/o"}, {row_job("icon", 1, kRowA, 2), row_job("icon", 2, kRowA, 2),
                                                 row_job("icon", 3, kRowA, 2), row_job("gem", 1, kRowB, 2)});
  ASSERT_EQ(s->prioritize_run(run.run_id, 7), 4);  // the new jobs take this, not the candidates' 0
  const Job a1 = *s->claim(w), a2 = *s->claim(w), a3 = *s->claim(w), b1 = *s->claim(w);
  ASSERT_EQ(seeds_of({a1, a2, a3, b1}), (std::vector<uint64_t>{1, 2, 3, 1}));

  // The first candidate the row has not used.
  ASSERT_TRUE(s->complete(a1.id, w, flagged(a1, candidates("icon", {2, 4, 5}, kRowA, 2))));
  auto queued = s->list_jobs(run.run_id, JobState::kQueued);
  ASSERT_EQ(queued.size(), 1u);
  const Job r1 = queued[0];
  EXPECT_EQ(r1.seed, 4u);
  EXPECT_EQ(r1.output_path, "/o/icon_4.png");
  EXPECT_EQ(r1.priority, 7);
  EXPECT_EQ(r1.replaces, a1.id);
  EXPECT_EQ(r1.row_key, kRowA);
  EXPECT_EQ(r1.template_text, "a {red|blue} icon");
  EXPECT_EQ(r1.reseed_on, "cut_off,empty");
  EXPECT_EQ(r1.reseed_max, 2);
  const Job done1 = *s->job(a1.id);
  EXPECT_EQ(done1.state, JobState::kDone);
  EXPECT_EQ(done1.replaced_by, r1.id);
  EXPECT_EQ(done1.qa_flags, "cut_off");
  EXPECT_EQ(s->row_seeds(run.run_id, kRowA), (std::vector<uint64_t>{1, 2, 3, 4}));

  // A stale list (4 is used now): the next one.
  ASSERT_TRUE(s->complete(a2.id, w, flagged(a2, candidates("icon", {4, 5, 6}, kRowA, 2))));
  queued = s->list_jobs(run.run_id, JobState::kQueued);
  ASSERT_EQ(seeds_of(queued), (std::vector<uint64_t>{4, 5}));
  EXPECT_EQ(queued[1].replaces, a2.id);
  // The row has its two: no more, also for a re-seeded job flagged in turn.
  ASSERT_TRUE(s->complete(a3.id, w, flagged(a3, candidates("icon", {6, 7}, kRowA, 2))));
  EXPECT_EQ(s->job(a3.id)->replaced_by, 0);
  const Job c1 = *s->claim(w);
  ASSERT_EQ(c1.id, r1.id);
  ASSERT_TRUE(s->complete(c1.id, w, flagged(c1, candidates("icon", {6, 7}, kRowA, 2))));
  EXPECT_EQ(s->job(c1.id)->replaced_by, 0);
  // No candidates (the flags did not meet reseed_on, as the daemon judges): nothing.
  ASSERT_TRUE(s->complete(b1.id, w, flagged(b1)));
  EXPECT_EQ(s->job(b1.id)->replaced_by, 0);

  EXPECT_EQ(seeds_of(s->list_jobs(run.run_id, JobState::kQueued)), std::vector<uint64_t>{5});
  EXPECT_EQ(count(*s, JobState::kQueued, run.run_id), 1);
  EXPECT_EQ(count(*s, JobState::kDone, run.run_id), 5);
  EXPECT_EQ(s->run(run.run_id)->total(), 6) << "the run counts both";
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreQaTest, AReseedSkipsPathsOtherImagesOwnSharesItsOwnAndInsertsNothingWhenNoneFits) {
  auto s = this->open();
  const int64_t w = s->register_worker(worker_info("h"));
  // Another run owns icon_4.png for other content; icon_5.png holds this very image (same content key).
  NewJob foreign = job("other", 4);
  foreign.output_path = "/o/icon_4.png";
  s->submit({"earlier", "{}", "/o"}, {foreign, job("icon", 5)});
  const auto run = s->submit({"r", "{}", "/o"}, {row_job("icon", 1, kRowA, 5), row_job("icon", 2, kRowA, 5)});
  const auto mine = s->list_jobs(run.run_id, std::nullopt);
  const Job a1 = *s->claim(w, {}, {});
  ASSERT_EQ(a1.prompt, "other");  // the earlier run first: claim until this run's
  ASSERT_TRUE(s->complete(a1.id, w, a1.output_path, "{}"));
  const Job e5 = *s->claim(w);
  ASSERT_EQ(e5.prompt, "icon");
  ASSERT_TRUE(s->complete(e5.id, w, e5.output_path, "{}"));

  const Job j1 = *s->claim(w);
  ASSERT_EQ(j1.id, mine[0].id);
  ASSERT_TRUE(s->complete(j1.id, w, flagged(j1, candidates("icon", {4, 5}, kRowA, 5))));
  auto queued = s->list_jobs(run.run_id, JobState::kQueued);
  ASSERT_EQ(seeds_of(queued), (std::vector<uint64_t>{2, 5}));
  EXPECT_EQ(queued[1].output_path, "/o/icon_5.png") << "the same image's path is shared, as a resubmit shares it";
  EXPECT_EQ(queued[1].replaces, j1.id);

  // Nothing fits (a seed the row has, a path another image owns): the job completes, nothing is added.
  const Job j2 = *s->claim(w);
  ASSERT_EQ(j2.seed, 2u);
  NewJob taken = row_job("icon", 9, kRowA, 5);
  taken.output_path = "/o/icon_4.png";
  std::vector<NewJob> none_fit = candidates("icon", {1, 5}, kRowA, 5);
  none_fit.push_back(taken);
  ASSERT_TRUE(s->complete(j2.id, w, flagged(j2, none_fit)));
  EXPECT_EQ(s->job(j2.id)->state, JobState::kDone);
  EXPECT_EQ(s->job(j2.id)->replaced_by, 0);
  EXPECT_EQ(seeds_of(s->list_jobs(run.run_id, std::nullopt)), (std::vector<uint64_t>{1, 2, 5}));
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreQaTest, RowSeedsAreTheRowsOwnInUnsignedOrder) {
  auto s = this->open();
  const uint64_t big = (uint64_t{1} << 63) + 5;
  const auto run = s->submit({"r", "{}", "/o"}, {row_job("icon", big, kRowA, 1), row_job("icon", 7, kRowA, 1),
                                                 row_job("gem", 3, kRowB, 1)});
  const auto later = s->submit({"r2", "{}", "/p"}, {row_job("other", 11, kRowA, 1)});
  EXPECT_EQ(s->row_seeds(run.run_id, kRowA), (std::vector<uint64_t>{7, big}));
  EXPECT_EQ(s->row_seeds(run.run_id, kRowB), std::vector<uint64_t>{3});
  EXPECT_EQ(s->row_seeds(later.run_id, kRowA), std::vector<uint64_t>{11}) << "a row is within its run";
  EXPECT_EQ(s->row_seeds(run.run_id, 99), std::vector<uint64_t>{});
}

TYPED_TEST(QueueStoreQaTest, TwoWorkersReseedingOneRowAtOnceNeverTakeTheSameSeed) {
  constexpr int kPerWorker = 12;
  auto setup = this->open();
  std::vector<NewJob> row;
  for (uint64_t seed = 1; seed <= 2 * kPerWorker; ++seed) row.push_back(row_job("icon", seed, kRowA, 1000));
  const auto run = setup->submit({"r", "{}", "/o"}, row);
  // Both build their candidates before either completes anything, from the same seeds: the same list.
  std::vector<NewJob> stale;
  for (uint64_t seed = 2 * kPerWorker + 1; seed <= 5 * kPerWorker; ++seed) stale.push_back(row_job("icon", seed, kRowA, 1000));
  std::atomic<int> ready{0};
  auto work = [&](const std::string& host) {
    auto s = this->open();  // its own connection, as another daemon
    const int64_t w = s->register_worker(worker_info(host));
    std::vector<Job> mine;
    for (int i = 0; i < kPerWorker; ++i) mine.push_back(*s->claim(w));
    for (++ready; ready < 2;) std::this_thread::yield();
    for (const Job& j : mine) EXPECT_TRUE(s->complete(j.id, w, flagged(j, stale)));
  };
  std::thread a(work, "a"), b(work, "b");
  a.join();
  b.join();
  const auto all = setup->list_jobs(run.run_id, std::nullopt);
  ASSERT_EQ(all.size(), 4u * kPerWorker);
  std::set<uint64_t> seeds;
  std::set<int64_t> replaced;
  for (const Job& j : all) {
    EXPECT_TRUE(seeds.insert(j.seed).second) << "seed " << j.seed << " twice";
    if (j.replaces != 0) {
      EXPECT_TRUE(replaced.insert(j.replaces).second) << "job " << j.replaces << " re-seeded twice";
      EXPECT_EQ(setup->job(j.replaces)->replaced_by, j.id);
    }
  }
  EXPECT_EQ(*seeds.rbegin(), 4u * kPerWorker) << "each took the lowest seed left";
  EXPECT_EQ(replaced.size(), 2u * kPerWorker);
  EXPECT_EQ(count(*setup, JobState::kQueued, run.run_id), 2 * kPerWorker);
  EXPECT_EQ(setup->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreQaTest, AJobWhoseRunWasCanceledAsItRanReseedsNothingAndItsRunEnds) {
  auto s = this->open();
  const int64_t w = s->register_worker(worker_info("h"));
  const auto run = s->submit({"r", "{}", "/o"}, {row_job("icon", 1, kRowA, 3), row_job("icon", 2, kRowA, 3)});
  const Job a = *s->claim(w);
  const auto canceled = s->cancel_run(run.run_id);
  EXPECT_EQ(std::tuple(canceled.canceled, canceled.stopping), std::tuple(1, 1));
  // Past its last step when the cancel came, it finishes done, flagged, with candidates for its row.
  ASSERT_TRUE(s->complete(a.id, w, flagged(a, candidates("icon", {3, 4}, kRowA, 3))));
  EXPECT_EQ(s->job(a.id)->state, JobState::kDone);
  EXPECT_EQ(s->job(a.id)->replaced_by, 0);
  EXPECT_EQ(seeds_of(s->list_jobs(run.run_id, std::nullopt)), (std::vector<uint64_t>{1, 2})) << "nothing inserted";
  const auto ends = s->run_ends(run.run_id);
  ASSERT_EQ(ends.size(), 1u) << "nothing left to run";
  EXPECT_EQ(std::tuple(ends[0].done, ends[0].canceled), std::tuple(1, 1));
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreQaTest, EveryCandidateIsCheckedBeforeAnythingIsCompleted) {
  auto s = this->open();
  const int64_t w = s->register_worker(worker_info("h"));
  const auto run = s->submit({"r", "{}", "/o"}, {row_job("icon", 1, kRowA, 3)});
  const Job a = *s->claim(w);
  // The first candidate fits; the second is of another row.
  std::vector<NewJob> list = candidates("icon", {2, 3}, kRowA, 3);
  list[1].row_key = kRowB;
  try {
    s->complete(a.id, w, flagged(a, list));
    ADD_FAILURE() << "a candidate of another row was taken";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    for (const std::string& part : {std::string("seed 3"), "job " + std::to_string(a.id), "run " + std::to_string(run.run_id),
                                    std::string("row key 11")}) {
      EXPECT_NE(m.find(part), std::string::npos) << m;
    }
  }
  EXPECT_THROW(s->complete_and_claim(a.id, flagged(a, list), w), std::invalid_argument);
  EXPECT_EQ(s->job(a.id)->state, JobState::kRunning) << "nothing completed";
  EXPECT_EQ(s->list_jobs(run.run_id, std::nullopt).size(), 1u) << "nothing inserted";
  list.pop_back();
  ASSERT_TRUE(s->complete(a.id, w, flagged(a, list)));
  EXPECT_EQ(seeds_of(s->list_jobs(run.run_id, JobState::kQueued)), std::vector<uint64_t>{2});
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreQaTest, AQueueAnRgbaqOfSchemaV8MadeMigratesForwardKeepingItsRunsAndJobs) {
  const bool sqlite = std::string(TypeParam::kName) == "sqlite";
  this->backend().create_at_version(8);
  // Written as v8 wrote them: a finished run; an open one whose job a live worker renders; a submit in
  // progress (pending, its job inserted, no counters yet).
  const std::string now = std::to_string(static_cast<int64_t>(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()));
  const std::string run_of = "(SELECT id FROM runs WHERE name = ";
  std::string sql =
      "INSERT INTO runs (name, options, out_dir, created_at, pending, touched_at) VALUES ('finished', '{}', '/o', 1000, FALSE, "
      "1000), ('open', '{}', '/o', 1001, FALSE, 1001), ('pending', '{}', '/o', 1002, TRUE, " + now + "); "
      "INSERT INTO workers (host, boot_id, pid, engine, device, started_at, heartbeat_at) VALUES ('old', 'boot', 4242, 'cpu', "
      "'cpu', " + now + ", " + now + "); "
      "INSERT INTO jobs (run_id, prompt, seed, width, height, name, priority, state, attempts, created_at, started_at, "
      "finished_at, output_path, metadata, content_key, prompt_key, worker_id, lease_expires, worker, host) VALUES "
      "(" + run_of + "'finished'), 'old', 1, 256, 256, '', 0, 'done', 1, 1000, 1000, 1000.5, '/o/old_1.png', '{\"k\":1}', 11, 21, "
      "0, 0, 'old:4242', 'old'), "
      "(" + run_of + "'open'), 'old', 2, 256, 256, '', 0, 'running', 1, 1001, " + now + ", 0, '/o/old_2.png', '', 12, 21, "
      "(SELECT id FROM workers), " + now + " + 3600, 'old:4242', 'old'), "
      "(" + run_of + "'pending'), 'new', 3, 256, 256, '', 0, 'queued', 0, 1002, 0, 0, '/o/new_3.png', '', 13, 22, 0, 0, '', ''); "
      "INSERT INTO outputs (path, content_key, run_id) SELECT output_path, content_key, run_id FROM jobs; ";
  for (const auto& [run, state] : {std::pair{"finished", "done"}, std::pair{"open", "running"}}) {
    sql += std::string("INSERT INTO run_counts (run_id, state, ") + (sqlite ? "" : "stripe, ") + "n) VALUES (" + run_of + "'" +
           run + "'), '" + state + "', " + (sqlite ? "" : "0, ") + "1); ";
  }
  this->backend().exec(sql);

  auto s = this->open({.owe_hook = true});
  EXPECT_EQ(s->schema_version(), this->backend().known_schema_version());
  EXPECT_EQ(s->integrity_check(), "ok");
  const auto runs = s->list_runs();
  ASSERT_EQ(runs.size(), 2u) << "the pending one is not listed";
  const Run finished = runs[0], open = runs[1];
  ASSERT_EQ(std::tuple(finished.name, open.name), std::tuple("finished", "open"));
  EXPECT_EQ(finished.counts[static_cast<int>(JobState::kDone)], 1);
  EXPECT_EQ(open.counts[static_cast<int>(JobState::kRunning)], 1);
  // A run that had ended before owes nothing.
  EXPECT_TRUE(s->run_ends(finished.id).empty());
  EXPECT_FALSE(finished.last_end);
  for (const Job& j : s->list_jobs(std::nullopt, std::nullopt)) {
    EXPECT_EQ(std::tuple(j.template_text, j.choices_json, j.row_key, j.reseed_on, j.reseed_max, j.replaces, j.replaced_by,
                         j.qa_json, j.qa_flags),
              std::tuple(std::string(), std::string(), uint64_t{0}, std::string(), 0, int64_t{0}, int64_t{0}, std::string(),
                         std::string()));
  }
  EXPECT_EQ(s->list_jobs(finished.id, std::nullopt).at(0).metadata_json, R"({"k":1})");

  // The worker v8 registered finishes its job under v9: the open run ends, once, owing the hook.
  const auto workers = s->list_workers();
  ASSERT_EQ(workers.size(), 1u);
  const Job running = s->list_jobs(open.id, std::nullopt).at(0);
  ASSERT_EQ(std::tuple(running.state, running.worker_id), std::tuple(JobState::kRunning, workers[0].id));
  ASSERT_TRUE(s->complete(running.id, workers[0].id, {.output_path = running.output_path, .metadata_json = "{}", .qa_flags = "ok"}));
  auto ends = s->run_ends(open.id);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(std::tuple(ends[0].done, ends[0].hook_state), std::tuple(1, "owed"));
  EXPECT_EQ(s->list_jobs({.qa_flag = "ok"}).at(0).id, running.id);

  // The submit v8 began is published by v9, and its run ends when its job is done.
  const int64_t pending_run = open.id + 1;  // inserted after it
  s->publish_run(pending_run, 1);
  ASSERT_TRUE(s->run(pending_run));
  EXPECT_TRUE(s->run_ends(pending_run).empty());
  const int64_t w = s->register_worker(worker_info("new"));
  const auto j = s->claim(w);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->prompt, "new");
  ASSERT_TRUE(s->complete(j->id, w, j->output_path, "{}"));
  ends = s->run_ends(pending_run);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].done, 1);
  EXPECT_EQ(s->integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
