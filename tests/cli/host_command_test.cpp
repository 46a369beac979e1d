// `rgbaq host ...` through the real binary: values against torch's published outputs and the host
// library, usage errors with exit code 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "host/noise.h"
#include "host/rope.h"
#include "tests/run_process.h"

namespace rgbaq {
namespace {

const std::string kRgbaq = RGBAQ_CLI_PATH;

std::vector<float> parse_lines(const std::string& text) {
  std::vector<float> values;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) values.push_back(std::strtof(line.c_str(), nullptr));
  return values;
}

std::vector<float> parse_f32(const std::string& bytes) {
  std::vector<float> values(bytes.size() / 4);
  std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

TEST(HostCommand, NoiseTextRoundTripsTorchsPublishedValues) {
  const auto r = run_process({kRgbaq, "host", "noise", "--seed", "42", "--size", "128"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto values = parse_lines(r.out);
  ASSERT_EQ(values.size(), 64u * 64);
  // The blocks of 16 are independent, so the first 64 values of any draw are randn(64)'s.
  EXPECT_EQ(values[0], static_cast<float>(1.9269152879714966));
  EXPECT_EQ(values[7], static_cast<float>(-1.6046669483184814));
  EXPECT_EQ(values[63], static_cast<float>(1.3835493326187134));
  EXPECT_EQ(values, host::initial_noise(42, {128, 128}));
}

TEST(HostCommand, NoisePackedAndF32) {
  const auto r = run_process({kRgbaq, "host", "noise", "--seed", "18446744073709551615", "--size", "256x128",
                              "--packed", "--format", "f32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_f32(r.out), host::initial_tokens(~0ull, {256, 128}));
}

TEST(HostCommand, RopePrintsFourTensorsInOrder) {
  const auto r = run_process({kRgbaq, "host", "rope", "--text-len", "9", "--size", "128", "--format", "f32"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto values = parse_f32(r.out);
  const auto want = host::build_rope(host::RopeTables::from_formula(), 9, {128, 128});
  ASSERT_EQ(values.size(), (9u + 64u) * 64 * 2);
  std::vector<float> all;
  for (const auto* v : {&want.txt_cos, &want.txt_sin, &want.img_cos, &want.img_sin}) all.insert(all.end(), v->begin(), v->end());
  EXPECT_EQ(values, all);
}

TEST(HostCommand, SigmasAndTimesteps) {
  const auto r = run_process({kRgbaq, "host", "sigmas", "--timesteps"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto values = parse_lines(r.out);
  ASSERT_EQ(values.size(), 17u);
  EXPECT_EQ(values[1], 0.978453f);
  EXPECT_EQ(values[7], 0.414568f);
  EXPECT_EQ(values[8], 0.0f);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(values[9 + i], values[i]);  // t equals sigma on the Turbo grid
}

TEST(HostCommand, BadArgumentsExitTwoWithAMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {{"host", "noise", "--size", "256"}, "--seed is required"},
      {{"host", "noise", "--seed", "-1", "--size", "256"}, "is not an integer"},
      {{"host", "noise", "--seed", "1", "--size", "100"}, "not a positive multiple of 16"},
      {{"host", "noise", "--seed", "1", "--size", "256", "--format", "f16"}, "--format \"f16\""},
      {{"host", "rope", "--text-len", "7", "--size", "256"}, "L is 7; the contract allows 8..512"},
      {{"host", "sigmas", "--steps", "20"}, "fixed grid of 8 steps"},
      {{"host", "sigmas", "--bogus"}, "unknown option --bogus"},
      {{"host", "paint"}, "unknown command \"paint\""},
      {{"host"}, "usage: rgbaq host"},
      {{"frobnicate"}, "unknown command"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {kRgbaq};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto r = run_process(argv);
    EXPECT_EQ(r.exit_code, 2) << c.fragment;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

TEST(HostCommand, TokenizePrintsIdsPerLine) {
  const auto r = run_process({kRgbaq, "host", "tokenize"}, "\"x<|im_end|>y\"\n\"\"\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[87,151645,88]\n[]\n");
  const auto t = run_process({kRgbaq, "host", "tokenize", "--template"}, "\"\"\n");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  // The contract: the template around " " is 23 tokens, the system part's 14 first.
  EXPECT_EQ(t.out.rfind("[151644,8948,198,1092,30782,408,323,23643,279,3897,9934,13,151645,198,", 0), 0u) << t.out;
  EXPECT_EQ(std::count(t.out.begin(), t.out.end(), ','), 22);
}

TEST(HostCommand, TokenizeNamesTheBadLine) {
  const auto r = run_process({kRgbaq, "host", "tokenize"}, "\"system\"\n\"bad\xff\"\n\"never\"\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "[8948]\n");  // "system" is id 8948 in the contract's system-part ids
  EXPECT_NE(r.err.find("stdin line 2"), std::string::npos) << r.err;
  const auto j = run_process({kRgbaq, "host", "tokenize"}, "not json\n");
  EXPECT_EQ(j.exit_code, 1);
  EXPECT_NE(j.err.find("stdin line 1"), std::string::npos) << j.err;
  const auto missing = run_process({kRgbaq, "host", "tokenize", "--tokenizer", "/nonexistent.json"}, "\"x\"\n");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent.json"), std::string::npos) << missing.err;
}

TEST(HostCommand, HelpExitsZero) {
  for (const char* sub : {"noise", "rope", "sigmas", "tokenize"}) {
    const auto r = run_process({kRgbaq, "host", sub, "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find(std::string("usage: rgbaq host ") + sub), std::string::npos);
  }
  EXPECT_EQ(run_process({kRgbaq, "--help"}).exit_code, 0);
}

TEST(HostCommand, MissingModelDirectoryIsAFailure) {
  const auto r = run_process({kRgbaq, "host", "sigmas", "--model", "/nonexistent/model"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace rgbaq
