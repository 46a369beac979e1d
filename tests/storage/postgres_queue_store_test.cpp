// What only the PostgreSQL store has: queue URLs and their passwords (never in a message), and a
// connection that drops (the server restarted) and comes back without losing or repeating anything.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "storage/open_queue_store.h"
#include "storage/postgres/pg_connection.h"
#include "tests/storage/queue_store_backends.h"

namespace rgbaq::storage {
namespace {

TEST(QueueUrl, PathsSqliteAndPostgresUrlsAreToldApart) {
  EXPECT_EQ(parse_queue_url("/var/q.db").kind, QueueKind::kSqlite);
  EXPECT_EQ(parse_queue_url("sqlite:/var/q.db").target, "/var/q.db");
  EXPECT_EQ(parse_queue_url("sqlite:///var/q.db").target, "/var/q.db");
  EXPECT_EQ(parse_queue_url("postgresql://u@h/db").kind, QueueKind::kPostgres);
  EXPECT_EQ(parse_queue_url("postgres://u@h/db").target, "postgres://u@h/db") << "handed to libpq as given";
  EXPECT_THROW(parse_queue_url(""), std::invalid_argument);
  try {
    parse_queue_url("mysql://root:hunter2@h/db");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown scheme \"mysql\""), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
}

TEST(QueueUrl, PasswordsAreMaskedWhereverTheyAre) {
  EXPECT_EQ(redact_queue_url("postgresql://render:hunter2@db.studio:5433/rgbaq"), "postgresql://render:***@db.studio:5433/rgbaq");
  EXPECT_EQ(redact_queue_url("postgresql://render@db.studio/rgbaq"), "postgresql://render@db.studio/rgbaq");
  EXPECT_EQ(redact_queue_url("postgresql://db.studio:5433/rgbaq"), "postgresql://db.studio:5433/rgbaq");
  EXPECT_EQ(redact_queue_url("postgresql:///rgbaq?host=/run/pg&password=hunter2&sslmode=require"),
            "postgresql:///rgbaq?host=/run/pg&password=***&sslmode=require");
  EXPECT_EQ(redact_queue_url("postgresql://a:p%40ss@h/db"), "postgresql://a:***@h/db");
}

class PostgresOnly : public QueueStoreTest<PostgresBackend> {};

TEST_F(PostgresOnly, AConnectionErrorNamesTheQueueButNeverItsPassword) {
  // The right server, a database that is not there, a password in the URL.
  std::string url = backend().url();
  url.replace(url.find("rgbaq@"), 6, "rgbaq:hunter2@");
  url.replace(url.find(backend().database), backend().database.size(), "no_such_db");
  try {
    PostgresQueueStore s(url, {.reconnect_seconds = 0});
    FAIL();
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no_such_db"), std::string::npos) << what;
    EXPECT_NE(what.find("rgbaq:***@"), std::string::npos) << what;
    EXPECT_EQ(what.find("hunter2"), std::string::npos) << what;
  }
}

TEST_F(PostgresOnly, TheFactoryOpensItAndTwoDaemonsMigratingAtOnceAgree) {
  std::vector<std::future<int>> opening;
  for (int i = 0; i < 4; ++i) {
    opening.push_back(std::async(std::launch::async, [&] { return open_queue_store(backend().url())->schema_version(); }));
  }
  for (auto& f : opening) EXPECT_EQ(f.get(), PostgresQueueStore::kSchemaVersion);
  EXPECT_NE(open_queue_store(backend().url())->location().find("postgresql://rgbaq@/"), std::string::npos);
}

TEST_F(PostgresOnly, AServerRestartIsRiddenOutAndNothingIsLostOrDoneTwice) {
  auto s = open({.reconnect_seconds = 60});
  const int64_t w = s->register_worker({"h", "b", 1, "cpu", "cpu"});
  std::vector<NewJob> jobs;
  for (int i = 0; i < 20; ++i) {
    NewJob j;
    j.prompt = "p";
    j.seed = static_cast<uint64_t>(i);
    j.width = j.height = 64;
    j.output_path = "/o/" + std::to_string(i) + ".png";
    j.content_key = static_cast<uint64_t>(i);
    jobs.push_back(j);
  }
  s->submit({"r", "{}", "/o"}, jobs);
  auto job = s->claim(w);
  ASSERT_TRUE(job);
  shared_postgres_server().stop();  // every connection ends
  auto restart = std::async(std::launch::async, [] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    shared_postgres_server().start();
  });
  // Blocks, reconnecting with backoff, until the server is back; then goes on where it was.
  int done = 0;
  while (job) {
    ASSERT_TRUE(s->heartbeat(w, {job->id}));
    job = s->complete_and_claim(job->id, job->output_path, "{}", w, {});
    ++done;
  }
  restart.get();
  EXPECT_EQ(done, 20);
  EXPECT_EQ(s->counts()[static_cast<int>(JobState::kDone)], 20);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TEST_F(PostgresOnly, AConnectionTheServerTerminatesIsReopenedAndTheOperationGoesOn) {
  // pg_terminate_backend is what a fast shutdown does to each backend: "terminating connection due to
  // administrator command" (SQLSTATE 57P01), which may arrive as a statement's error on a connection
  // libpq still calls open. Every store call must ride it out, never fail with it.
  auto s = open({.reconnect_seconds = 30});
  const int64_t w = s->register_worker({"h", "b", 1, "cpu", "cpu"});
  NewJob j;
  j.prompt = "p";
  j.width = j.height = 64;
  j.output_path = "/o/0.png";
  s->submit({"r", "{}", "/o"}, {j});
  const auto terminate_others = [&] {
    backend().exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND "
                   "datname = current_database()");
  };
  terminate_others();
  const auto job = s->claim(w);
  ASSERT_TRUE(job);
  terminate_others();
  EXPECT_TRUE(s->heartbeat(w, {job->id}));
  terminate_others();
  EXPECT_EQ(s->fail(job->id, w, "once"), JobState::kQueued);
  EXPECT_EQ(s->job(job->id)->attempts, 1);
}

// A claim names the worker's cached prompts in an array. Left to choose, the server planned such a
// statement afresh at every run (a custom plan for that array looks cheaper than one for any array),
// which cost a claim about 1.5 ms. The queue's connection plans each statement once.
TEST_F(PostgresOnly, AStatementWithAnArrayIsPlannedOnceNotAtEveryRun) {
  auto s = open();  // creates the schema
  pg::Connection db(backend().url(), std::chrono::milliseconds(0));
  for (int i = 0; i < 8; ++i) {
    db.exec("SELECT id FROM jobs, unnest($1::bigint[]) AS k(key) WHERE state = 'queued' AND prompt_key = k.key "
            "ORDER BY id LIMIT 1",
            {"{" + std::to_string(i) + "}"}, "probe");
  }
  const auto plans = db.exec("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'probe'");
  ASSERT_EQ(plans.rows(), 1);
  EXPECT_EQ(plans.int64(0, 1), 0) << "custom plans: planned again for its parameters";
  EXPECT_EQ(plans.int64(0, 0), 8);
}

}  // namespace
}  // namespace rgbaq::storage
