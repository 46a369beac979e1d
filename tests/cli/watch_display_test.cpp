// The lines `rgbaq watch` draws, for given widths, against strings worked out by hand; the ETA arithmetic
// against the smoothing formula worked by hand; truncation by display columns (wide characters).
#include "cli/watch_display.h"

#include <gtest/gtest.h>

#include "common/printable_text.h"

namespace rgbaq::cli {
namespace {

const std::string kPrompt = "a red fox sitting on a mossy rock in the morning light, game asset";  // 66 columns

WatchView busy_view() {
  WatchView v;
  v.scope = "all runs";
  v.jobs.push_back({12, 3, kPrompt, 7, 512, 512, 5, 8, false});
  RunInProgress r;
  r.id = 3, r.total = 48, r.done = 12, r.failed = 1, r.eta_s = 200;
  v.runs.push_back(r);
  return v;
}

TEST(WatchDisplay, FiftyColumnsPutsThePromptOnItsOwnLine) {
  const auto lines = render_watch(busy_view(), 50, 20);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "rgbaqd  all runs  1 job in hand");
  // "run 3 job 12  " (14) + seed, size and step (27) leave 9 columns: the prompt gets a line of its own.
  EXPECT_EQ(lines[1], "run 3 job 12  " + kPrompt.substr(0, 35) + "…");
  EXPECT_EQ(lines[2], "  seed 7  512x512  step 5/8");
  // 12 of 48 on a 9-wide bar: 2 filled.
  EXPECT_EQ(lines[3], "run 3  [##-------] 12/48 done, 1 failed  ETA 3m20s");
  for (const auto& l : lines) EXPECT_LE(display_columns(l), 50) << l;
}

TEST(WatchDisplay, OneHundredTwentyColumnsHasOneLineAJobWithABar) {
  const auto lines = render_watch(busy_view(), 120, 20);
  ASSERT_EQ(lines.size(), 3u);
  // Bar 20 wide (5 of 8: 12 filled); the prompt gets 120 - 14 - 19 - 31 = 56 columns.
  EXPECT_EQ(lines[1], "run 3 job 12  " + kPrompt.substr(0, 55) + "…  seed 7  512x512  [############--------] step 5/8");
  EXPECT_EQ(display_columns(lines[1]), 120);
  EXPECT_EQ(lines[2], "run 3  [##########------------------------------] 12/48 done, 1 failed  ETA 3m20s");
}

TEST(WatchDisplay, DecodePausedAndDaemonGone) {
  WatchView v = busy_view();
  v.jobs[0].step = 8;
  v.jobs[0].decoding = true;
  v.jobs[0].label = "fox";
  v.paused = true;
  auto lines = render_watch(v, 120, 20);
  EXPECT_EQ(lines[0], "rgbaqd  all runs  1 job in hand  queue paused");
  EXPECT_EQ(lines[1], "run 3 job 12  fox  seed 7  512x512  [####################] decoding");
  EXPECT_EQ(lines[2], "run 3  [##########------------------------------] 12/48 done, 1 failed  paused");
  v.jobs.clear();
  v.daemon_gone = "rgbaqd went away 3s ago; reconnecting";
  lines = render_watch(v, 120, 20);
  EXPECT_EQ(lines[0], "rgbaqd  all runs  rgbaqd went away 3s ago; reconnecting");
  v.runs.clear();
  v.daemon_gone.clear();
  v.paused = false;
  lines = render_watch(v, 120, 20);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "no run in progress");
}

TEST(WatchDisplay, ManyJobsAreCutToTheTerminalsHeight) {
  WatchView v = busy_view();
  for (int i = 0; i < 5; ++i) v.jobs.push_back({100 + i, 3, "owl", 1, 256, 256, 1, 8, false});
  const auto lines = render_watch(v, 120, 4);
  ASSERT_EQ(lines.size(), 4u);
  // 1 header + 6 job lines + 1 run line = 8; 3 shown, 5 left out.
  EXPECT_EQ(lines[3], "… 5 more lines (a taller terminal shows them)");
}

TEST(WatchDisplay, SeveralWorkersEachHaveALine) {
  WatchView v = busy_view();
  v.jobs[0].label = "fox";
  v.jobs[0].worker = "w0 cuda:0";
  v.jobs.push_back({13, 3, "owl", 8, 512, 512, 2, 8, false, "w1 cuda:0"});
  v.idle_workers.push_back({"w2 cuda:1", "idle"});
  v.idle_workers.push_back({"w3 cuda:2", "out of service: CUDA device 2: the device is gone"});
  const auto lines = render_watch(v, 120, 20);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "rgbaqd  all runs  2 jobs in hand");
  EXPECT_EQ(lines[1], "w0 cuda:0  run 3 job 12  fox  seed 7  512x512  [############--------] step 5/8");
  EXPECT_EQ(lines[2], "w1 cuda:0  run 3 job 13  owl  seed 8  512x512  [#####---------------] step 2/8");
  EXPECT_EQ(lines[3], "w2 cuda:1  idle");
  EXPECT_EQ(lines[4], "w3 cuda:2  out of service: CUDA device 2: the device is gone");
  EXPECT_EQ(lines[5], "run 3  [##########------------------------------] 12/48 done, 1 failed  ETA 3m20s");
  const auto narrow = render_watch(v, 40, 20);
  ASSERT_EQ(narrow.size(), 8u) << "each job on two lines at 40 columns";
  EXPECT_EQ(narrow[6], "w3 cuda:2  out of service: CUDA device …") << "cut to the width like every line";
}

TEST(WatchDisplay, TextIsCutByColumnsAndMadeSafe) {
  EXPECT_EQ(fit_columns("a red fox", 5), "a re…");
  EXPECT_EQ(fit_columns("a red fox", 9), "a red fox");
  EXPECT_EQ(display_columns("狐狐狐"), 6);
  EXPECT_EQ(fit_columns("狐狐狐", 5), "狐狐…");
  EXPECT_EQ(fit_columns("狐狐狐", 4), "狐…");
  // Control characters escaped (never sent to the terminal as they are), printable UTF-8 kept.
  EXPECT_EQ(common::printable("a\nb\x1b[2Jc"), "a\\nb\\x1b[2Jc");
  EXPECT_EQ(common::printable("bad \xff byte"), "bad \\xff byte");
  EXPECT_EQ(common::printable("\x1b]52;c;SGk=\x07 \x1b]8;;http://x\x1b\\"), "\\x1b]52;c;SGk=\\x07 \\x1b]8;;http://x\\x1b\\");
  EXPECT_EQ(common::printable("csi \xc2\x9b" "2J, del \x7f, tab\t, cr\r"), "csi \\u009b2J, del \\x7f, tab\\t, cr\\r");
  EXPECT_EQ(common::printable("狐 é, \xc0\xaf overlong, \xe2\x82 cut"), "狐 é, \\xc0\\xaf overlong, \\xe2\\x82 cut");
  EXPECT_EQ(format_duration(45), "45s");
  EXPECT_EQ(format_duration(200), "3m20s");
  EXPECT_EQ(format_duration(7500), "2h05m");
}

TEST(WatchDisplay, EtaFromMeasuredStepsForThatSize) {
  StepTimes t;
  EXPECT_FALSE(t.image_s(256, 256).has_value()) << "nothing measured yet";
  t.step(256, 256, 8, 0.5);
  EXPECT_DOUBLE_EQ(*t.image_s(256, 256), 8 * 0.5);
  t.step(256, 256, 8, 1.0);  // smoothed: 0.7 * 0.5 + 0.3 * 1.0 = 0.65
  EXPECT_DOUBLE_EQ(*t.image_s(256, 256), 8 * 0.65);
  t.image_done(256, 256, 8 * 0.65 + 1.2);  // 1.2 s beyond the steps: decode, encode, write
  EXPECT_NEAR(*t.image_s(256, 256), 8 * 0.65 + 1.2, 1e-9);
  JobInHand j{1, 1, "fox", 7, 256, 256, 6, 8, false};
  EXPECT_NEAR(*t.rest_of_job_s(j), 2 * 0.65 + 1.2, 1e-9);
  j.decoding = true;
  EXPECT_NEAR(*t.rest_of_job_s(j), 1.2, 1e-9);
  EXPECT_FALSE(t.image_s(512, 512).has_value()) << "another size is its own measurement";
}

// A run of two sizes gets an ETA from the first size's steps (issue 27, item 7: "ETA ?" until every
// size had rendered a step), the unmeasured size scaled by its pixels and the ETA shown as a guess.
TEST(WatchDisplay, AnUnmeasuredSizeIsScaledFromAMeasuredOneAndShownAsAGuess) {
  StepTimes t;
  bool guessed = false;
  EXPECT_FALSE(t.image_s(512, 512, &guessed).has_value()) << "nothing to scale from";
  EXPECT_FALSE(guessed);
  t.step(256, 256, 8, 0.5);
  t.image_done(256, 256, 8 * 0.5 + 1.0);
  EXPECT_DOUBLE_EQ(*t.image_s(256, 256, &guessed), 5.0);
  EXPECT_FALSE(guessed) << "measured";
  EXPECT_DOUBLE_EQ(*t.image_s(512, 256, &guessed), 2 * 5.0);  // twice the pixels
  EXPECT_TRUE(guessed);
  t.step(1024, 1024, 8, 10.0);
  guessed = false;
  EXPECT_DOUBLE_EQ(*t.image_s(768, 768, &guessed), 8 * 10.0 * (768.0 * 768) / (1024.0 * 1024)) << "from the nearest size";
  EXPECT_DOUBLE_EQ(*t.image_s(128, 128, &guessed), 5.0 / 4);
  JobInHand j{1, 1, "fox", 7, 384, 384, 2, 8, false};
  EXPECT_DOUBLE_EQ(*t.rest_of_job_s(j, &guessed), (6 * 0.5 + 1.0) * 2.25);
  WatchView v = busy_view();
  v.runs[0].eta_guessed = true;
  const auto lines = render_watch(v, 120, 20);
  EXPECT_NE(lines.back().find("ETA ~3m20s"), std::string::npos) << lines.back();
}

}  // namespace
}  // namespace rgbaq::cli
