// A row's `name` (issue 42, item 16): kept as written when it is a safe file name (game and UI assets
// are called `Treasure_Chest`, `row_a`), refused with its line, column and field when it is not; only
// a prompt is slugged. Names that differ only in case are one file on macOS: refused within a file.
#include "jobs/output_name.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "jobs/job_file.h"

namespace rgbaq::jobs {
namespace {

const host::ImageSize kSize{256, 256};

ParseOptions options() {
  ParseOptions o;
  o.defaults.size = "256";
  o.random_seed = [] { return uint64_t{1000}; };
  return o;
}

JobFile parse_csv(std::string_view text) { return parse_job_file(text, FileFormat::kCsv, options()); }

std::string errors_of(const JobFile& f) {
  std::string all;
  for (const auto& e : f.errors) all += "\n  " + e.to_string("names.csv");
  return all;
}

// The one error of `f` on `line`, or a failure.
const FileError* error_on(const JobFile& f, int line) {
  for (const auto& e : f.errors) {
    if (e.line == line) return &e;
  }
  ADD_FAILURE() << "no error on line " << line << " among:" << errors_of(f);
  return nullptr;
}

TEST(OutputName, AGivenNameIsKeptAsWrittenOnlyAPromptIsSlugged) {
  EXPECT_EQ(output_file_name("a wooden chest", "row_a", 5, kSize), "row_a_5.png");
  EXPECT_EQ(output_file_name("a wooden chest", "Treasure_Chest", 5, kSize), "Treasure_Chest_5.png");
  EXPECT_EQ(output_file_name("x", "v1.2-final", 3, kSize), "v1.2-final_3.png");
  EXPECT_EQ(output_file_name("x", "-minus", 1, kSize), "-minus_1.png");
  EXPECT_EQ(output_file_name("x", "UI", 1, kSize), "UI_1.png");
  const std::string longest(kMaxNameLength, 'A');
  EXPECT_EQ(output_file_name("x", longest, 7, kSize), longest + "_7.png");
  // A prompt is slugged as before (lower case, '-' for other runs, a hash), so its outputs keep their names.
  const std::string derived = output_file_name("Treasure_Chest, gold", "", 5, kSize);
  EXPECT_EQ(derived.rfind("treasure-chest-gold-", 0), 0u) << derived;
  EXPECT_EQ(derived.size(), std::string("treasure-chest-gold-").size() + 8 + std::string("_5.png").size()) << derived;
  // The seed is the digits after the last '_': a name that ends in _<digits> is no other name's file.
  EXPECT_EQ(output_file_name("x", "a_1", 2, kSize), "a_1_2.png");
  EXPECT_EQ(output_file_name("y", "a", 12, kSize), "a_12.png");
}

TEST(OutputName, AnUncheckedUnsafeNameNeverBecomesAPath) {
  for (const std::string& bad : std::vector<std::string>{"../x", "a/b", ".hidden", "a b", "a\\b", std::string(kMaxNameLength + 1, 'a')}) {
    EXPECT_THROW(output_base_name("p", bad, kSize), std::invalid_argument) << bad;
  }
}

TEST(OutputName, GivenNamesInAFileAreKeptAsWritten) {
  const auto f = parse_csv("prompt,seed,name\n"
                           "a wooden chest,5,Treasure_Chest\n"
                           "a row,5,  row_a  \n"  // spaces around a cell are the spreadsheet's
                           "a red fox,5,\n");
  ASSERT_TRUE(f.errors.empty()) << errors_of(f);
  ASSERT_EQ(f.jobs.size(), 3u);
  EXPECT_EQ(f.jobs[0].name, "Treasure_Chest");
  EXPECT_EQ(f.jobs[1].name, "row_a");
  std::vector<std::string> files;
  for (const auto& j : f.jobs) files.push_back(output_file_name(j.prompt, j.name, j.seed, j.size, j.lora));
  EXPECT_EQ(files[0], "Treasure_Chest_5.png");
  EXPECT_EQ(files[1], "row_a_5.png");
  EXPECT_EQ(files[2].rfind("a-red-fox-", 0), 0u) << files[2];

  const auto jsonl = parse_job_file("{\"prompt\": \"a shield\", \"seed\": 5, \"name\": \"UI_Shield\"}\n"
                                    "{\"prompt\": \"a sword\", \"seed\": 5, \"name\": \"Sword 2\"}\n",
                                    FileFormat::kJsonl, options());
  ASSERT_EQ(jsonl.errors.size(), 1u) << errors_of(jsonl);
  EXPECT_EQ(jsonl.errors[0].line, 2);
  EXPECT_EQ(jsonl.errors[0].field, "name");
  EXPECT_EQ(jsonl.errors[0].message, "\"Sword 2\" is not a usable file name: a space (character 6) is not allowed: a name is kept as "
                                     "written, so it may hold only ASCII letters, digits, '_', '-' and '.' (say \"Sword_2\")");
  EXPECT_TRUE(jsonl.jobs.empty());
}

TEST(OutputName, UnsafeNamesAreRefusedWithLineColumnAndFieldAllInOnePass) {
  const std::string too_long(kMaxNameLength + 1, 'x');
  const auto f = parse_csv("prompt,seed,name\n"
                           "a,1,../x\n"          // 2
                           "b,1,a/b\n"           // 3
                           "c,1,.hidden\n"       // 4
                           "d,1," + too_long + "\n"  // 5
                           "e,1,\"a\x01z\"\n"    // 6
                           "f,1,Hero Shot\n"     // 7
                           "g,1,Caf\xc3\xa9\n"   // 8
                           "h,1,a\\b\n"          // 9
                           "i,1,\"\"\n"          // 10
                           "j,1,fine_name\n"     // 11
                           "k,1,a:b\n");         // 12
  EXPECT_TRUE(f.jobs.empty()) << "nothing of a bad file is queued";
  EXPECT_TRUE(f.rows.empty());
  EXPECT_EQ(f.errors.size(), 10u) << errors_of(f);
  struct Want {
    int line;
    std::string text;
  };
  const std::vector<Want> want = {
      {2, "names.csv:2:5: name: \"../x\" is not a usable file name: it starts with '.' (a hidden file; \".\" and \"..\" are "
          "folders) (say \"x\")"},
      {3, "names.csv:3:5: name: \"a/b\" is not a usable file name: '/' (character 2) is not allowed: a name is kept as written, "
          "so it may hold only ASCII letters, digits, '_', '-' and '.' (say \"a_b\")"},
      {4, "names.csv:4:5: name: \".hidden\" is not a usable file name: it starts with '.' (a hidden file; \".\" and \"..\" are "
          "folders) (say \"hidden\")"},
      {5, "names.csv:5:5: name: \"" + too_long.substr(0, 60) + "...\" is not a usable file name: it is 101 characters long; a "
          "name is at most 100"},
      {6, "names.csv:6:5: name: \"a\\x01z\" is not a usable file name: the control character \\x01 (character 2) is not "
          "allowed: a name is kept as written, so it may hold only ASCII letters, digits, '_', '-' and '.' (say \"a_z\")"},
      {7, "names.csv:7:5: name: \"Hero Shot\" is not a usable file name: a space (character 5) is not allowed: a name is kept "
          "as written, so it may hold only ASCII letters, digits, '_', '-' and '.' (say \"Hero_Shot\")"},
      {8, "names.csv:8:5: name: \"Caf\xc3\xa9\" is not a usable file name: the non-ASCII character U+00E9 (character 4) is not "
          "allowed: a name is kept as written, so it may hold only ASCII letters, digits, '_', '-' and '.'"},
      {9, "names.csv:9:5: name: \"a\\b\" is not a usable file name: '\\' (character 2) is not allowed: a name is kept as "
          "written, so it may hold only ASCII letters, digits, '_', '-' and '.' (say \"a_b\")"},
      {10, "names.csv:10:5: name: \"\" is not a usable file name: it is empty (leave the field out to name the files after "
           "the prompt)"},
      {12, "names.csv:12:5: name: \"a:b\" is not a usable file name: ':' (character 2) is not allowed: a name is kept as "
           "written, so it may hold only ASCII letters, digits, '_', '-' and '.' (say \"a_b\")"},
  };
  for (const auto& w : want) {
    if (const FileError* e = error_on(f, w.line)) {
      EXPECT_EQ(e->to_string("names.csv"), w.text);
    }
  }
  EXPECT_TRUE(parse_csv("prompt,name\na," + std::string(kMaxNameLength, 'x') + "\n").errors.empty()) << "the limit itself is usable";
}

TEST(OutputName, NamesThatDifferOnlyInCaseAreOneFileOnMacOsAndRefusedWhenTheySeeASeedTwice) {
  const auto f = parse_csv("prompt,seed,name\na chest,4-5,Chest\na box,5,chest\n");
  ASSERT_EQ(f.errors.size(), 1u) << errors_of(f);
  EXPECT_EQ(f.errors[0].to_string("names.csv"),
            "names.csv:3:9: name: \"chest\" with seed 5 and line 2's \"Chest\" differ only in case: on a case-insensitive file "
            "system (macOS, Windows) chest_5.png is one file with Chest_5.png; give each its own name");
  EXPECT_TRUE(f.jobs.empty());
  // Other seeds are other files, whatever the case.
  const auto g = parse_csv("prompt,seed,name\na chest,4,Chest\na box,5,chest\n");
  ASSERT_TRUE(g.errors.empty()) << errors_of(g);
  EXPECT_EQ(g.jobs.size(), 2u);
  // One spelling on two prompts is the clash it always was.
  const auto h = parse_csv("prompt,seed,name\na chest,5,Chest\na box,5,Chest\n");
  ASSERT_EQ(h.errors.size(), 1u) << errors_of(h);
  EXPECT_EQ(h.errors[0].message, "\"Chest\" with seed 5 names the image of line 2 too (another prompt or size); give each its own name");
  // Found in the same pass as other rows' errors, not after they are fixed.
  const auto both = parse_csv("prompt,seed,name\na chest,5,Chest\na box,5,chest\na cup,5,a cup\n");
  ASSERT_EQ(both.errors.size(), 2u) << errors_of(both);
  EXPECT_EQ(both.errors[0].line, 4);
  EXPECT_EQ(both.errors[1].line, 3);
  EXPECT_NE(both.errors[1].message.find("differ only in case"), std::string::npos) << both.errors[1].message;
  EXPECT_TRUE(both.rows.empty());
  EXPECT_EQ(both.duplicates_skipped, 0u);
  // A name ending in _<digits> shares no file with a shorter name's seed.
  EXPECT_TRUE(parse_csv("prompt,seed,name\na,2,a_1\nb,12,a\nc,1,a_1_2\n").errors.empty());
}

}  // namespace
}  // namespace rgbaq::jobs
