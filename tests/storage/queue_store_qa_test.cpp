// The alpha check, templates and re-seeding in the queue (issues 40 and 41), on both stores: a job's
// template, choices, row and re-seed rule stored at submit and read back; its check stored by the
// completion and listed by flag (the whole flag name, never a part of another); a flagged completion
// that re-seeds its row (one job per completion, up to the row's maximum, skipping seeds the row used
// and paths another image owns, none when nothing fits); two workers re-seeding one row at once never
// taking the same seed; and a queue from schema v8 migrated forward.
#include <gtest/gtest.h>

#include <atomic>
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
  // Parts of flag names, and LIKE's wildcards, select nothing.
  for (const char* part : {"cut", "off", "alpha", "no", "transparency", "cut_of_", "%", "_", "ok,", ","}) {
    EXPECT_EQ(ids(part), std::vector<int64_t>{}) << part;
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

TYPED_TEST(QueueStoreQaTest, AQueueFromSchemaV8MigratesForwardKeepingItsJobs) {
  const int known = this->backend().known_schema_version();
  int64_t finished_run = 0, open_run = 0, open_job = 0;
  {
    auto s = this->open();
    const int64_t w = s->register_worker(worker_info("h"));
    finished_run = s->submit({"finished", "{}", "/o"}, {job("old", 1)}).run_id;
    const auto j = s->claim(w);
    ASSERT_TRUE(s->complete(j->id, w, j->output_path, R"({"k":1})"));
    open_run = s->submit({"open", "{}", "/o"}, {job("old", 2)}).run_id;
    open_job = s->list_jobs(open_run, std::nullopt).at(0).id;
  }
  this->backend().exec(kDropV9Schema);
  this->backend().set_schema_version(8);
  auto s = this->open({.owe_hook = true});
  EXPECT_EQ(s->schema_version(), known);
  const auto jobs = s->list_jobs(std::nullopt, std::nullopt);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].metadata_json, R"({"k":1})");
  EXPECT_EQ(jobs[0].state, JobState::kDone);
  for (const Job& j : jobs) {
    EXPECT_EQ(std::tuple(j.template_text, j.choices_json, j.row_key, j.reseed_on, j.reseed_max, j.replaces, j.replaced_by,
                         j.qa_json, j.qa_flags),
              std::tuple(std::string(), std::string(), uint64_t{0}, std::string(), 0, int64_t{0}, int64_t{0}, std::string(),
                         std::string()));
  }
  // A run that had ended before owes nothing; the open one ends, once, when its job is done.
  EXPECT_TRUE(s->run_ends(finished_run).empty());
  EXPECT_FALSE(s->run(finished_run)->last_end);
  EXPECT_EQ(s->integrity_check(), "ok");
  const int64_t w = s->register_worker(worker_info("h"));
  const auto j = s->claim(w);
  ASSERT_EQ(j->id, open_job);
  ASSERT_TRUE(s->complete(j->id, w, {.output_path = j->output_path, .metadata_json = "{}", .qa_flags = "ok"}));
  const auto ends = s->run_ends(open_run);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].done, 1);
  EXPECT_EQ(ends[0].hook_state, "owed");
  EXPECT_EQ(s->list_jobs({.qa_flag = "ok"}).at(0).id, open_job);
  EXPECT_EQ(s->integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
