#pragma once
// What an output PNG records about the render that made it (storage::RenderMetadata), from the
// request and the session's result (its backend and precision); `rgbaqd render` and the worker both write it.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session.h"
#include "storage/render_metadata.h"

namespace rgbaq::daemon {

// `model_dir` empty (every component a single file): the model is named after the DiT file.
storage::RenderMetadata describe_render(const engine::RenderRequest& request, const engine::RenderResult& result,
                                        const std::filesystem::path& model_dir, const engine::ComponentFiles& files,
                                        const std::string& model_identity, const std::string& backend,
                                        const std::string& precision);

// The single files standing in for the model's components (EngineOptions::components), read once when a
// session opens: {"dit": {"file": NAME, "path": ABSOLUTE, "format": ..., "bytes": N, "hash": HEX}, ...}
// by role ("dit", "text_encoder", "vae"), only those given; {} when none. Throws what the engine's
// description of a file throws (naming the file).
nlohmann::json describe_component_files(const engine::ComponentFiles& files);

// The record with the image's alpha check (assets/alpha_check.h's JSON) as its "qa" and the component
// files (describe_component_files) as model.components: for the queue (with the local paths) and,
// without them, for the PNG's rgbaq chunk (png_texts_with_qa: the chunks of storage::png_texts, its
// rgbaq chunk so extended).
std::string metadata_json_with_qa(const storage::RenderMetadata& m, const nlohmann::json& qa, const nlohmann::json& components,
                                  bool with_local_path = true);
std::vector<storage::PngText> png_texts_with_qa(const storage::RenderMetadata& m, const nlohmann::json& qa,
                                                const nlohmann::json& components);

}  // namespace rgbaq::daemon
