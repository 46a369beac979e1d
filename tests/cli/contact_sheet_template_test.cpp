// The contact sheet by template variables (issue 41): the axes' labels are the choices' values in
// their first appearance, "(empty)" and "(none)" where a job has an empty or no such choice, each job in
// the cell its choices name (worked out by hand below), the template splitting the rows where several
// are in one run, and the job ids kept through wrapping and paging.
#include <gtest/gtest.h>

#include "cli/contact_sheet.h"

namespace rgbaq::cli {
namespace {

SheetJob job(int64_t id, const std::string& prompt, const std::string& tmpl, std::map<std::string, std::string> choices, uint64_t seed = 1) {
  SheetJob j{prompt, seed, 64, 64, "queued", ""};
  j.id = id;
  j.template_text = tmpl;
  j.choices = std::move(choices);
  return j;
}

const std::vector<SheetJob> kRun = {
    job(1, "a red fox", "a {red|blue} {fox|owl}", {{"1", "red"}, {"2", "fox"}}),
    job(2, "a red owl", "a {red|blue} {fox|owl}", {{"1", "red"}, {"2", "owl"}}),
    job(3, "a blue fox", "a {red|blue} {fox|owl}", {{"1", "blue"}, {"2", "fox"}}),
    job(4, "a blue owl", "a {red|blue} {fox|owl}", {{"1", "blue"}, {"2", "owl"}}),
    job(5, "big chest", "{big|} chest", {{"1", "big"}}),
    job(6, "chest", "{big|} chest", {{"1", ""}}),
    job(7, "a lamp", "", {}),
};

// Where each job is: id -> (row, column).
std::map<int64_t, std::pair<int, int>> places(const SheetLayout& l) {
  std::map<int64_t, std::pair<int, int>> out;
  for (const auto& c : l.cells)
    if (c.job) out[c.job] = {c.row, c.column};
  return out;
}

TEST(ContactSheetTemplates, VariablesOnBothAxes) {
  const auto l = layout_sheet("run 1", kRun, SheetAxisChoice::template_variable("2"), SheetAxisChoice::template_variable("1"));
  EXPECT_EQ(l.columns, (std::vector<std::string>{"fox", "owl", "(none)"}));
  EXPECT_EQ(l.rows, (std::vector<std::string>{"red", "blue", "big", "(empty)", "(none)"}));
  // Three templates (the lamp's prompt is its own): they split the rows, and say so beside each.
  EXPECT_EQ(l.row_details, (std::vector<std::string>{"a {red|blue} {fox|owl}", "a {red|blue} {fox|owl}", "{big|} chest", "{big|} chest",
                                                     "a lamp"}));
  const std::map<int64_t, std::pair<int, int>> want = {{1, {0, 0}}, {2, {0, 1}}, {3, {1, 0}}, {4, {1, 1}},
                                                       {5, {2, 2}}, {6, {3, 2}}, {7, {4, 2}}};
  EXPECT_EQ(places(l), want);
  // 5 rows x 3 columns, 7 jobs: 8 places hold no job.
  EXPECT_EQ(l.cells.size(), 15u);

  // Kept through wrapping (2 columns a row) and paging.
  const auto wrapped = wrap_columns(l, 2);
  EXPECT_EQ(places(wrapped).at(5), std::make_pair(5, 0));  // row 2's second band
  EXPECT_EQ(places(sheet_page(wrapped, 2, 4)).at(5), std::make_pair(1, 0));
}

TEST(ContactSheetTemplates, SeedAcrossAVariableDownTheOtherChoicesSplitTheRows) {
  std::vector<SheetJob> jobs(kRun.begin(), kRun.begin() + 4);
  jobs.push_back(job(8, "a red fox", "a {red|blue} {fox|owl}", {{"1", "red"}, {"2", "fox"}}, 2));
  const auto l = layout_sheet("run 1", jobs, SheetAxis::kSeed, SheetAxisChoice::template_variable("1"));
  EXPECT_EQ(l.columns, (std::vector<std::string>{"seed 1", "seed 2"}));
  EXPECT_EQ(l.rows, (std::vector<std::string>{"red", "red", "blue", "blue"}));
  EXPECT_EQ(l.row_details, (std::vector<std::string>{"2=fox", "2=owl", "2=fox", "2=owl"}));
  EXPECT_EQ(places(l), (std::map<int64_t, std::pair<int, int>>{{1, {0, 0}}, {8, {0, 1}}, {2, {1, 0}}, {3, {2, 0}}, {4, {3, 0}}}));
}

TEST(ContactSheetTemplates, AxisProblems) {
  EXPECT_EQ(sheet_axis_problem(kRun, SheetAxisChoice::template_variable("style")),
            "no job has the template variable \"style\" (the run's variables: 1, 2)");
  EXPECT_EQ(sheet_axis_problem({kRun.back()}, SheetAxisChoice::template_variable("1")),
            "its jobs have no template variables (their prompts are no templates)");
  EXPECT_EQ(sheet_axis_problem(kRun, SheetAxisChoice::template_variable("2")), "");
  EXPECT_THROW(layout_sheet("r", kRun, SheetAxisChoice::template_variable("1"), SheetAxisChoice::template_variable("1")),
               std::invalid_argument);
  // A variable named like another axis (a wildcard called "seed"): the variable, not the seed.
  const auto l = layout_sheet("r", {job(1, "x a", "x __seed__", {{"seed", "a"}}), job(2, "x b", "x __seed__", {{"seed", "b"}})},
                              SheetAxisChoice::template_variable("seed"), SheetAxis::kPrompt);
  EXPECT_EQ(l.columns, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace rgbaq::cli
