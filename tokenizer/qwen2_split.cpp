#include "tokenizer/qwen2_split.h"

#include <vector>

#include "tokenizer/unicode_text.h"

namespace rgbaq::tokenizer {
namespace {

struct Cp {
  char32_t cp;
  CharClass cls;
  size_t offset;  // byte offset in the text
};

bool is_crlf(char32_t c) { return c == '\r' || c == '\n'; }

// (?i:'s|'t|'re|'ve|'m|'ll|'d) at i: the match length in code points, or 0.
size_t match_contraction(const std::vector<Cp>& s, size_t i) {
  if (s[i].cp != '\'' || i + 1 >= s.size()) return 0;
  auto folded = [&](size_t k) { return k < s.size() ? simple_case_fold(s[k].cp) : char32_t(0); };
  const char32_t a = folded(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  const char32_t b = folded(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// One match starting at i (there always is one); returns its end.
size_t match_at(const std::vector<Cp>& s, size_t i) {
  const size_t n = s.size();
  if (size_t len = match_contraction(s, i)) return i + len;

  auto letters_from = [&](size_t k) {
    while (k < n && s[k].cls == CharClass::kLetter) ++k;
    return k;
  };
  // [^\r\n\p{L}\p{N}]?\p{L}+
  const CharClass c0 = s[i].cls;
  if (c0 == CharClass::kLetter) return letters_from(i + 1);
  if (c0 != CharClass::kNumber && !is_crlf(s[i].cp) && i + 1 < n && s[i + 1].cls == CharClass::kLetter) {
    return letters_from(i + 2);
  }
  // \p{N}
  if (c0 == CharClass::kNumber) return i + 1;
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  size_t k = i;
  if (s[k].cp == ' ' && k + 1 < n && s[k + 1].cls == CharClass::kOther) ++k;
  if (s[k].cls == CharClass::kOther) {
    while (k < n && s[k].cls == CharClass::kOther) ++k;
    while (k < n && is_crlf(s[k].cp)) ++k;
    return k;
  }
  // Only whitespace is left: s[i] is \s.
  size_t run_end = i;
  size_t last_crlf = n;  // none
  while (run_end < n && s[run_end].cls == CharClass::kWhitespace) {
    if (is_crlf(s[run_end].cp)) last_crlf = run_end;
    ++run_end;
  }
  // \s*[\r\n]+ : backtracks to just after the last CR/LF of the run.
  if (last_crlf != n) return last_crlf + 1;
  // \s+(?!\S) : the whole run at the end of the text, else all of it but the last code point.
  if (run_end == n) return run_end;
  if (run_end - i >= 2) return run_end - 1;
  // \s+
  return run_end;
}

}  // namespace

void qwen2_split(std::string_view text, const std::function<void(std::string_view)>& piece) {
  std::vector<Cp> s;
  s.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    const char32_t cp = decode_utf8(text, pos);
    s.push_back({cp, char_class(cp), start});
  }
  for (size_t i = 0; i < s.size();) {
    const size_t end = match_at(s, i);
    const size_t from = s[i].offset;
    const size_t to = end < s.size() ? s[end].offset : text.size();
    piece(text.substr(from, to - from));
    i = end;
  }
}

}  // namespace rgbaq::tokenizer
