// Prompt templates: counts and orders worked out by hand (nested groups, escapes, empty alternatives,
// wildcards in wildcards, LoRA tags in alternatives), the choices each expansion names, every error
// with its offset and words, a 10^12 template counted at once, and the sample draw against a Python
// implementation of SplitMix64 and Floyd's algorithm (the values below were printed by it).
#include "jobs/prompt_template.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <set>

namespace rgbaq::jobs {
namespace {

struct Expanded {
  std::string prompt, choices;
};

std::vector<Expanded> all_of(const PromptTemplate& t) {
  std::vector<Expanded> out;
  Expansion e;
  for (uint64_t i = 0; i < t.count(); ++i) {
    t.expand(i, e);
    out.push_back({e.prompt, e.choices_json()});
  }
  return out;
}

std::vector<std::string> prompts_of(const PromptTemplate& t) {
  std::vector<std::string> out;
  for (const auto& e : all_of(t)) out.push_back(e.prompt);
  return out;
}

// The error a template gives: its offset and message ("" when it parses).
std::pair<size_t, std::string> error_of(TemplateParser& p, std::string_view text) {
  try {
    p.parse(text);
  } catch (const TemplateError& e) {
    return {e.offset(), e.what()};
  }
  return {0, ""};
}

TEST(PromptTemplate, GroupsVaryLeftmostSlowest) {
  TemplateParser p(nullptr);
  const auto t = p.parse("a {red|blue|gold} {sword|shield}, icon");
  EXPECT_TRUE(t.is_template());
  EXPECT_EQ(t.count(), 6u);
  const auto all = all_of(t);
  const std::vector<std::string> want = {"a red sword, icon",  "a red shield, icon",  "a blue sword, icon",
                                         "a blue shield, icon", "a gold sword, icon", "a gold shield, icon"};
  EXPECT_EQ(prompts_of(t), want);
  EXPECT_EQ(all[3].choices, R"({"1":"blue","2":"shield"})");
}

TEST(PromptTemplate, NestedGroupsTakeEachAlternativesCombinationsInTurn) {
  TemplateParser p(nullptr);
  // Group 1 = {a {1|2}|b} has 2 + 1 = 3 combinations, group 3 = {x|y} has 2: 6 in all.
  const auto t = p.parse("{a {1|2}|b} {x|y}");
  EXPECT_EQ(t.count(), 6u);
  const auto all = all_of(t);
  const std::vector<std::string> want = {"a 1 x", "a 1 y", "a 2 x", "a 2 y", "b x", "b y"};
  EXPECT_EQ(prompts_of(t), want);
  // Groups are numbered by their opening braces: the outer 1, the nested 2, the last 3; a group inside
  // an alternative not taken is absent.
  EXPECT_EQ(all[2].choices, R"({"1":"a 2","2":"2","3":"x"})");
  EXPECT_EQ(all[5].choices, R"({"1":"b","3":"y"})");
  // Deeper: {p{q{r|s}|t}|u}: r, s under q; q, t under p; u: p q r, p q s, p t, u.
  EXPECT_EQ(prompts_of(p.parse("{p{q{r|s}|t}|u}")), (std::vector<std::string>{"pqr", "pqs", "pt", "u"}));
}

TEST(PromptTemplate, EmptyAlternativesAndEscapes) {
  TemplateParser p(nullptr);
  const auto dragon = p.parse("{|huge }dragon");
  EXPECT_EQ(dragon.count(), 2u);
  const auto d = all_of(dragon);
  EXPECT_EQ(d[0].prompt, "dragon");
  EXPECT_EQ(d[0].choices, R"({"1":""})");
  EXPECT_EQ(d[1].prompt, "huge dragon");
  EXPECT_EQ(d[1].choices, R"({"1":"huge"})");  // the value without its blanks
  EXPECT_EQ(p.parse("{||}x").count(), 3u);

  const auto escaped = p.parse(R"(\{not a group\} a\|b \\ {x\|y|z} \_\_w__)");
  EXPECT_TRUE(escaped.is_template());  // its text changes: \{ becomes {
  EXPECT_EQ(prompts_of(escaped), (std::vector<std::string>{R"({not a group} a|b \ x|y __w__)", R"({not a group} a|b \ z __w__)"}));
  EXPECT_EQ(all_of(escaped)[0].choices, R"({"1":"x|y"})");

  // No group, wildcard or escape: a prompt as written, '|' outside a group and a lone '\' included.
  for (const char* plain : {"a red fox | b", R"(C:\renders)", "snake__case and __init .py", "<lora:pixel-art:0.8> a chest", ""}) {
    const auto t = p.parse(plain);
    EXPECT_FALSE(t.is_template()) << plain;
    EXPECT_EQ(t.count(), 1u);
    EXPECT_EQ(prompts_of(t), std::vector<std::string>{plain});
  }
}

TEST(PromptTemplate, LoraTagsInAlternativesArePlainText) {
  TemplateParser p(nullptr);
  const auto t = p.parse("{<lora:pixel-art:0.8> |<lora:ink:0.5> |}a sword");
  EXPECT_EQ(prompts_of(t), (std::vector<std::string>{"<lora:pixel-art:0.8> a sword", "<lora:ink:0.5> a sword", "a sword"}));
}

TEST(PromptTemplate, WildcardsInWildcardsNamedByTheirPath) {
  auto files = WildcardSet::from_texts({{"style", "pixel art\n# a comment\n\n  {flat|cel} shaded __color__  \n"},
                                        {"color", "red\r\nblue\n"}},
                                       "/home/ann/.config/rgbaq/wildcards");
  TemplateParser p(&files);
  const auto t = p.parse("__style__, icon");
  // style: "pixel art" (1) + "{flat|cel} shaded __color__" (2 x 2 = 4) = 5.
  EXPECT_EQ(t.count(), 5u);
  const auto all = all_of(t);
  const std::vector<std::string> want = {"pixel art, icon", "flat shaded red, icon", "flat shaded blue, icon",
                                         "cel shaded red, icon", "cel shaded blue, icon"};
  EXPECT_EQ(prompts_of(t), want);
  EXPECT_EQ(all[0].choices, R"({"style":"pixel art"})");
  EXPECT_EQ(all[2].choices, R"({"style":"flat shaded blue","style.1":"flat","style.color":"blue"})");

  // The same wildcard twice: two choices, the second numbered; each varies on its own (2 x 2).
  const auto twice = p.parse("a __color__ {cat|dog} and a __color__ bird");
  EXPECT_EQ(twice.count(), 8u);
  EXPECT_EQ(all_of(twice)[5].prompt, "a blue cat and a blue bird");  // 5 = 1*4 + 0*2 + 1
  EXPECT_EQ(all_of(twice)[5].choices, R"({"color":"blue","1":"cat","color#2":"blue"})");
}

TEST(PromptTemplate, TenToTheTwelveIsCountedAtOnceAndMoreSaturates) {
  TemplateParser p(nullptr);
  std::string twelve, twenty;
  for (int i = 0; i < 12; ++i) twelve += "{0|1|2|3|4|5|6|7|8|9}";
  for (int i = 0; i < 20; ++i) twenty += "{0|1|2|3|4|5|6|7|8|9}";
  const auto t0 = std::chrono::steady_clock::now();
  const auto t = p.parse(twelve);
  EXPECT_EQ(t.count(), 1'000'000'000'000u);
  EXPECT_EQ(p.parse(twenty).count(), UINT64_MAX);  // 10^20 > 2^64
  // Any one combination is decoded without the others: the digits of its index.
  Expansion e;
  t.expand(123'456'789'012u, e);
  EXPECT_EQ(e.prompt, "123456789012");
  t.expand(999'999'999'999u, e);
  EXPECT_EQ(e.prompt, "999999999999");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
}

TEST(PromptTemplate, ErrorsSayWhereAndWhat) {
  auto files = WildcardSet::from_texts({{"empty", "# only a comment\n\n   \n"},
                                        {"broken", "fine\n  a {b|c\n"},
                                        {"a", "x __b__\n"},
                                        {"b", "y __a__\n"}},
                                       "/w");
  TemplateParser p(&files);
  auto [at, what] = error_of(p, "a {b|c");
  EXPECT_EQ(at, 2u);
  EXPECT_NE(what.find("this '{' is never closed"), std::string::npos) << what;
  std::tie(at, what) = error_of(p, "a {b} c} d");
  EXPECT_EQ(at, 7u);
  EXPECT_NE(what.find("a '}' that closes no '{'"), std::string::npos) << what;
  std::tie(at, what) = error_of(p, "x __nope__");
  EXPECT_EQ(at, 2u);
  EXPECT_EQ(what, "unknown wildcard __nope__: there is no nope.txt in /w");
  std::tie(at, what) = error_of(p, "__empty__");
  EXPECT_EQ(what, "wildcard __empty__: /w/empty.txt has no options (each of its lines is blank or a # comment)");
  // A fault in a wildcard's file: its line and column there (the '{' of "  a {b|c" is column 5).
  std::tie(at, what) = error_of(p, "an __broken__");
  EXPECT_EQ(at, 3u);
  EXPECT_EQ(what.rfind("in __broken__, /w/broken.txt:2:5: this '{' is never closed", 0), 0u) << what;
  std::tie(at, what) = error_of(p, "z __a__");
  EXPECT_EQ(at, 2u);
  EXPECT_NE(what.find("a wildcard cycle: __a__ -> __b__ -> __a__"), std::string::npos) << what;
  EXPECT_EQ(error_of(p, "{a|{b|{c").first, 6u) << "the innermost unclosed '{'";
  std::string deep(kMaxGroupNesting + 1, '{');
  EXPECT_NE(error_of(p, deep).second.find("groups nest more than 32 deep"), std::string::npos);
  TemplateParser none(nullptr);
  EXPECT_EQ(error_of(none, "__style__").second, "unknown wildcard __style__: no wildcard folder was given");
}

TEST(PromptTemplate, WildcardsNestEightDeepAndNoMore) {
  // w1 names w2, ..., w8 names w9; w9 is a plain option. Reached from w2, 8 levels; from w1, 9.
  std::map<std::string, std::string> texts;
  for (int i = 1; i <= 8; ++i) texts["w" + std::to_string(i)] = "w" + std::to_string(i) + " __w" + std::to_string(i + 1) + "__\n";
  texts["w9"] = "end\n";
  auto files = WildcardSet::from_texts(texts, "/w");
  TemplateParser p(&files);
  const auto [at, what] = error_of(p, "__w1__");
  EXPECT_EQ(at, 0u);
  EXPECT_NE(what.find("wildcards nest more than 8 deep: __w1__ -> __w2__ -> __w3__ -> __w4__ -> __w5__ -> __w6__ -> "
                      "__w7__ -> __w8__ -> __w9__"),
            std::string::npos)
      << what;
  EXPECT_EQ(prompts_of(p.parse("__w2__")), std::vector<std::string>{"w2 w3 w4 w5 w6 w7 w8 end"});
  // w2 parsed (8 deep) before, then reached from one more level: refused too.
  TemplateParser q(&files);
  q.parse("__w2__");
  EXPECT_NE(error_of(q, "__w1__").second.find("nest more than 8 deep"), std::string::npos);
}

TEST(PromptTemplate, AnExpansionOverTheLimitsIsRefusedWhenParsed) {
  // One combination of 10^11 bytes: refused at once, in b (its 1001st __c__, column 6001, takes its
  // choices over 1000), reached from a's first __b__, reached from the template's __a__.
  std::string a, b;
  for (int i = 0; i < 700'000; ++i) a += "__b__ ", b += "__c__ ";
  auto files = WildcardSet::from_texts({{"a", a}, {"b", b}, {"c", "x"}}, "");
  TemplateParser p(&files);
  const auto t0 = std::chrono::steady_clock::now();
  auto [at, what] = error_of(p, "fox __a__");
  EXPECT_EQ(at, 4u);
  EXPECT_EQ(what, "in __a__, a.txt:1:1: in __b__, b.txt:1:6001: with this, one expansion records up to 1001 choices; "
                  "a prompt may have at most 1000");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  // Bytes: 66 of a 1000-byte option and the 65 spaces between them are 66065, over 65536.
  std::string many;
  for (int i = 0; i < 100; ++i) many += "{__long__|x} ";
  auto longs = WildcardSet::from_texts({{"long", std::string(1000, 'y')}}, "");
  TemplateParser q(&longs);
  std::tie(at, what) = error_of(q, many);
  EXPECT_EQ(at, 65u * 13);
  EXPECT_EQ(what, "with this, one expansion is up to 66065 bytes long; a prompt may have at most 65536");
  // Nested choices: each level's value holds the levels inside it. __n__ in 31 groups: 32 values of
  // up to 7000 bytes (224000); two of it in one more group each: 2 * 33 * 7000 = 462000.
  std::string nest = std::string(7000, 'z');
  auto deep = WildcardSet::from_texts({{"n", nest}}, "");
  TemplateParser r(&deep);
  std::string nested = "__n__";
  for (int i = 0; i < 31; ++i) nested = "{" + nested + "|}";
  EXPECT_EQ(r.parse(nested).count(), 32u);
  std::tie(at, what) = error_of(r, "{" + nested + "|} {" + nested + "|}");
  EXPECT_EQ(at, nested.size() + 4);
  EXPECT_EQ(what, "with this, one expansion records choices of up to 462000 bytes in all; a prompt's may have at most 262144");
}

TEST(PromptTemplate, ChoicesSortNumbersByNumberThenNames) {
  std::vector<std::pair<std::string, std::string>> c = {{"style", "s"}, {"10", "t"}, {"", "e"}, {"2", "w"}, {"color", "c"}, {"1", "o"}};
  sort_choices(c);
  EXPECT_EQ(c, (std::vector<std::pair<std::string, std::string>>{{"1", "o"}, {"2", "w"}, {"10", "t"}, {"", "e"}, {"color", "c"}, {"style", "s"}}));
}

TEST(PromptTemplate, SampleMatchesThePythonReference) {
  // Python: SplitMix64 (seed 0's first output 0xe220a8397b1dcdaf, the published vector) and Floyd.
  EXPECT_EQ(sample_combinations(100, 5, 42), (std::vector<uint64_t>{6, 45, 50, 84, 85}));
  EXPECT_EQ(sample_combinations(1'000'000'000'000u, 4, 7),
            (std::vector<uint64_t>{372595575182u, 600913947754u, 746832225447u, 928301472203u}));
  EXPECT_EQ(sample_combinations(10, 9, 1), (std::vector<uint64_t>{0, 1, 2, 3, 5, 6, 7, 8, 9}));
  EXPECT_EQ(sample_combinations(3, 5, 1), (std::vector<uint64_t>{0, 1, 2}));  // all of them

  // Distinct, in range, the same for the same seed, another for another.
  const auto a = sample_combinations(1'000'000'000'000u, 20'000, 11), b = sample_combinations(1'000'000'000'000u, 20'000, 11),
             c = sample_combinations(1'000'000'000'000u, 20'000, 12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(std::set<uint64_t>(a.begin(), a.end()).size(), 20'000u);
  EXPECT_LT(a.back(), 1'000'000'000'000u);
}

TEST(WildcardSet, OptionsNamesAndFolder) {
  const auto options = wildcard_options("\xEF\xBB\xBF" "one\n# two\n\n\t three  \r\n  #four\nfive");
  ASSERT_EQ(options.size(), 3u);
  EXPECT_EQ(options[1].text, "three");
  EXPECT_EQ(options[1].line, 4);
  EXPECT_EQ(options[1].column, 3);
  EXPECT_EQ(options[2].line, 6);
  for (const char* good : {"style", "my_style-2", "animals/cats", "A"}) EXPECT_TRUE(is_wildcard_name(good)) << good;
  for (const char* bad : {"", "a b", "../x", "a/", "/a", "a//b", "a.b", "é"}) EXPECT_FALSE(is_wildcard_name(bad)) << bad;

  // The default folder: $XDG_CONFIG_HOME/rgbaq/wildcards, else ~/.config/rgbaq/wildcards.
  const char* before = std::getenv("XDG_CONFIG_HOME");
  const std::string saved = before ? before : "";
  setenv("XDG_CONFIG_HOME", "/cfg", 1);
  EXPECT_EQ(default_wildcard_dir("/home/ann"), "/cfg/rgbaq/wildcards");
  setenv("XDG_CONFIG_HOME", "", 1);
  EXPECT_EQ(default_wildcard_dir("/home/ann"), "/home/ann/.config/rgbaq/wildcards");
  if (before) setenv("XDG_CONFIG_HOME", saved.c_str(), 1);
  else unsetenv("XDG_CONFIG_HOME");

  auto missing = WildcardSet::from_folder("/nonexistent/rgbaq-wildcards");
  std::string why;
  EXPECT_EQ(missing.read("style", why), nullptr);
  EXPECT_EQ(why, "there is no style.txt in /nonexistent/rgbaq-wildcards (that folder does not exist: --wildcards DIR names another)");
}

}  // namespace
}  // namespace rgbaq::jobs
