#pragma once
// A job's LoRA names to files: NAME is NAME.safetensors in the daemon's LoRA folders (--lora-dir,
// repeatable), the first folder that has it winning. Checked at submit (a name not found, or a file that
// is no LoRA for this DiT, refuses the submit with its line and field) and again when the job runs (the
// file may have gone or changed since).
#include <filesystem>
#include <string>
#include <vector>

#include "engine/lora_cache.h"

namespace rgbaq::daemon {

// Why `name` names no LoRA file here (a bad name, no folders, not found in any), or "" when it does.
std::string lora_problem(const std::vector<std::filesystem::path>& dirs, const std::string& name);
// lora_problem, and for a file found, what engine::check_lora finds wrong with it for a DiT of `config`
// from its header alone (the file and the key at fault), or "" when it passes.
std::string lora_file_problem(const std::vector<std::filesystem::path>& dirs, const std::string& name,
                              const engine::DitConfig& config);

// A job's LoRA list ("name:weight;...", jobs/lora_list.h) as render requests. Throws std::runtime_error
// naming the LoRA that cannot be found or the list's fault.
std::vector<engine::LoraRequest> lora_requests(const std::vector<std::filesystem::path>& dirs, const std::string& list);

}  // namespace rgbaq::daemon
