#pragma once
// A job's LoRA names to files: NAME is NAME.safetensors in the daemon's LoRA folders (--lora-dir,
// repeatable), the first folder that has it winning. Checked at submit (a name not found refuses the
// submit with its line and field) and again when the job runs (the file may have gone since).
#include <filesystem>
#include <string>
#include <vector>

#include "engine/lora_cache.h"

namespace rgbaq::daemon {

// Why `name` names no LoRA file here (a bad name, no folders, not found in any), or "" when it does.
std::string lora_problem(const std::vector<std::filesystem::path>& dirs, const std::string& name);

// A job's LoRA list ("name:weight;...", jobs/lora_list.h) as render requests. Throws std::runtime_error
// naming the LoRA that cannot be found or the list's fault.
std::vector<engine::LoraRequest> lora_requests(const std::vector<std::filesystem::path>& dirs, const std::string& list);

}  // namespace rgbaq::daemon
