// Tokenizer throughput against the HF tokenizers library (Rust, through its Node addon) on the same
// generated corpus, in the same run, one thread each. Also the tokenizer.json load time.
// usage: tokenizer_bench [PROMPTS]   (default 20000; needs scripts/setup's oracle in tests/oracle)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/run_process.h"
#include "tests/tokenizer/prompt_corpus.h"
#include "tokenizer/prompt_template.h"
#include "tokenizer/tokenizer.h"

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
  const size_t count = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 20000;
  const fs::path source = RGBAQ_SOURCE_DIR_PATH;
  const fs::path file = source / "tokenizer/data/qwen3/tokenizer.json";

  double best_load = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto t = Clock::now();
    const auto tk = rgbaq::tokenizer::Tokenizer::from_file(file);
    best_load = std::min(best_load, seconds_since(t));
  }
  const auto tk = rgbaq::tokenizer::Tokenizer::from_file(file);

  std::vector<std::string> texts;
  size_t bytes = 0;
  for (const auto& p : rgbaq::testing::make_prompt_corpus(count, 99)) {
    texts.push_back(std::string(rgbaq::tokenizer::kSystemPart) + std::string(rgbaq::tokenizer::kUserPrefix) +
                    (p.empty() ? " " : p) + std::string(rgbaq::tokenizer::kUserSuffix));
    bytes += texts.back().size();
  }
  size_t tokens = 0;
  double ours = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    tokens = 0;
    const auto t = Clock::now();
    for (const auto& text : texts) tokens += tk.encode(text).size();
    ours = std::min(ours, seconds_since(t));
  }

  std::string input;
  for (const auto& t : texts) input += rgbaq::testing::json_string(t) + "\n";
  auto hf_seconds = [&](const char* flag) {
    setenv("RAYON_NUM_THREADS", "1", 1);
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
      const auto r = rgbaq::run_process(
          {"/usr/bin/env", "node", (source / "tests/oracle/hf_encode.js").string(), file.string(), flag}, input);
      if (r.exit_code != 0) {
        std::fprintf(stderr, "oracle failed (run scripts/setup): %s\n", r.err.c_str());
        std::exit(1);
      }
      best = std::min(best, std::strtod(r.err.c_str(), nullptr));
    }
    return best;
  };
  const double hf_calls = hf_seconds("--time");
  const double hf_batch = hf_seconds("--time-batch");

  std::printf("tokenizer.json load (11 MB): %.1f ms (best of 3)\n", best_load * 1e3);
  std::printf("corpus: %zu templated prompts, %.1f MB, %zu tokens\n", texts.size(), bytes / 1e6, tokens);
  std::printf("rgbaq                         : %9.0f prompts/s  %6.1f MB/s\n", texts.size() / ours, bytes / ours / 1e6);
  std::printf("HF tokenizers, encode() calls : %9.0f prompts/s  ratio rgbaq/HF %.2f\n", texts.size() / hf_calls,
              hf_calls / ours);
  std::printf("HF tokenizers, encodeBatch, 1 thread: %9.0f prompts/s  ratio rgbaq/HF %.2f\n", texts.size() / hf_batch,
              hf_batch / ours);
  return 0;
}
