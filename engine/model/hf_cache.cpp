#include "engine/model/hf_cache.h"

#include <cctype>
#include <cstdlib>
#include <fstream>

#include "engine/model/model_directory.h"
#include "engine/model/model_files.h"

namespace rgbaq::engine {
namespace {

bool repo_name_part(const std::string& s) {
  if (s.empty() || s.size() > 96 || s.front() == '-' || s.front() == '.' || s.back() == '-' || s.back() == '.') return false;
  if (s.find("--") != std::string::npos || s.find("..") != std::string::npos) return false;
  for (const char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string pull_hint(const HubRepoRef& ref) {
  return "fetch it with `rgbaq model pull " + ref.repo + (ref.revision == "main" ? "" : "@" + ref.revision) + "`";
}

}  // namespace

std::optional<HubRepoRef> parse_hub_repo_ref(const std::string& text) {
  HubRepoRef ref;
  std::string id = text;
  if (const auto at = text.find('@'); at != std::string::npos) {
    id = text.substr(0, at);
    ref.revision = text.substr(at + 1);
    // A branch or tag may hold '/', never "..", a space or a control character.
    if (ref.revision.empty() || ref.revision.size() > 255 || ref.revision.find("..") != std::string::npos ||
        ref.revision.front() == '/' || ref.revision.back() == '/')
      return std::nullopt;
    for (const char c : ref.revision) {
      if (static_cast<unsigned char>(c) <= ' ' || c == '@' || c == '\\' || c == '~' || c == '^' || c == ':' || c == '?' ||
          c == '*' || c == '[' || static_cast<unsigned char>(c) == 0x7f)
        return std::nullopt;
    }
  } else {
    ref.revision = "main";
  }
  const auto slash = id.find('/');
  if (slash == std::string::npos || !repo_name_part(id.substr(0, slash)) || !repo_name_part(id.substr(slash + 1))) {
    return std::nullopt;
  }
  ref.repo = id;
  return ref;
}

std::filesystem::path hub_cache_dir() {
  if (const auto v = env("HF_HUB_CACHE"); !v.empty()) return v;
  if (const auto v = env("HUGGINGFACE_HUB_CACHE"); !v.empty()) return v;  // its older name
  if (const auto v = env("HF_HOME"); !v.empty()) return std::filesystem::path(v) / "hub";
  if (const auto v = env("XDG_CACHE_HOME"); !v.empty()) return std::filesystem::path(v) / "huggingface" / "hub";
  return std::filesystem::path(env("HOME")) / ".cache" / "huggingface" / "hub";
}

std::filesystem::path hub_repo_dir(const std::filesystem::path& hub, const std::string& repo) {
  std::string folder = "models--" + repo;
  folder.replace(folder.find('/'), 1, "--");
  return hub / folder;
}

bool is_commit_hash(const std::string& revision) {
  return revision.size() == 40 && revision.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string model_folder_name(const std::filesystem::path& dir) {
  const auto folder = dir.lexically_normal();
  const std::string repo = folder.parent_path().parent_path().filename().string();
  if (folder.parent_path().filename() == "snapshots" && repo.rfind("models--", 0) == 0) {
    if (const auto sep = repo.find("--", 8); sep != std::string::npos) return repo.substr(sep + 2);
  }
  return folder.filename().string();
}

std::filesystem::path resolve_model_argument(const std::string& text) {
  std::error_code ec;
  if (std::filesystem::is_directory(text, ec)) return text;
  const auto ref = parse_hub_repo_ref(text);
  if (!ref) return text;
  const auto hub = hub_cache_dir();
  const auto repo_dir = hub_repo_dir(hub, ref->repo);
  if (!std::filesystem::is_directory(repo_dir, ec)) {
    throw InvalidModel(text + ": no such directory, and the Hugging Face cache (" + hub.string() + ") has no " +
                       repo_dir.filename().string() + "; " + pull_hint(*ref));
  }
  std::string commit = ref->revision;
  if (!is_commit_hash(commit)) {
    const auto ref_file = repo_dir / "refs" / ref->revision;
    std::ifstream in(ref_file);
    if (!in || !std::getline(in, commit) || !is_commit_hash(commit)) {
      throw InvalidModel(text + ": the Hugging Face cache has no ref " + ref_file.string() + " naming a commit; " +
                         pull_hint(*ref));
    }
  }
  const auto snapshot = repo_dir / "snapshots" / commit;
  if (!std::filesystem::is_directory(snapshot, ec)) {
    throw InvalidModel(text + ": the Hugging Face cache has no snapshot " + snapshot.string() + "; " + pull_hint(*ref));
  }
  std::vector<std::string> missing;
  try {
    missing = missing_model_files(snapshot);
  } catch (const std::runtime_error& e) {
    throw InvalidModel(text + ": " + e.what());
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& f : missing) list += (list.empty() ? "" : ", ") + f;
    throw InvalidModel(text + ": the snapshot " + snapshot.string() + " lacks " + std::to_string(missing.size()) +
                       " file(s) rgbaq reads: " + list + "; " + pull_hint(*ref));
  }
  return snapshot;
}

}  // namespace rgbaq::engine
