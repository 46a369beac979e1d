#include "daemon/base/render_record.h"

#include "engine/model/component_files.h"
#include "engine/model/hf_cache.h"

namespace rgbaq::daemon {

storage::RenderMetadata describe_render(const engine::RenderRequest& request, const engine::RenderResult& result,
                                        const std::filesystem::path& model_dir, const engine::ComponentFiles& files,
                                        const std::string& model_identity, const std::string& backend,
                                        const std::string& precision) {
  const auto model = model_dir.empty() ? model_dir : std::filesystem::absolute(model_dir).lexically_normal();
  storage::RenderMetadata m;
  m.prompt = request.prompt;
  m.seed = request.seed;
  m.width = result.size.width;
  m.height = result.size.height;
  m.sigmas = result.sigmas;
  m.model_name = model.empty() ? files.dit.stem().string() : engine::model_folder_name(model);
  m.model_path = model.string();
  m.model_identity = model_identity;
  m.backend = backend;
  m.precision = precision;
  m.tokenize_s = result.timings.tokenize_s;
  m.encode_s = result.timings.encode_s;
  m.step_s = result.timings.step_s;
  m.decode_s = result.timings.decode_s;
  m.total_s = result.timings.total_s;
  for (const auto& use : result.loras) m.loras.push_back({use.adapter->name, use.weight, use.adapter->sha256});
  return m;
}

nlohmann::json describe_component_files(const engine::ComponentFiles& files) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [role, path] : {std::pair{"dit", &files.dit}, {"text_encoder", &files.text_encoder}, {"vae", &files.vae}}) {
    if (path->empty()) continue;
    const auto d = engine::describe_component_file(*path);
    out[role] = {{"file", path->filename().string()}, {"path", std::filesystem::absolute(*path).lexically_normal().string()},
                 {"format", d.format}, {"bytes", d.bytes}, {"hash", d.identity}};
  }
  return out;
}

std::string metadata_json_with_qa(const storage::RenderMetadata& m, const nlohmann::json& qa, const nlohmann::json& components,
                                  bool with_local_path) {
  nlohmann::json record = nlohmann::json::parse(storage::metadata_json(m, with_local_path));
  record["qa"] = qa;
  if (!components.empty()) {
    nlohmann::json& c = record["model"]["components"] = components;
    if (!with_local_path) {
      for (auto& entry : c) entry.erase("path");  // a shared image names its files, never where they lie
    }
  }
  return record.dump();
}

std::vector<storage::PngText> png_texts_with_qa(const storage::RenderMetadata& m, const nlohmann::json& qa,
                                                const nlohmann::json& components) {
  std::vector<storage::PngText> texts = storage::png_texts(m);
  for (auto& t : texts) {
    if (t.key == "rgbaq") t.value = metadata_json_with_qa(m, qa, components, /*with_local_path=*/false);
  }
  return texts;
}

}  // namespace rgbaq::daemon
