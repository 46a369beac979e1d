#include "jobs/qa_flags.h"

#include <stdexcept>

namespace rgbaq::jobs {
namespace {

constexpr const char* kNames[kQaFlagCount] = {"empty", "no_alpha", "cut_off", "fragmented", "fake_transparency"};

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view qa_flag_name(QaFlag f) { return kNames[static_cast<int>(f)]; }

std::optional<QaFlag> parse_qa_flag(std::string_view name) {
  for (int i = 0; i < kQaFlagCount; ++i) {
    if (name == kNames[i]) return static_cast<QaFlag>(i);
  }
  return std::nullopt;
}

std::string qa_flags_text(QaFlags flags) {
  std::string text;
  for (int i = 0; i < kQaFlagCount; ++i) {
    if ((flags & (QaFlags{1} << i)) == 0) continue;
    if (!text.empty()) text += ',';
    text += kNames[i];
  }
  return text.empty() ? "ok" : text;
}

std::string qa_flag_names() {
  std::string names;
  for (int i = 0; i < kQaFlagCount; ++i) names += (i ? ", " : "") + std::string(kNames[i]);
  return names;
}

QaFlags parse_qa_flag_list(std::string_view list) {
  QaFlags flags = 0;
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    const std::string_view name = trimmed(list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (name.empty()) throw std::invalid_argument("an empty flag in '" + std::string(list) + "' (one of " + qa_flag_names() + ")");
    const auto flag = parse_qa_flag(name);
    if (!flag) {
      throw std::invalid_argument("unknown flag '" + std::string(name) + "'" +
                                  (name == "ok" ? " ('ok' is no flag: an image that is ok needs no new seed)" : "") +
                                  " (one of " + qa_flag_names() + ")");
    }
    flags |= qa_bit(*flag);
    if (comma == std::string_view::npos) return flags;
    start = comma + 1;
  }
}

std::optional<std::string> parse_qa_filter(std::string_view name) {
  if (name == "ok" || parse_qa_flag(name)) return std::string(name);
  return std::nullopt;
}

}  // namespace rgbaq::jobs
