#pragma once
// Whether a PNG at a job's output path already holds that job's image: the same prompt, seed, size and
// LoRA set (names, weights, and the files' SHA-256 as they are now) rendered by the same model (an
// earlier run's job, or this job before a crash). The submit (which refuses a path holding another
// image, and counts images to reuse) and the worker (which reuses a finished image instead of
// rendering) judge by this one rule.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "storage/png_file.h"

namespace rgbaq::daemon {

// The SHA-256 of each LoRA file the job names, in its order; asked only when the names and weights
// match (it may read the files).
using LoraHashesNow = std::function<std::vector<std::string>()>;

struct ImageIdentity {
  const std::string& prompt;
  uint64_t seed;
  int width, height;
  const std::string& model_identity;
  const std::string& lora;  // the job's LoRA set as the queue stores it ("" for none)
  const LoraHashesNow& lora_sha256;
};

// From the PNG's size and its `rgbaq` text chunk.
bool holds_image(const storage::PngImage& png, const ImageIdentity& image);
// Whether the PNG's `rgbaq` chunk records the LoRA set `lora` (in the queue's form, "" for none): the
// same names and weights in order, each with the SHA-256 its file has now. An updated LoRA file makes an
// image of the old one another image.
bool records_lora_set(const storage::PngImage& png, const std::string& lora, const LoraHashesNow& lora_sha256);

}  // namespace rgbaq::daemon
