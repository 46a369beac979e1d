#pragma once
// A job's LoRA names to files: NAME is NAME.safetensors in the daemon's LoRA folders (--lora-dir,
// repeatable), the first folder that has it winning. Checked at submit (a name not found, or a file that
// is no LoRA for this DiT, refuses the submit with its line and field) and again when the job runs (the
// file may have gone or changed since).
#include <filesystem>
#include <map>
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

// The SHA-256 each LoRA file has now (engine::lora_file_sha256), remembered by its size and modification
// time, so that judging many outputs of one LoRA hashes it once. Not thread-safe: one per thread.
class LoraFileHashes {
 public:
  // In the order of `requests`. Throws std::runtime_error naming a file that cannot be read.
  std::vector<std::string> of(const std::vector<engine::LoraRequest>& requests);

 private:
  struct Known {
    uintmax_t size = 0;
    std::filesystem::file_time_type mtime;
    std::string sha256;
  };
  std::map<std::filesystem::path, Known> known_;
};

}  // namespace rgbaq::daemon
