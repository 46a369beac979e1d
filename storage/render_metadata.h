#pragma once
// What an output PNG says about itself: a tEXt-style `parameters` chunk in the form AUTOMATIC1111's
// web UI writes (and most image tools read), and an `rgbaq` chunk with the full record as JSON.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/png_file.h"

namespace rgbaq::storage {

// A LoRA a render applied: its name, weight and the SHA-256 of the file's bytes after its header.
struct LoraRecord {
  std::string name;
  float weight = 1.0f;
  std::string sha256;  // 64 hex digits; A1111's short hash is the first 12
};

struct RenderMetadata {
  std::string prompt;
  uint64_t seed = 0;
  int width = 0, height = 0;
  std::vector<float> sigmas;  // terminal 0 included
  std::string model_name;     // the model directory's name
  std::string model_path;
  std::string model_identity;
  std::string backend;
  std::string precision;  // what its GEMMs computed in ("fp32", "bf16", "fp8"); empty: not recorded
  double tokenize_s = 0, encode_s = 0, decode_s = 0, total_s = 0;
  std::vector<double> step_s;
  bool encoder_cache_hit = false;
  std::optional<int64_t> job_id, run_id;
  std::vector<LoraRecord> loras;  // in the order applied
  std::string host;  // the host that rendered it (rgbaqd --host, or the system's host name)
  std::string device;  // the device it rendered on there ("cpu", "cuda:1"); empty: not recorded
  std::optional<int> worker;  // the daemon's render worker that rendered it (0.., as `rgbaq status` lists them)
  // A template's job (jobs/prompt_template.h): the prompt as written and its choices as a JSON object;
  // both empty for a plain prompt (and then left out of the record).
  std::string template_text, choices_json;
};

// The `parameters` text: "<prompt>\nSteps: 8, Sampler: Euler, Schedule type: FlowMatch, CFG scale: 1,
// Seed: 7, Size: 256x256, Model hash: <10 hex>, Model: <name>, Version: rgbaq <v>" (no Model hash
// when the identity is unknown), with LoRAs `Lora hashes: "a: <12 hex>, b: <12 hex>"` before Version, as
// A1111 writes it. The prompt is as the user wrote it (tags included).
std::string a1111_parameters(const RenderMetadata& m);
// The full record as JSON; the model directory's absolute path only `with_local_path` (the queue
// database keeps it; an image that may be shared does not).
std::string metadata_json(const RenderMetadata& m, bool with_local_path = true);
// The chunks of an output PNG: name and identity of the model, never its local path.
std::vector<PngText> png_texts(const RenderMetadata& m);

// A1111's "Model hash": the first kModelHashDigits hex digits of the model identity.
inline constexpr size_t kModelHashDigits = 10;
std::string model_hash(const std::string& model_identity);

// The job id recorded in an output's `rgbaq` chunk, if the chunk is there and well formed.
std::optional<int64_t> job_id_of(const PngImage& image);
// The LoRAs an `rgbaq` chunk's JSON records (name and weight; none for an older chunk without them).
std::vector<LoraRecord> loras_of(const std::string& metadata_json);

inline constexpr const char* kRgbaqVersion = "0.1.0";

}  // namespace rgbaq::storage
