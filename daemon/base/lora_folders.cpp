#include "daemon/base/lora_folders.h"

#include <stdexcept>

#include "jobs/lora_list.h"

namespace rgbaq::daemon {
namespace {

std::filesystem::path find_file(const std::vector<std::filesystem::path>& dirs, const std::string& name) {
  for (const auto& d : dirs) {
    const auto p = d / (name + ".safetensors");
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p;
  }
  return {};
}

}  // namespace

std::string lora_problem(const std::vector<std::filesystem::path>& dirs, const std::string& name) {
  if (std::string why = jobs::lora_name_problem(name); !why.empty()) return why;
  if (dirs.empty()) return "LoRA \"" + name + "\": this daemon has no LoRA folders (start rgbaqd with --lora-dir DIR)";
  if (!find_file(dirs, name).empty()) return "";
  std::string where;
  for (const auto& d : dirs) where += (where.empty() ? "" : ", ") + d.string();
  return "LoRA \"" + name + "\" not found: no " + name + ".safetensors in " + where;
}

std::string lora_file_problem(const std::vector<std::filesystem::path>& dirs, const std::string& name,
                              const engine::DitConfig& config) {
  if (std::string why = lora_problem(dirs, name); !why.empty()) return why;
  try {
    engine::check_lora(find_file(dirs, name), config);
    return "";
  } catch (const std::exception& e) {
    return "LoRA \"" + name + "\": " + e.what();
  }
}

std::vector<engine::LoraRequest> lora_requests(const std::vector<std::filesystem::path>& dirs, const std::string& list) {
  std::string error;
  const auto items = jobs::parse_lora_list(list, error);
  if (!items) throw std::runtime_error("the job's LoRA list \"" + list + "\": " + error);
  std::vector<engine::LoraRequest> out;
  for (const auto& item : *items) {
    if (std::string why = lora_problem(dirs, item.name); !why.empty()) throw std::runtime_error(why);
    out.push_back({item.name, find_file(dirs, item.name), item.weight});
  }
  return out;
}

std::vector<std::string> LoraFileHashes::of(const std::vector<engine::LoraRequest>& requests) {
  std::vector<std::string> out;
  for (const auto& r : requests) {
    Known now;
    now.size = std::filesystem::file_size(r.path);
    now.mtime = std::filesystem::last_write_time(r.path);
    Known& known = known_[r.path];
    if (known.sha256.empty() || known.size != now.size || known.mtime != now.mtime) {
      now.sha256 = engine::lora_file_sha256(r.path);
      known = std::move(now);
    }
    out.push_back(known.sha256);
  }
  return out;
}

}  // namespace rgbaq::daemon
