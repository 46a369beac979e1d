// The embedding cache's folder has a byte budget (issue 26, item 14): it grew ~1 MB a prompt at real
// dims (100-650 GB for one 100,000-prompt submit), and another model's entries stayed for ever.
// Through the real binaries, with --encoder-cache-disk-mb 1 (about twelve of the tiny model's long
// prompts): two stranded entries (another encoder's, one named the old way; both "used" later than
// the rest) go first, the folder stays within 1 MiB while 16 long prompts render, the prompt used
// again last survives the ones used before it (found on disk after a restart, no encoder run), and
// `rgbaq status` shows the folder.
#include <gtest/gtest.h>

#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

uint64_t folder_bytes(const fs::path& dir, size_t* files = nullptr) {
  uint64_t total = 0;
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) total += e.file_size(), ++n;
  if (files) *files = n;
  return total;
}

std::string long_prompt(int i) {
  std::string p = "prompt " + std::to_string(i) + ":";
  for (int k = 0; k < 60; ++k) p += " red fox and blue owl";
  return p;
}

void render(const DaemonProcess& d, int prompt, int seed, const fs::path& out) {
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"},
                       "prompt,seed\n\"" + long_prompt(prompt) + "\"," + std::to_string(seed) + "\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << log_tail(d);
}

TEST(DaemonEncoderCache, TheFolderStaysWithinItsBudgetStrandedEntriesFirstTheRecentlyUsedLast) {
  TempDir dir;
  const fs::path cache = dir.path() / "data" / "cache" / "embeddings", out = dir.path() / "out";
  fs::create_directories(cache);
  const fs::path other_model = cache / "ffffffffffffffff-0000000000000001.emb", old_name = cache / "0000000000000002.emb";
  for (const auto& f : {other_model, old_name}) {
    std::ofstream(f) << std::string(300 << 10, 'x');
    // Used "later" than anything this test renders: least-recently-used alone would keep them.
    fs::last_write_time(f, fs::file_time_type::clock::now() + std::chrono::hours(1));
  }
  const std::vector<std::string> args = {"--encoder-cache-disk-mb", "1"};
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = args});
    const json before = status(d)["encoder_cache"];
    EXPECT_EQ(before.value("disk_budget", 0), 1 << 20) << before.dump();
    EXPECT_EQ(before.value("disk_bytes", 0), 600 << 10) << before.dump();
    EXPECT_EQ(before.value("disk_entries", 0), 2) << before.dump();

    render(d, 0, 1, out);
    const uint64_t entry = folder_bytes(cache) - (600 << 10);
    std::cout << "one long prompt's entry: " << entry << " bytes\n";
    ASSERT_GT(entry, 64u << 10) << "a few entries fill the budget";
    ASSERT_LT(entry, 128u << 10);
    for (int p = 1; p <= 5; ++p) render(d, p, 1, out);  // 6 entries and the 2 stranded: over 1 MiB
    size_t files = 0;
    folder_bytes(cache, &files);
    EXPECT_EQ(fs::exists(other_model) + fs::exists(old_name), 1) << "one stranded entry went";
    EXPECT_EQ(files, 7u) << "and none of this encoder's";
    render(d, 0, 2, out);  // prompt 0 again (from memory): a use of its disk copy
    for (int p = 6; p <= 15; ++p) {
      render(d, p, 1, out);
      EXPECT_LE(folder_bytes(cache), 1u << 20) << "after prompt " << p;
    }
    EXPECT_FALSE(fs::exists(other_model));
    EXPECT_FALSE(fs::exists(old_name));
    const uint64_t bytes = folder_bytes(cache, &files);
    const json after = status(d)["encoder_cache"];
    EXPECT_EQ(after.value("disk_bytes", uint64_t{0}), bytes) << after.dump();
    EXPECT_EQ(after.value("disk_entries", size_t{0}), files) << after.dump();
    EXPECT_GT(bytes + 2 * entry, 1u << 20) << "about as many entries as the budget holds (they differ by a token or two)";
    const auto text = rgbaq(d, {"status"});
    char line[96];
    std::snprintf(line, sizeof line, "embedding cache on disk: %.1f of 1.0 MiB, %zu entries\n", bytes / 1048576.0, files);
    EXPECT_NE(text.out.find(line), std::string::npos) << text.out;
    d.signal(SIGTERM);
    ASSERT_EQ(d.wait_exit(), 0);
  }
  // After a restart (nothing in memory): prompt 0 comes from disk; prompt 1, the least recently used, was evicted.
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = args});
  render(d, 0, 3, out);
  EXPECT_EQ(status(d)["counters"].value("cache_disk_hits", 0), 1);
  EXPECT_EQ(status(d)["counters"].value("encoder_runs", 0), 0);
  render(d, 1, 3, out);
  EXPECT_EQ(status(d)["counters"].value("encoder_runs", 0), 1) << "prompt 1 had been evicted";
}

}  // namespace
}  // namespace rgbaq
