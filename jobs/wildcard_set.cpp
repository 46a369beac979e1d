#include "jobs/wildcard_set.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "jobs/utf8_text.h"

namespace rgbaq::jobs {
namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

}  // namespace

bool is_wildcard_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxWildcardNameLength || name.front() == '/' || name.back() == '/') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '/' ? name[i + 1] == '/' : !name_char(name[i])) return false;
  }
  return true;
}

std::vector<WildcardOption> wildcard_options(std::string_view text) {
  std::vector<WildcardOption> out;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  int line = 0;
  for (size_t start = 0; start < text.size();) {
    ++line;
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view l = text.substr(start, end - start);
    start = end + 1;
    const size_t b = l.find_first_not_of(" \t\r");
    if (b == std::string_view::npos || l[b] == '#') continue;
    const size_t e = l.find_last_not_of(" \t\r");
    out.push_back({std::string(l.substr(b, e - b + 1)), line, count_chars(l.substr(0, b)) + 1});
  }
  return out;
}

WildcardSet::WildcardSet(std::map<std::string, std::string> texts, std::string dir, bool reads_folder)
    : texts_(std::move(texts)), dir_(std::move(dir)), reads_folder_(reads_folder) {}

WildcardSet WildcardSet::from_folder(std::filesystem::path dir) { return WildcardSet({}, dir.string(), true); }

WildcardSet WildcardSet::from_texts(std::map<std::string, std::string> texts, std::string dir) {
  return WildcardSet(std::move(texts), std::move(dir), false);
}

std::string WildcardSet::file_label(const std::string& name) const {
  return dir_.empty() ? name + ".txt" : (std::filesystem::path(dir_) / (name + ".txt")).string();
}

const std::string* WildcardSet::read(const std::string& name, std::string& why) {
  if (const auto it = texts_.find(name); it != texts_.end()) return &it->second;
  const std::string where = dir_.empty() ? "the submit's wildcards" : dir_;
  if (!reads_folder_) {
    why = "there is no " + name + ".txt in " + where;
    return nullptr;
  }
  const std::string path = file_label(name);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) {
      why = path + ": " + std::strerror(errno);
    } else {
      std::error_code ec;
      why = "there is no " + name + ".txt in " + where +
            (std::filesystem::is_directory(dir_, ec) ? "" : " (that folder does not exist: --wildcards DIR names another)");
    }
    return nullptr;
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      why = path + ": " + std::strerror(errno);  // a folder: "Is a directory"
      ::close(fd);
      return nullptr;
    }
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxWildcardFileBytes) {
      why = path + " is over " + std::to_string(kMaxWildcardFileBytes >> 20) + " MiB, more than a wildcard file may hold";
      ::close(fd);
      return nullptr;
    }
  }
  ::close(fd);
  return &texts_.emplace(name, std::move(text)).first->second;
}

std::filesystem::path default_wildcard_dir(const std::filesystem::path& home) {
  const char* config = std::getenv("XDG_CONFIG_HOME");
  return (config && *config ? std::filesystem::path(config) : home / ".config") / "rgbaq" / "wildcards";
}

}  // namespace rgbaq::jobs
