#pragma once
// ComfyUI's tensor names for this model family, mapped to the engine's (diffusers') names: the one table
// a single component file (models/diffusion_models, models/text_encoders, models/vae) is read through.
// Sources: ComfyUI's loaders strip a checkpoint's prefixes (comfy/sd.py, comfy/utils.py
// state_dict_prefix_replace; comfy/model_detection.py unet_prefix_from_state_dict): the DiT's
// "model.diffusion_model." (or "diffusion_model."), the VAE's "first_stage_model." / "vae.", the text
// encoder's "text_encoders.NAME.transformer."; quantized modules keep their names and add
// .weight_scale, .input_scale and .comfy_quant (comfy/ops.py). Under the prefixes:
// - the DiT's names are the diffusers names (transformer_blocks.N.attn.to_q, img_mlp.gate_layer, ...);
// - the text encoder's are Hugging Face's (model.layers.N..., or model.language_model.layers.N... for
//   Qwen3-VL, with lm_head and the vision tower beside them);
// - the VAE's are the Wan 2.2 layout ComfyUI's comfy/ldm/wan/vae2_2.py builds (conv2, decoder.conv1,
//   decoder.middle.{0,1,2}, decoder.upsamples.I.upsamples.J, decoder.head.{0,2}, residual.{0,2,3,6},
//   shortcut), mapped as diffusers' scripts/convert_wan_to_diffusers.py maps them; a file already in
//   diffusers' names is read as it is.
#include <optional>
#include <string>

namespace rgbaq::engine {

enum class ComfyComponent { kDit, kTextEncoder, kVae };

// "transformer" | "text_encoder" | "vae" (the model directory's roles) -> the component; throws
// std::invalid_argument for another role.
ComfyComponent comfy_component_of_role(const std::string& role);

// The engine's name for tensor `key` of a ComfyUI single file holding `component`, or nullopt when the
// table does not know it (the caller refuses the file naming the tensor). Names the engine reads
// nothing from (the vision tower, lm_head, the VAE's encoder, its time convolutions) map to themselves
// and are counted as ignored by the schema check.
std::optional<std::string> comfy_key_to_engine(ComfyComponent component, const std::string& key);

}  // namespace rgbaq::engine
