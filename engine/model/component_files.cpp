#include "engine/model/component_files.h"

#include <cctype>
#include <map>

#include "engine/model/comfy_keys.h"
#include "engine/model/comfy_quant.h"
#include "engine/model/model_identity.h"

namespace rgbaq::engine {

const std::filesystem::path& ComponentFiles::for_role(const std::string& role) const {
  static const std::filesystem::path none;
  if (role == "transformer") return dit;
  if (role == "text_encoder") return text_encoder;
  if (role == "vae") return vae;
  return none;
}

WeightStore open_component_file(const std::string& role, const std::filesystem::path& file) {
  const ComfyComponent component = comfy_component_of_role(role);
  return WeightStore::open_file(file, [component](const std::string& key) { return comfy_key_to_engine(component, key); });
}

ComponentFileDescription describe_component_file(const std::filesystem::path& file) {
  const SafetensorsFile st = SafetensorsFile::open(file);
  const auto quantized = read_comfy_quant(st);
  std::map<std::string, int64_t> quant_formats;
  std::map<std::string, bool> quant_tensor;  // the quantized modules' tensors, left out of the dtype count
  for (const auto& [module, q] : quantized) {
    quant_formats[comfy_quant_label(q)]++;
    quant_tensor[module + ".weight"] = true;
    for (const std::string& companion : comfy_quant_companions(module + ".weight")) quant_tensor[companion] = true;
  }
  std::map<std::string, int64_t> dtypes;
  for (const std::string& name : st.names())
    if (!quant_tensor.count(name)) dtypes[std::string(dtype_name(st.tensor(name).dtype()))]++;
  ComponentFileDescription d;
  for (const auto& [format, count] : quant_formats) {
    d.format += (d.format.empty() ? "" : " + ") + format + " (" + std::to_string(count) + (count == 1 ? " linear)" : " linears)");
  }
  std::string most;
  int64_t most_count = 0;
  for (const auto& [dtype, count] : dtypes) {
    if (count > most_count) most = dtype, most_count = count;
  }
  for (char& c : most) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!most.empty()) d.format += (d.format.empty() ? "" : " + ") + most;
  d.bytes = static_cast<uint64_t>(std::filesystem::file_size(file));
  d.identity = file_identity(file);
  return d;
}

}  // namespace rgbaq::engine
