#pragma once
// What an output PNG says about itself: a tEXt-style `parameters` chunk in the form AUTOMATIC1111's
// web UI writes (and most image tools read), and an `rgbaq` chunk with the full record as JSON.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/png_file.h"

namespace rgbaq::storage {

struct RenderMetadata {
  std::string prompt;
  uint64_t seed = 0;
  int width = 0, height = 0;
  std::vector<float> sigmas;  // terminal 0 included
  std::string model_name;     // the model directory's name
  std::string model_path;
  std::string model_identity;
  std::string backend;
  double tokenize_s = 0, encode_s = 0, decode_s = 0, total_s = 0;
  std::vector<double> step_s;
  bool encoder_cache_hit = false;
  std::optional<int64_t> job_id, run_id;
  std::string host;  // the host that rendered it (rgbaqd --host, or the system's host name)
};

// The `parameters` text: "<prompt>\nSteps: 8, Sampler: Euler, Schedule type: FlowMatch, CFG scale: 1,
// Seed: 7, Size: 256x256, Model: <name>, Version: rgbaq <v>".
std::string a1111_parameters(const RenderMetadata& m);
std::string metadata_json(const RenderMetadata& m);
std::vector<PngText> png_texts(const RenderMetadata& m);

// The job id recorded in an output's `rgbaq` chunk, if the chunk is there and well formed.
std::optional<int64_t> job_id_of(const PngImage& image);

inline constexpr const char* kRgbaqVersion = "0.1.0";

}  // namespace rgbaq::storage
