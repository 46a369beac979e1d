#pragma once
// Our (diffusers) VAE tensor names -> Wan 2.2's, as ComfyUI's comfy/ldm/wan/vae2_2.py names them, built
// from that layout (not from engine/model/comfy_keys.cpp's table), for tests that write a VAE file in
// Wan's names and read it back through the table.
#include <string>
#include <utility>
#include <vector>

namespace rgbaq::testing {

// The whole number that starts at n[pos] and the text after the dot that ends it ("12.conv1.w" -> 12,
// "conv1.w").
inline std::pair<int, std::string> index_and_rest(const std::string& n, size_t pos) {
  const size_t dot = n.find('.', pos);
  return {std::stoi(n.substr(pos, dot - pos)), n.substr(dot + 1)};
}

inline std::string wan_vae_name(const std::string& n, int num_res_blocks) {
  const auto resnet = [](const std::string& r) {
    for (const auto& [ours, wan] : std::vector<std::pair<std::string, std::string>>{
             {"norm1.", "residual.0."}, {"conv1.", "residual.2."}, {"norm2.", "residual.3."}, {"conv2.", "residual.6."},
             {"conv_shortcut.", "shortcut."}})
      if (r.starts_with(ours)) return wan + r.substr(ours.size());
    return r;
  };
  if (n.starts_with("post_quant_conv.")) return "conv2." + n.substr(16);
  if (n.starts_with("decoder.conv_in.")) return "decoder.conv1." + n.substr(16);
  if (n.starts_with("decoder.norm_out.")) return "decoder.head.0." + n.substr(17);
  if (n.starts_with("decoder.conv_out.")) return "decoder.head.2." + n.substr(17);
  if (n.starts_with("decoder.mid_block.attentions.0.")) return "decoder.middle.1." + n.substr(31);
  if (n.starts_with("decoder.mid_block.resnets.")) {
    const auto [i, rest] = index_and_rest(n, 26);
    return "decoder.middle." + std::to_string(2 * i) + "." + resnet(rest);
  }
  if (n.starts_with("decoder.up_blocks.")) {
    const auto [stage, rest] = index_and_rest(n, 18);
    const std::string upsamples = "decoder.upsamples." + std::to_string(stage) + ".upsamples.";
    if (rest.starts_with("upsampler.")) return upsamples + std::to_string(num_res_blocks + 1) + "." + rest.substr(10);
    const auto [block, inner] = index_and_rest(rest, 8);  // "resnets.K."
    return upsamples + std::to_string(block) + "." + resnet(inner);
  }
  return n;
}

}  // namespace rgbaq::testing
