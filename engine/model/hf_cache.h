#pragma once
// The huggingface_hub cache, as diffusers users have it: HUB/models--ORG--NAME/ with refs/REV (a file
// holding a commit), snapshots/COMMIT/ (the repo's files, symlinks into blobs/) and blobs/ (one file
// per content, named by its ETag: the SHA-256 of an LFS file, the git blob id of another). rgbaq reads
// a snapshot in place and `rgbaq model pull` writes the same layout, so both share one copy.
#include <filesystem>
#include <optional>
#include <string>

namespace rgbaq::engine {

struct HubRepoRef {
  std::string repo;      // "ORG/NAME"
  std::string revision;  // a branch, tag or commit; "main" when the text names none
};

// "ORG/NAME" or "ORG/NAME@REV" as the Hub spells repo ids (letters, digits, '-', '_', '.'; no "--"
// or ".." in a name); nullopt for anything else.
std::optional<HubRepoRef> parse_hub_repo_ref(const std::string& text);

// $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub (huggingface_hub's constants.py).
std::filesystem::path hub_cache_dir();

// HUB/models--ORG--NAME.
std::filesystem::path hub_repo_dir(const std::filesystem::path& hub, const std::string& repo);

// A commit is 40 lower-case hex digits.
bool is_commit_hash(const std::string& revision);

// The name a model folder goes by (A1111's "Model", the OpenAI API's model id): NAME for a cache
// snapshot HUB/models--ORG--NAME/snapshots/COMMIT (its own name is only the commit), else the
// folder's name.
std::string model_folder_name(const std::filesystem::path& dir);

// What `--model TEXT` names: TEXT itself when it is a directory (a path always wins, so a folder
// ./ORG/NAME is read as that folder); else, for a repo id, its snapshot in the cache, which must hold
// every file rgbaq reads (engine/model/model_files.h); else TEXT, which ModelDirectory::open then refuses.
// Throws InvalidModel (engine/model/model_directory.h) for a repo id not in the cache, a revision it has
// no ref or snapshot for, or a snapshot that lacks files, naming them and how to fetch them.
std::filesystem::path resolve_model_argument(const std::string& text);

}  // namespace rgbaq::engine
