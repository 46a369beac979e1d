#pragma once
// A job and a worker as the typed suites over two workers (fence, progress) make them: one job per
// prompt and seed, its output under /o/, its keys derived from prompt and seed.
#include <functional>
#include <string>

#include "storage/queue_store.h"

namespace rgbaq::storage {

inline NewJob job(const std::string& prompt, uint64_t seed) {
  NewJob j;
  j.prompt = prompt;
  j.seed = seed;
  j.width = j.height = 256;
  j.output_path = "/o/" + prompt + "_" + std::to_string(seed) + ".png";
  j.content_key = std::hash<std::string>{}(prompt + "|" + std::to_string(seed));
  j.prompt_key = std::hash<std::string>{}(prompt);
  return j;
}

inline WorkerInfo worker_info(const std::string& host) { return {host, "boot-1", 100, "cpu", "test cpu"}; }

}  // namespace rgbaq::storage
