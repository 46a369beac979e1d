#pragma once
// Whether a PNG at a job's output path already holds that job's image: the same prompt, seed, size and
// LoRA set rendered by the same model (an earlier run's job, or this job before a crash). The submit (which
// refuses a path holding another image, and counts images to reuse) and the worker (which reuses a
// finished image instead of rendering) judge by this one rule.
#include <cstdint>
#include <string>

#include "storage/png_file.h"

namespace rgbaq::daemon {

struct ImageIdentity {
  const std::string& prompt;
  uint64_t seed;
  int width, height;
  const std::string& model_identity;
  const std::string& lora;  // the job's LoRA set as the queue stores it ("" for none)
};

// From the PNG's size and its `rgbaq` text chunk.
bool holds_image(const storage::PngImage& png, const ImageIdentity& image);
// The LoRA set the PNG's `rgbaq` chunk records, in the queue's form ("" for none or no chunk).
std::string lora_set_of(const storage::PngImage& png);

}  // namespace rgbaq::daemon
