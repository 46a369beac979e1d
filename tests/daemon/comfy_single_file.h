#pragma once
// ComfyUI-style single component files for the hook-up tests, written here from the safetensors format
// itself (an 8-byte little-endian header length, the JSON header, the data), not through the engine's
// reader: a component's tensors as stored, each name prefixed as ComfyUI's files have them
// ("model.diffusion_model.transformer_blocks.0.attn.to_q.weight", "text_encoders.NAME.transformer.model...").
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rgbaq {

// The JSON header of the safetensors stream `in`, read from its start (an 8-byte little-endian length, then
// the JSON); `in` is left at the data.
inline nlohmann::json read_safetensors_header(std::istream& in) {
  uint64_t header_bytes = 0;
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  for (int i = 7; i >= 0; --i) header_bytes = header_bytes << 8 | len[i];
  std::string header(header_bytes, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_bytes));
  return nlohmann::json::parse(header);
}

inline nlohmann::json safetensors_header(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  return read_safetensors_header(in);
}

// A tiny model's component (its .safetensors files in `from`, a folder, or one file) as one file at `to`,
// every tensor renamed PREFIX + name, its bytes as stored; `extra_tensor` (if not empty) adds one more
// F32 [1] tensor of that name, which no component has.
inline void write_prefixed_single_file(const std::filesystem::path& from, const std::filesystem::path& to,
                                       const std::string& prefix, const std::string& extra_tensor = {}) {
  std::vector<std::filesystem::path> sources;
  if (std::filesystem::is_directory(from)) {
    for (const auto& e : std::filesystem::directory_iterator(from))
      if (e.path().extension() == ".safetensors") sources.push_back(e.path());
    std::sort(sources.begin(), sources.end());
  } else {
    sources.push_back(from);
  }
  nlohmann::json renamed = nlohmann::json::object();
  std::string data;
  for (const auto& source : sources) {
    std::ifstream in(source, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + source.string());
    nlohmann::json tensors = read_safetensors_header(in);
    const uint64_t base = data.size();  // this file's data follows the ones before it
    data.append(std::istreambuf_iterator<char>(in), {});
    for (auto& [name, info] : tensors.items()) {
      if (name == "__metadata__") continue;
      info["data_offsets"] = {base + info["data_offsets"][0].get<uint64_t>(), base + info["data_offsets"][1].get<uint64_t>()};
      renamed[prefix + name] = info;
    }
  }
  if (!extra_tensor.empty()) {
    renamed[extra_tensor] = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {data.size(), data.size() + 4}}};
    data.append(4, '\0');
  }
  std::string text = renamed.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section 8-byte aligned, as the format's writers pad it
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(static_cast<uint64_t>(text.size()) >> (8 * i) & 0xff));
  out << text << data;
  if (!out.flush()) throw std::runtime_error("cannot write " + to.string());
}

}  // namespace rgbaq
