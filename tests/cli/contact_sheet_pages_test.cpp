// The contact sheet of a big run is bounded (issue 26, item 16): 20,000 jobs took `rgbaq sheet` to
// 2.15 GiB and then libpng's "Invalid IHDR data". Through the real binaries, on a paused daemon: the
// whole sheet is refused before anything is drawn, saying how to page it, in little memory (the
// process's peak RSS, measured); a page of it is written and read back within the bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <regex>

#include "cli/contact_sheet.h"
#include "storage/png_file.h"
#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

TEST(ContactSheetPages, ARunOf20000JobsIsRefusedSayingHowToPageAndAPageIsWritten) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);  // nothing renders: the cells say "not rendered yet"
  std::string csv = "prompt,seed\n";
  for (int p = 0; p < 1250; ++p) csv += "prompt " + std::to_string(p) + ",1-16\n";
  const fs::path out = dir.path() / "out";
  const auto submitted = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string()}, csv);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  ASSERT_EQ(status(d)["jobs"].value("queued", 0), 20000);

  // rgbaq's own footprint, measured in the same run: a build with the CUDA engine maps its libraries
  // into every rgbaq (~210 MiB of RSS before any work), one without it ~10 MiB. The bounds below are
  // what the sheet adds to that.
  const uint64_t baseline = rgbaq(d, {"status", "--json"}).max_rss_bytes;
  std::cout << "peak RSS of rgbaq status: " << (baseline >> 20) << " MiB\n";
  const auto whole = rgbaq(d, {"sheet", "1"});
  EXPECT_EQ(whole.exit_code, 2) << whole.out << whole.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(whole.err, m, std::regex("1250 rows x 16 columns at 128 px would be a (\\d+)x(\\d+) px sheet .*"
                                                        "page it: --per-page (\\d+) --page 1\\.\\.(\\d+)")))
      << whole.err;
  const int per_page = std::stoi(m[3]), pages = std::stoi(m[4]);
  EXPECT_EQ(pages, (1250 + per_page - 1) / per_page);
  EXPECT_GT(std::stoll(m[1]) * std::stoll(m[2]), int64_t(cli::kMaxSheetPixels)) << whole.err;
  std::cout << whole.err << "peak RSS of that rgbaq: " << (whole.max_rss_bytes >> 20) << " MiB\n";
  // The client reads the run a page of jobs at a time (20 MiB measured; the run's JSON whole was a few
  // hundred); the canvas it would need is 1,460 MiB: under 64 MiB, none was made.
  EXPECT_LT(whole.max_rss_bytes - std::min(baseline, whole.max_rss_bytes), 64u << 20) << "refused before a canvas was made";
  EXPECT_FALSE(fs::exists(out / ".rgbaq" / "sheets" / "sheet_run1.png"));

  const auto page = rgbaq(d, {"sheet", "1", "--per-page", std::to_string(per_page), "--page", "2"});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  std::cout << "peak RSS of rgbaq writing page 2: " << (page.max_rss_bytes >> 20) << " MiB\n";
  EXPECT_LT(page.max_rss_bytes - std::min(baseline, page.max_rss_bytes), 320u << 20);  // one page's canvas (~230 MiB; 275 MiB measured in all), a page of the jobs
  const auto png = storage::read_png_info(out / ".rgbaq" / "sheets" / "sheet_run1_p2.png");
  EXPECT_LE(uint64_t(png.width) * png.height, cli::kMaxSheetPixels);
  EXPECT_LE(png.height, cli::kMaxSheetSide);
  const json legend = json::parse(png.texts.at("rgbaq-sheet"));
  EXPECT_EQ(legend["page"], 2);
  EXPECT_EQ(legend["pages"], pages);
  ASSERT_EQ(legend["rows"].size(), size_t(per_page));
  EXPECT_EQ(legend["rows"][0], "prompt " + std::to_string(per_page));  // the second page starts after the first's rows
  EXPECT_EQ(legend["columns"].size(), 16u);

  const auto past = rgbaq(d, {"sheet", "1", "--per-page", std::to_string(per_page), "--page", std::to_string(pages + 1)});
  EXPECT_EQ(past.exit_code, 2);
  EXPECT_NE(past.err.find("has " + std::to_string(pages) + " pages of " + std::to_string(per_page) + " rows"), std::string::npos)
      << past.err;
}

}  // namespace
}  // namespace rgbaq
