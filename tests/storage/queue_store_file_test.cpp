// The queue database as a file: one that is empty or foreign is refused (unless asked to create a queue
// in it), and one deleted or replaced under an open store refuses writes instead of acknowledging what
// could not be kept.
#include <gtest/gtest.h>

#include <fstream>

#include <SQLiteCpp/SQLiteCpp.h>

#include "storage/sqlite/sqlite_queue_store.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::storage {
namespace {

namespace fs = std::filesystem;

NewJob job(const std::string& prompt) {
  NewJob j;
  j.prompt = prompt;
  j.width = j.height = 256;
  j.output_path = "/out/" + prompt + ".png";
  j.content_key = std::hash<std::string>()(prompt);
  return j;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(QueueStoreFile, AnEmptyOrForeignFileIsRefusedNamingItUnlessAskedToCreate) {
  TempDir dir;
  const auto empty = dir.path() / "queue.db";
  std::ofstream(empty).close();  // zero bytes, as a truncation leaves it
  const std::string why = error_of([&] { SqliteQueueStore s(empty); });
  EXPECT_NE(why.find(empty.string() + ": exists but is not an rgbaq queue database"), std::string::npos) << why;
  EXPECT_NE(why.find("--create-queue"), std::string::npos) << why;
  EXPECT_EQ(fs::file_size(empty), 0u) << "the refused file is left as it was";

  const auto foreign = dir.path() / "other.db";
  { SQLite::Database(foreign.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE).exec("CREATE TABLE t (x)"); }
  EXPECT_NE(error_of([&] { SqliteQueueStore s(foreign); }).find("is not an rgbaq queue"), std::string::npos);

  SqliteQueueStore created(empty, {.create_over_invalid = true});
  EXPECT_EQ(created.submit({.name = "r"}, {job("a")}).inserted, 1u);
  // A missing file is created as before, and a real queue opens again without the flag.
  { SqliteQueueStore fresh(dir.path() / "new.db"); }
  SqliteQueueStore again(dir.path() / "new.db");
  EXPECT_EQ(again.schema_version(), SqliteQueueStore::kSchemaVersion);
}

TEST(QueueStoreFile, ADeletedOrReplacedDatabaseRefusesWrites) {
  TempDir dir;
  const auto db = dir.path() / "data" / "queue.db";
  fs::create_directories(db.parent_path());
  SqliteQueueStore store(db);
  ASSERT_EQ(store.submit({.name = "r"}, {job("a")}).inserted, 1u);
  fs::remove_all(dir.path() / "data");
  const std::string deleted = error_of([&] { store.submit({.name = "r"}, {job("b")}); });
  EXPECT_NE(deleted.find(db.string() + ": the queue database was deleted"), std::string::npos) << deleted;
  EXPECT_NE(error_of([&] { store.claim(1); }).find("was deleted"), std::string::npos);

  // Replaced: another queue file renamed over the path.
  const auto db2 = dir.path() / "queue2.db";
  SqliteQueueStore second(db2);
  { SqliteQueueStore other(dir.path() / "other.db"); }
  fs::rename(dir.path() / "other.db", db2);
  const std::string replaced = error_of([&] { second.set_paused(true); });
  EXPECT_NE(replaced.find(db2.string() + ": the queue database was replaced"), std::string::npos) << replaced;
}

}  // namespace
}  // namespace rgbaq::storage
