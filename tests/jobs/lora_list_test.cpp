// LoRAs in job files: the `lora` field's "name:weight;..." items, the prompt's <lora:name:weight> tags
// (taken out of the text the tokenizer sees, the prompt kept as written), --lora for rows that name
// none, every mistake an error with its line, column and field, and the LoRA set in the job's keys.
#include "jobs/lora_list.h"

#include <gtest/gtest.h>

#include <map>

#include "jobs/job_file.h"
#include "jobs/output_name.h"

namespace rgbaq::jobs {
namespace {

ParseOptions options() {
  ParseOptions o;
  o.defaults.size = "256";
  o.defaults.seeds = "1";
  o.check_lora = [](const std::string& name) { return name == "missing" ? "LoRA \"missing\" not found" : ""; };
  o.check_prompt = [](const std::string& prompt) {
    return prompt.find('<') != std::string::npos ? "the tokenizer saw a tag: " + prompt : "";
  };
  return o;
}

bool has_error(const JobFile& f, int line, int column, const std::string& field, const std::string& fragment) {
  for (const auto& e : f.errors) {
    if (e.line == line && e.column == column && e.field == field && e.message.find(fragment) != std::string::npos) return true;
  }
  return false;
}

std::string errors_of(const JobFile& f) {
  std::string all;
  for (const auto& e : f.errors) all += "\n  " + e.to_string("f");
  return all;
}

TEST(LoraList, ItemsWeightsAndTheirCanonicalText) {
  std::string error;
  const auto items = parse_lora_list(" pixel-art:0.8; outline:-0.25 ;plain;", error);
  ASSERT_TRUE(items) << error;
  ASSERT_EQ(items->size(), 3u);
  EXPECT_EQ((*items)[0].name, "pixel-art");
  EXPECT_EQ((*items)[0].weight, 0.8f);
  EXPECT_EQ((*items)[1].weight, -0.25f);
  EXPECT_EQ((*items)[2].name, "plain");
  EXPECT_EQ((*items)[2].weight, 1.0f);  // no weight: 1
  EXPECT_EQ(lora_list_string(*items), "pixel-art:0.8;outline:-0.25;plain:1");
  const auto again = parse_lora_list(lora_list_string(*items), error);  // the stored form reads back the same
  ASSERT_TRUE(again);
  EXPECT_EQ(lora_list_string(*again), lora_list_string(*items));
  EXPECT_TRUE(parse_lora_list("  ", error)->empty());
  for (const char* bad : {"a:x", "a:11", "a:nan", "a:1;;b:1", "../up:1", "dir/x:1", "a\\b", ":1", ".hidden:1", "a:1;a:2"}) {
    EXPECT_FALSE(parse_lora_list(bad, error)) << bad;
  }
  parse_lora_list("dir/x:1", error);
  EXPECT_NE(error.find("path separator"), std::string::npos) << error;
  parse_lora_list("a:1;a:0.5", error);
  EXPECT_NE(error.find("named twice"), std::string::npos) << error;
}

TEST(LoraList, PromptTagsAreTakenOutOfTheTokenizerText) {
  std::string error;
  const auto p = split_prompt_loras("<lora:pixel-art:0.7> a red fox, <lora:outline:0.3> game asset", error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->text, "a red fox,  game asset");
  ASSERT_EQ(p->loras.size(), 2u);
  EXPECT_EQ(p->loras[1].name, "outline");
  EXPECT_EQ(p->loras[1].weight, 0.3f);
  EXPECT_EQ(prompt_text("no tags <b>here</b>"), "no tags <b>here</b>");
  EXPECT_FALSE(split_prompt_loras("a <lora:x:1", error));
  EXPECT_NE(error.find("no closing"), std::string::npos);
  EXPECT_FALSE(split_prompt_loras("a <lora:x/y:1>", error));
}

TEST(LoraJobFile, FieldTagsAndDefaultMakeEachJobsSetAndThePromptStaysAsWritten) {
  ParseOptions o = options();
  o.defaults.lora = "house:0.5";
  const auto f = parse_job_file(
      "prompt,lora\n"
      "a fox,style:0.8;detail:0.2\n"
      "<lora:style:0.6> a cat,\n"
      "a dog,\n"
      "\"<lora:tag:1> a bird\",style:0.1\n",
      FileFormat::kCsv, o);
  ASSERT_TRUE(f.errors.empty()) << errors_of(f);
  ASSERT_EQ(f.jobs.size(), 4u);
  EXPECT_EQ(f.jobs[0].lora, "style:0.8;detail:0.2");
  EXPECT_EQ(f.jobs[1].lora, "style:0.6");
  EXPECT_EQ(f.jobs[1].prompt, "<lora:style:0.6> a cat");  // as written
  EXPECT_EQ(f.jobs[2].lora, "house:0.5");                 // names none: the default
  EXPECT_EQ(f.jobs[3].lora, "style:0.1;tag:1");           // the field's, then the prompt's
  // The same prompt and seed with another LoRA set is another image: its own key and file name.
  EXPECT_NE(content_key("a", 1, {256, 256}, "", "/o", "style:0.8"), content_key("a", 1, {256, 256}, "", "/o"));
  EXPECT_NE(output_file_name("a", "", 1, {256, 256}, "style:0.8"), output_file_name("a", "", 1, {256, 256}));
  EXPECT_EQ(output_file_name("a", "", 1, {256, 256}, ""), output_file_name("a", "", 1, {256, 256}));
}

TEST(LoraJobFile, JsonlFieldAndSameRowWithOtherLorasIsNotADuplicate) {
  const auto f = parse_job_file(
      "{\"prompt\": \"a fox\", \"lora\": \"style:0.8\"}\n"
      "{\"prompt\": \"a fox\"}\n"
      "{\"prompt\": \"a fox\", \"lora\": \"style:0.8\"}\n",
      FileFormat::kJsonl, options());
  ASSERT_TRUE(f.errors.empty()) << errors_of(f);
  EXPECT_EQ(f.jobs.size(), 2u);  // the third is the first again
  EXPECT_EQ(f.duplicates_skipped, 1u);
  EXPECT_EQ(f.jobs[0].lora, "style:0.8");
  EXPECT_EQ(f.jobs[1].lora, "");
  const auto typed = parse_job_file("{\"prompt\": \"a\", \"lora\": 3}\n", FileFormat::kJsonl, options());
  EXPECT_TRUE(has_error(typed, 1, 0, "lora", "must be a string")) << errors_of(typed);
}

TEST(LoraJobFile, MistakesAreErrorsWithLineColumnAndFieldAndNothingIsKept) {
  ParseOptions o = options();
  const auto f = parse_job_file(
      "prompt,lora\n"
      "a fox,style:x\n"
      "a cat,../style:1\n"
      "a dog,missing:1\n"
      "<lora:missing:1> a bird,\n"
      "<lora:style:1> a cow,style:1\n"
      "a pig <lora:broken,\n"
      "fine,style:1\n",
      FileFormat::kCsv, o);
  EXPECT_TRUE(has_error(f, 2, 7, "lora", "is not a number")) << errors_of(f);
  EXPECT_TRUE(has_error(f, 3, 7, "lora", "path separator")) << errors_of(f);
  EXPECT_TRUE(has_error(f, 4, 7, "lora", "not found")) << errors_of(f);
  EXPECT_TRUE(has_error(f, 5, 1, "prompt", "not found")) << errors_of(f);
  EXPECT_TRUE(has_error(f, 6, 1, "prompt", "in the lora field and in the prompt")) << errors_of(f);
  EXPECT_TRUE(has_error(f, 7, 1, "prompt", "no closing")) << errors_of(f);
  EXPECT_EQ(f.errors.size(), 6u) << errors_of(f);  // the tokenizer check saw no tag anywhere
  EXPECT_TRUE(f.jobs.empty());
  o.defaults.lora = "missing:1";
  const auto d = parse_job_file("prompt\na\n", FileFormat::kCsv, o);
  EXPECT_TRUE(has_error(d, 0, 0, "--lora", "not found")) << errors_of(d);
}

// The check reads a file's header (the daemon's): once per distinct name in a submit, not once per row,
// and every row naming a bad one still gets its error.
TEST(LoraJobFile, EachDistinctLoraIsCheckedOnceHoweverManyRowsNameIt) {
  ParseOptions o = options();
  std::map<std::string, int> checks;
  o.check_lora = [&](const std::string& name) {
    ++checks[name];
    return name == "missing" ? "LoRA \"missing\" not found" : "";
  };
  o.defaults.lora = "style:1";
  std::string text = "prompt,lora\n";
  // 50 rows name the missing one (a file's errors stop after kMaxFileErrors, so under that).
  for (int i = 0; i < 1000; ++i) text += "row " + std::to_string(i) + (i % 20 == 1 ? ",missing:1\n" : ",style:0.5;detail:1\n");
  text += "<lora:missing:1> a tag,\n";
  const auto f = parse_job_file(text, FileFormat::kCsv, o);
  EXPECT_EQ(f.errors.size(), 51u) << errors_of(f).substr(0, 500);
  EXPECT_TRUE(has_error(f, 1002, 1, "prompt", "not found")) << errors_of(f).substr(0, 500);
  EXPECT_EQ(checks, (std::map<std::string, int>{{"detail", 1}, {"missing", 1}, {"style", 1}}));
}

}  // namespace
}  // namespace rgbaq::jobs
