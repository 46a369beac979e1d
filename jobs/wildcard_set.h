#pragma once
// The files a template's __name__ wildcards draw from (jobs/prompt_template.h): NAME.txt, one option a
// line; blank lines and lines whose first non-blank character is '#' are skipped. The CLI reads them
// from a folder on its own machine (`rgbaq submit --wildcards DIR`) and sends the texts it read with the
// submit; the daemon expands from those texts and reads no client path.
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rgbaq::jobs {

// Whether `name` may name a wildcard: 1 to 100 ASCII letters, digits, '_' and '-', with '/' between
// non-empty parts (a file in a subfolder: __animals/cats__ is animals/cats.txt). Nothing that leaves
// the folder ('.' is no name character) and nothing a message would need to quote.
bool is_wildcard_name(std::string_view name);
inline constexpr size_t kMaxWildcardNameLength = 100;

// A wildcard file is at most this big: its options are parsed whole, and they travel in the submit.
inline constexpr size_t kMaxWildcardFileBytes = size_t{4} << 20;

struct WildcardOption {
  std::string text;  // the line without its leading and trailing blanks (spaces, tabs, a CR)
  int line = 0;      // 1-based
  int column = 0;    // 1-based, in characters, where `text` starts on its line
};

// The options of a wildcard file's text, in file order (a UTF-8 byte-order mark is skipped).
std::vector<WildcardOption> wildcard_options(std::string_view text);

class WildcardSet {
 public:
  // Files read from `dir`, each on first use.
  static WildcardSet from_folder(std::filesystem::path dir);
  // Only these texts, by name (what a submit carried); `dir` is the folder they were read from, named
  // in messages ("" when the sender named none: an HTTP client's own texts).
  static WildcardSet from_texts(std::map<std::string, std::string> texts, std::string dir);

  // NAME's text, or nullptr with `why` set: "there is no colour.txt in /home/ann/.config/rgbaq/wildcards",
  // the OS's reason it cannot be read, or that it is over kMaxWildcardFileBytes. `name` must pass
  // is_wildcard_name. The pointer stays valid as long as the set.
  const std::string* read(const std::string& name, std::string& why);

  // How messages name NAME's file: "DIR/NAME.txt" (or "NAME.txt" when the folder is unnamed).
  std::string file_label(const std::string& name) const;
  // Every text read so far, by name: what the CLI sends with a submit.
  const std::map<std::string, std::string>& texts() const { return texts_; }
  const std::string& dir() const { return dir_; }

 private:
  WildcardSet(std::map<std::string, std::string> texts, std::string dir, bool reads_folder);
  std::map<std::string, std::string> texts_;
  std::string dir_;
  bool reads_folder_ = false;
};

// Where `rgbaq submit` looks without --wildcards: $XDG_CONFIG_HOME/rgbaq/wildcards, ~/.config/rgbaq/wildcards
// when XDG_CONFIG_HOME is unset or empty (`home` is the user's home folder).
std::filesystem::path default_wildcard_dir(const std::filesystem::path& home);

}  // namespace rgbaq::jobs
