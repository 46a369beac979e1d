#include "storage/render_metadata.h"

#include <nlohmann/json.hpp>

namespace rgbaq::storage {
namespace {

// ', Lora hashes: "a: 0123456789ab, b: ..."' (A1111's form), or "" without LoRAs.
std::string lora_hashes(const RenderMetadata& m) {
  if (m.loras.empty()) return "";
  std::string list;
  for (const auto& l : m.loras) list += (list.empty() ? "" : ", ") + l.name + ": " + l.sha256.substr(0, 12);
  return ", Lora hashes: \"" + list + "\"";
}

// A1111 writes "Model hash: <10 hex>" before "Model: <name>"; ours is the model identity's first 10 hex.
std::string model_hash_field(const RenderMetadata& m) {
  const std::string hash = model_hash(m.model_identity);
  return hash.empty() ? "" : ", Model hash: " + hash;
}

}  // namespace

std::string model_hash(const std::string& model_identity) { return model_identity.substr(0, kModelHashDigits); }

std::string a1111_parameters(const RenderMetadata& m) {
  const int steps = m.sigmas.empty() ? 0 : static_cast<int>(m.sigmas.size()) - 1;
  return m.prompt + "\nSteps: " + std::to_string(steps) + ", Sampler: Euler, Schedule type: FlowMatch, CFG scale: 1, Seed: " +
         std::to_string(m.seed) + ", Size: " + std::to_string(m.width) + "x" + std::to_string(m.height) +
         model_hash_field(m) + ", Model: " + m.model_name + lora_hashes(m) + ", Version: rgbaq " + kRgbaqVersion;
}

std::string metadata_json(const RenderMetadata& m, bool with_local_path) {
  nlohmann::json j = {
      {"prompt", m.prompt},
      {"seed", m.seed},
      {"width", m.width},
      {"height", m.height},
      {"steps", m.sigmas.empty() ? 0 : m.sigmas.size() - 1},
      {"sigmas", m.sigmas},
      {"model", {{"name", m.model_name}, {"identity", m.model_identity}}},
      {"backend", m.backend},
      {"timings", {{"tokenize_s", m.tokenize_s}, {"encode_s", m.encode_s}, {"steps_s", m.step_s},
                   {"decode_s", m.decode_s}, {"total_s", m.total_s}}},
      {"encoder_cache_hit", m.encoder_cache_hit},
      {"loras", nlohmann::json::array()},
      {"rgbaq_version", kRgbaqVersion},
  };
  if (with_local_path) j["model"]["path"] = m.model_path;
  j["job_id"] = m.job_id ? nlohmann::json(*m.job_id) : nlohmann::json(nullptr);
  j["run_id"] = m.run_id ? nlohmann::json(*m.run_id) : nlohmann::json(nullptr);
  for (const auto& l : m.loras) j["loras"].push_back({{"name", l.name}, {"weight", l.weight}, {"sha256", l.sha256}});
  if (!m.precision.empty()) j["precision"] = m.precision;
  if (!m.host.empty()) j["host"] = m.host;
  if (!m.device.empty()) j["device"] = m.device;
  if (m.worker) j["worker"] = *m.worker;
  if (!m.template_text.empty()) {
    j["template"] = m.template_text;
    j["choices"] = nlohmann::json::parse(m.choices_json.empty() ? "{}" : m.choices_json, nullptr, false);
  }
  return j.dump();
}

std::vector<PngText> png_texts(const RenderMetadata& m) {
  return {{"parameters", a1111_parameters(m)}, {"rgbaq", metadata_json(m, /*with_local_path=*/false)}};
}

std::optional<int64_t> job_id_of(const PngImage& image) {
  const auto it = image.texts.find("rgbaq");
  if (it == image.texts.end()) return std::nullopt;
  const auto j = nlohmann::json::parse(it->second, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("job_id") || !j["job_id"].is_number_integer()) return std::nullopt;
  return j["job_id"].get<int64_t>();
}

}  // namespace rgbaq::storage

namespace rgbaq::storage {

std::vector<LoraRecord> loras_of(const std::string& metadata_json) {
  std::vector<LoraRecord> out;
  const auto j = nlohmann::json::parse(metadata_json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("loras") || !j["loras"].is_array()) return out;
  for (const auto& l : j["loras"]) {
    if (!l.is_object() || !l.contains("name") || !l["name"].is_string() || !l.contains("weight") || !l["weight"].is_number()) continue;
    out.push_back({l["name"].get<std::string>(), l["weight"].get<float>(), l.value("sha256", "")});
  }
  return out;
}

}  // namespace rgbaq::storage
