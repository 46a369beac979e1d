#pragma once
// What an output PNG records about the render that made it (storage::RenderMetadata), from the
// request and the session's result (its backend and precision); `rgbaqd render` and the worker both write it.
#include <filesystem>
#include <string>

#include "engine/session.h"
#include "storage/render_metadata.h"

namespace rgbaq::daemon {

storage::RenderMetadata describe_render(const engine::RenderRequest& request, const engine::RenderResult& result,
                                        const std::filesystem::path& model_dir, const std::string& model_identity,
                                        const std::string& backend, const std::string& precision);

}  // namespace rgbaq::daemon
