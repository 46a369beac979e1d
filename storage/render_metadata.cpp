#include "storage/render_metadata.h"

#include <nlohmann/json.hpp>

namespace rgbaq::storage {

std::string a1111_parameters(const RenderMetadata& m) {
  const int steps = m.sigmas.empty() ? 0 : static_cast<int>(m.sigmas.size()) - 1;
  return m.prompt + "\nSteps: " + std::to_string(steps) + ", Sampler: Euler, Schedule type: FlowMatch, CFG scale: 1, Seed: " +
         std::to_string(m.seed) + ", Size: " + std::to_string(m.width) + "x" + std::to_string(m.height) +
         ", Model: " + m.model_name + ", Version: rgbaq " + kRgbaqVersion;
}

std::string metadata_json(const RenderMetadata& m) {
  nlohmann::json j = {
      {"prompt", m.prompt},
      {"seed", m.seed},
      {"width", m.width},
      {"height", m.height},
      {"steps", m.sigmas.empty() ? 0 : m.sigmas.size() - 1},
      {"sigmas", m.sigmas},
      {"model", {{"name", m.model_name}, {"path", m.model_path}, {"identity", m.model_identity}}},
      {"backend", m.backend},
      {"timings", {{"tokenize_s", m.tokenize_s}, {"encode_s", m.encode_s}, {"steps_s", m.step_s},
                   {"decode_s", m.decode_s}, {"total_s", m.total_s}}},
      {"encoder_cache_hit", m.encoder_cache_hit},
      {"rgbaq_version", kRgbaqVersion},
  };
  j["job_id"] = m.job_id ? nlohmann::json(*m.job_id) : nlohmann::json(nullptr);
  j["run_id"] = m.run_id ? nlohmann::json(*m.run_id) : nlohmann::json(nullptr);
  if (!m.host.empty()) j["host"] = m.host;
  return j.dump();
}

std::vector<PngText> png_texts(const RenderMetadata& m) {
  return {{"parameters", a1111_parameters(m)}, {"rgbaq", metadata_json(m)}};
}

std::optional<int64_t> job_id_of(const PngImage& image) {
  const auto it = image.texts.find("rgbaq");
  if (it == image.texts.end()) return std::nullopt;
  const auto j = nlohmann::json::parse(it->second, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("job_id") || !j["job_id"].is_number_integer()) return std::nullopt;
  return j["job_id"].get<int64_t>();
}

}  // namespace rgbaq::storage
