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

storage::RenderMetadata describe_render(const engine::RenderRequest& request, const engine::RenderResult& result,
                                        const std::filesystem::path& model_dir, const std::string& model_identity,
                                        const std::string& backend, const std::string& precision);

// The record with the image's alpha check (assets/alpha_check.h's JSON) as its "qa": for the queue
// (with the model's local path) and, without it, for the PNG's rgbaq chunk (png_texts_with_qa: the
// chunks of storage::png_texts, its rgbaq chunk so extended).
std::string metadata_json_with_qa(const storage::RenderMetadata& m, const nlohmann::json& qa, bool with_local_path = true);
std::vector<storage::PngText> png_texts_with_qa(const storage::RenderMetadata& m, const nlohmann::json& qa);

}  // namespace rgbaq::daemon
