#include "daemon/base/render_record.h"

#include "engine/model/hf_cache.h"

namespace rgbaq::daemon {

storage::RenderMetadata describe_render(const engine::RenderRequest& request, const engine::RenderResult& result,
                                        const std::filesystem::path& model_dir, const std::string& model_identity,
                                        const std::string& backend, const std::string& precision) {
  const auto model = std::filesystem::absolute(model_dir).lexically_normal();
  storage::RenderMetadata m;
  m.prompt = request.prompt;
  m.seed = request.seed;
  m.width = result.size.width;
  m.height = result.size.height;
  m.sigmas = result.sigmas;
  m.model_name = engine::model_folder_name(model);
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

std::string metadata_json_with_qa(const storage::RenderMetadata& m, const nlohmann::json& qa, bool with_local_path) {
  nlohmann::json record = nlohmann::json::parse(storage::metadata_json(m, with_local_path));
  record["qa"] = qa;
  return record.dump();
}

std::vector<storage::PngText> png_texts_with_qa(const storage::RenderMetadata& m, const nlohmann::json& qa) {
  std::vector<storage::PngText> texts = storage::png_texts(m);
  for (auto& t : texts) {
    if (t.key == "rgbaq") t.value = metadata_json_with_qa(m, qa, /*with_local_path=*/false);
  }
  return texts;
}

}  // namespace rgbaq::daemon
