// The alpha check in the daemon (issue 40): every rendered job's qa (ls jobs --json, the HTTP API, the
// PNG's rgbaq chunk) is what `rgbaq qa` says of its PNG, also for a job whose PNG was there already;
// the listings' --qa filters; re-seeding end to end: the tiny model's images are all cut off and
// fragmented (at 128 px its alpha is noise around one half), so a row re-seeded on cut_off gets exactly
// its reseed_max new jobs, each the next seed, each replacing the one before, one on empty none; their
// content keys are the submit's (a resubmit with --skip-duplicates skips them); and a SIGKILL right after
// a completion that queued a re-seed (the commit done, the PNG not yet renamed) loses nothing and
// doubles nothing.
#include <set>

#include "storage/png_file.h"
#include "storage/render_metadata.h"
#include "storage/sqlite/sqlite_queue_store.h"
#include "tests/daemon/http_client.h"

namespace rgbaq {
namespace {

json ls_jobs(const DaemonProcess& d, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"ls", "jobs", "--all", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = rgbaq(d, args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out)["jobs"];
}

// `rgbaq qa --json` of one file: its qa object.
json qa_of(const std::string& png) {
  const auto r = run_process({kRgbaq, "qa", "--json", png});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out)["images"][0]["qa"];
}

TEST(DaemonQa, EveryJobsQaIsWhatRgbaqQaSaysOfItsPngAlsoForAPngFoundThere) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const auto out = dir.path() / "out";
  write_file(dir.path() / "p.csv", "prompt,seed\na red fox,1-2\nan owl,7\n");
  ASSERT_EQ(rgbaq(d, {"submit", (dir.path() / "p.csv").string(), "--size", "128", "--out", out.string(), "--wait"}).exit_code, 0);
  // The same file again: its outputs are there, so the jobs are done from the files, not rendered.
  ASSERT_EQ(rgbaq(d, {"submit", (dir.path() / "p.csv").string(), "--size", "128", "--out", out.string(), "--wait"}).exit_code, 0);
  EXPECT_EQ(status(d)["counters"]["outputs_reused"], 3);
  const json jobs = ls_jobs(d);
  ASSERT_EQ(jobs.size(), 6u);
  for (const auto& j : jobs) {
    SCOPED_TRACE(j["id"]);
    ASSERT_EQ(j["state"], "done");
    const json expected = qa_of(j["output"]);
    EXPECT_EQ(j["qa"], expected);
    // The PNG's own record holds the same.
    const auto png = storage::read_png(j["output"].get<std::string>());
    EXPECT_EQ(json::parse(png.texts.at("rgbaq"))["qa"], expected);
    EXPECT_TRUE(j["replaces"].is_null());
    EXPECT_TRUE(j["reseed_on"].is_null());
  }
  // The filters: every image here is cut off; none is ok; an unknown flag is refused, naming the choices.
  EXPECT_EQ(ls_jobs(d, {"--qa", "cut_off"}).size(), 6u);
  EXPECT_EQ(ls_jobs(d, {"--qa", "ok"}).size(), 0u);
  const auto bad = rgbaq(d, {"ls", "jobs", "--qa", "cutoff"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("one of empty, no_alpha, cut_off, fragmented, fake_transparency"), std::string::npos) << bad.err;
  const auto csv = rgbaq(d, {"export", "1", "--format", "csv", "--qa", "fragmented"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.out.find(",\"cut_off,fragmented\",\n"), std::string::npos) << csv.out;
  // A contact sheet of the jobs with a flag: a file of its own, which names the filter and holds them all.
  const auto sheet = rgbaq(d, {"sheet", "1", "--qa", "cut_off"});
  ASSERT_EQ(sheet.exit_code, 0) << sheet.err;
  const auto sheet_png = storage::read_png(out / ".rgbaq" / "sheets" / "sheet_run1_qa-cut_off.png");
  const json legend = json::parse(sheet_png.texts.at("rgbaq-sheet"));
  EXPECT_EQ(legend["qa"], "cut_off");
  EXPECT_EQ(legend["cells"].size(), 3u) << legend;
  const auto none = rgbaq(d, {"sheet", "1", "--qa", "ok"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("has no jobs whose alpha check is ok"), std::string::npos) << none.err;
}

TEST(DaemonQa, ARowReseededOnAFlagGetsItsNextSeedsUpToItsMaximumAndNoMore) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const auto out = dir.path() / "out";
  // hero: its own reseed_on and reseed_max 2; ghost: re-seeded on empty, which no image here is;
  // imp: the submit's --reseed-on fragmented --reseed-max 1, two seeds both fragmented: one re-seed in all.
  write_file(dir.path() / "p.csv",
             "prompt,seed,name,reseed_on,reseed_max\n"
             "a red fox,10,hero,cut_off,2\n"
             "a grey ghost,3,ghost,empty,\n"
             "an imp,\"5,9\",imp,,\n");
  const auto submitted = rgbaq(d, {"submit", (dir.path() / "p.csv").string(), "--size", "128", "--out", out.string(),
                                   "--reseed-on", "fragmented", "--reseed-max", "1", "--wait"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err << log_tail(d);
  const json jobs = ls_jobs(d);
  std::map<std::string, json> by_file;
  for (const auto& j : jobs) {
    ASSERT_EQ(j["state"], "done") << j;
    by_file[fs::path(j["output"].get<std::string>()).filename().string()] = j;
  }
  // hero 10, then 11 and 12 (each the next seed above the row's highest), each replacing the one before.
  ASSERT_EQ(by_file.size(), 7u) << jobs;
  for (const char* f : {"hero_10.png", "hero_11.png", "hero_12.png", "ghost_3.png", "imp_5.png", "imp_9.png", "imp_10.png"}) {
    ASSERT_TRUE(by_file.count(f)) << f << " in " << jobs;
  }
  EXPECT_EQ(by_file["hero_11.png"]["replaces"], by_file["hero_10.png"]["id"]);
  EXPECT_EQ(by_file["hero_12.png"]["replaces"], by_file["hero_11.png"]["id"]);
  EXPECT_EQ(by_file["hero_10.png"]["replaced_by"], by_file["hero_11.png"]["id"]);
  EXPECT_TRUE(by_file["hero_12.png"]["replaced_by"].is_null()) << "the row has its 2";
  EXPECT_EQ(by_file["hero_12.png"]["reseed_on"], "cut_off");
  EXPECT_EQ(by_file["hero_12.png"]["reseed_max"], 2);
  EXPECT_TRUE(by_file["ghost_3.png"]["replaced_by"].is_null());
  EXPECT_EQ(by_file["ghost_3.png"]["reseed_on"], "empty");
  // imp: one of 5 and 9 (whichever finished first) is replaced by 10; the other is not.
  const json& imp10 = by_file["imp_10.png"];
  EXPECT_TRUE(imp10["replaces"] == by_file["imp_5.png"]["id"] || imp10["replaces"] == by_file["imp_9.png"]["id"]) << jobs;
  EXPECT_EQ(int(by_file["imp_5.png"]["replaced_by"].is_null()) + int(by_file["imp_9.png"]["replaced_by"].is_null()), 1) << jobs;
  EXPECT_TRUE(imp10["replaced_by"].is_null());
  EXPECT_EQ(imp10["reseed_on"], "fragmented");
  for (const auto& [f, j] : by_file) EXPECT_EQ(j["qa"], qa_of(j["output"])) << f;
  // ls runs counts both the replaced and the replacing jobs.
  const json runs = json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"];
  EXPECT_EQ(runs[0]["total"], 7);
  EXPECT_EQ(runs[0]["counts"]["done"], 7);
  // The re-seeded jobs' content keys are the submit's: resubmitting their rows with --skip-duplicates
  // leaves every one out.
  write_file(dir.path() / "again.csv", "prompt,seed,name\na red fox,10-12,hero\nan imp,\"5,9,10\",imp\n");
  const auto again = rgbaq(d, {"submit", (dir.path() / "again.csv").string(), "--size", "128", "--out", out.string(),
                               "--skip-duplicates", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["skipped"], 6) << again.out;
}

TEST(DaemonQa, ASubmitRefusesAnUnknownFlagNamingItsLineAndField) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  write_file(dir.path() / "p.csv", "prompt,reseed_on\nfox,cut_off\nowl,\"empty,cutof\"\n");
  const auto r = rgbaq(d, {"submit", (dir.path() / "p.csv").string(), "--out", (dir.path() / "o").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("p.csv:3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reseed_on"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'cutof'"), std::string::npos) << r.err;
  const auto option = rgbaq(d, {"submit", "--prompt", "fox", "--reseed-on", "blurry", "--out", (dir.path() / "o").string()});
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_NE(option.err.find("--reseed-on: unknown flag 'blurry'"), std::string::npos) << option.err;
  EXPECT_EQ(ls_jobs(d).size(), 0u);
}

// Over HTTP: a submit's defaults re-seed (JSON), the job JSON has each job's qa and links, the listing
// routes take a qa filter (and refuse an unknown one), and the run's CSV export has the flags.
TEST(DaemonQa, OverHttpTheSubmitReseedsAndTheListingsFilterByTheCheck) {
  HttpDaemon h;
  const auto out = h.dir.path() / "out";
  const auto submitted = h.post_json("/api/v1/runs", {{"rows", {{{"prompt", "a red fox"}, {"seed", 2}, {"name", "hero"}}}},
                                                      {"out_dir", out.string()},
                                                      {"defaults", {{"size", "128"}, {"reseed_on", {"cut_off"}}, {"reseed_max", 1}}}});
  ASSERT_EQ(submitted.status, 200) << submitted.body;
  ASSERT_EQ(rgbaq(h.d, {"watch", "1"}).exit_code, 0) << log_tail(h.d);
  const json jobs = h.get("/api/v1/runs/1/jobs?qa=cut_off").json_body()["jobs"];
  ASSERT_EQ(jobs.size(), 2u) << jobs;
  EXPECT_EQ(jobs[0]["output"], (out / "hero_2.png").string());
  EXPECT_EQ(jobs[1]["output"], (out / "hero_3.png").string());
  EXPECT_EQ(jobs[1]["replaces"], jobs[0]["id"]);
  EXPECT_EQ(jobs[0]["replaced_by"], jobs[1]["id"]);
  for (const auto& j : jobs) EXPECT_EQ(j["qa"], qa_of(j["output"]));
  EXPECT_EQ(h.get("/api/v1/jobs?qa=ok").json_body()["jobs"].size(), 0u);
  EXPECT_EQ(h.get("/api/v1/jobs/" + std::to_string(jobs[1]["id"].get<int64_t>())).json_body()["qa"], jobs[1]["qa"]);
  const auto bad = h.get("/api/v1/jobs?qa=cutoff");
  EXPECT_EQ(bad.status, 400) << bad.body;
  const auto csv = h.get("/api/v1/runs/1/export?format=csv&qa=cut_off");
  ASSERT_EQ(csv.status, 200) << csv.body;
  EXPECT_NE(csv.body.find(",\"cut_off,fragmented\"," + std::to_string(jobs[0]["id"].get<int64_t>()) + "\n"), std::string::npos) << csv.body;
}

// Killed right after the commit that completed a job and queued its re-seed (before the PNG's rename and
// before the worker could claim again): at the kill the queue holds both, and after a restart the run
// finishes with the first job done once, its PNG in place, and exactly one re-seeded job, rendered once.
TEST(DaemonQa, ASigkillBetweenACompletionAndTheNextClaimLosesNothingAndDoublesNothing) {
  TempDir dir;
  const auto out = dir.path() / "out";
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.env = {{"RGBAQ_TEST_SIGKILL_AFTER_COMPLETE", "a red fox"}}});
    const auto r = rgbaq(d, {"submit", "--prompt", "a red fox", "--name", "hero", "--seeds", "4", "--size", "128", "--out",
                             out.string(), "--reseed-on", "cut_off", "--reseed-max", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(d.wait_exit(std::chrono::seconds(120)), 128 + SIGKILL) << log_tail(d);
  }
  {
    storage::SqliteQueueStore store(dir.path() / "data" / "queue.db");
    const auto jobs = store.list_jobs(storage::JobQuery{});
    ASSERT_EQ(jobs.size(), 2u);
    EXPECT_EQ(jobs[0].state, storage::JobState::kDone);
    EXPECT_EQ(jobs[0].replaced_by, jobs[1].id);
    EXPECT_EQ(jobs[1].replaces, jobs[0].id);
    EXPECT_EQ(jobs[1].seed, 5u);
    // Queued (a claim polling at the very moment of the kill would have it running: recovery requeues it).
    EXPECT_TRUE(jobs[1].state == storage::JobState::kQueued || jobs[1].state == storage::JobState::kRunning);
    EXPECT_FALSE(fs::exists(out / "hero_4.png")) << "killed before the rename";
  }
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const auto w = rgbaq(d, {"watch", "1"});
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err << log_tail(d);
  const json jobs = ls_jobs(d);
  ASSERT_EQ(jobs.size(), 2u) << jobs;
  for (const auto& j : jobs) {
    EXPECT_EQ(j["state"], "done") << j;
    EXPECT_EQ(j["attempts"], 1) << j;
    const auto png = storage::read_png(j["output"].get<std::string>());
    EXPECT_EQ(storage::job_id_of(png), j["id"].get<int64_t>());
    EXPECT_EQ(j["qa"], qa_of(j["output"]));
  }
  EXPECT_EQ(pngs_in(out), (std::vector<fs::path>{out / "hero_4.png", out / "hero_5.png"}));
}

}  // namespace
}  // namespace rgbaq
