#include "jobs/prompt_template.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "jobs/utf8_text.h"

namespace rgbaq::jobs {
namespace template_detail {

struct Wildcard;

// The most one piece makes in one expansion, saturating: prompt bytes, choices recorded, and the bytes
// of those choices' values (a choice inside another's value counts again).
struct Longest {
  uint64_t bytes = 0, choices = 0, choice_bytes = 0;
};

// One piece of a text: characters, a {...} group, or a __name__ wildcard.
struct Part {
  enum class Kind : uint8_t { kText, kGroup, kWildcard };
  Kind kind = Kind::kText;
  std::string text;                    // kText: the characters; else the choice's name in its text ("1", "style#2")
  std::vector<Sequence> alternatives;  // kGroup
  std::shared_ptr<const Wildcard> wildcard;
  std::vector<uint64_t> starts;        // kGroup: the first combination of each alternative
  uint64_t count = 1;
  uint64_t stride = 1;                 // the combinations of the parts after this one in its sequence
  Longest longest;
};

struct Sequence {
  std::vector<Part> parts;
  uint64_t count = 1;
  Longest longest;  // of its parts together
};

struct Wildcard {
  std::vector<Sequence> options;
  std::vector<uint64_t> starts;  // the first combination of each option
  uint64_t count = 0;
  Longest longest;  // of its longest options, as a choice
  std::vector<std::string> deepest;  // the longest chain of wildcards from this one down, itself first
};

}  // namespace template_detail

using template_detail::Part;
using template_detail::Sequence;
using template_detail::Wildcard;

namespace {

uint64_t add_saturating(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t mul_saturating(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

template_detail::Longest after(const template_detail::Longest& a, const template_detail::Longest& b) {
  return {add_saturating(a.bytes, b.bytes), add_saturating(a.choices, b.choices), add_saturating(a.choice_bytes, b.choice_bytes)};
}

// A choice of one of `alternatives`: its value is at most the longest one's text, and it records itself
// and the most choices any one of them does.
template_detail::Longest one_of(const std::vector<Sequence>& alternatives) {
  template_detail::Longest l{0, 1, 0};
  for (const Sequence& a : alternatives) {
    l.bytes = std::max(l.bytes, a.longest.bytes);
    l.choices = std::max(l.choices, add_saturating(1, a.longest.choices));
    l.choice_bytes = std::max(l.choice_bytes, add_saturating(a.longest.bytes, a.longest.choice_bytes));
  }
  return l;
}

std::string amount(uint64_t n) { return n == UINT64_MAX ? "18446744073709551615 or more" : std::to_string(n); }

std::string trimmed(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1));
}

std::string chain_text(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "__" : " -> __") + n + "__";
  return s;
}

// Each part's stride and the sequence's count, once its parts are known.
void seal(Sequence& s) {
  uint64_t after = 1;
  for (auto it = s.parts.rbegin(); it != s.parts.rend(); ++it) {
    it->stride = after;
    after = mul_saturating(after, it->count);
  }
  s.count = after;
}

// The first combination of each alternative, and their total.
uint64_t starts_of(const std::vector<Sequence>& alternatives, std::vector<uint64_t>& starts) {
  uint64_t total = 0;
  for (const auto& a : alternatives) {
    starts.push_back(total);
    total = add_saturating(total, a.count);
  }
  return total;
}

void decode(const Sequence& s, uint64_t index, const std::string& prefix, Expansion& out);

// One of `alternatives` by `index`, recorded as the choice `name`.
void decode_choice(const std::vector<Sequence>& alternatives, const std::vector<uint64_t>& starts, uint64_t index,
                   std::string name, const std::string& inner_prefix, Expansion& out) {
  const size_t a = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), index) - starts.begin()) - 1;
  const size_t slot = out.choices.size();
  out.choices.push_back({std::move(name), ""});
  const size_t from = out.prompt.size();
  decode(alternatives[a], index - starts[a], inner_prefix, out);
  out.choices[slot].value = trimmed(std::string_view(out.prompt).substr(from));
}

void decode(const Sequence& s, uint64_t index, const std::string& prefix, Expansion& out) {
  for (const Part& p : s.parts) {
    const uint64_t own = (index / p.stride) % p.count;
    switch (p.kind) {
      case Part::Kind::kText: out.prompt += p.text; break;
      case Part::Kind::kGroup:
        decode_choice(p.alternatives, p.starts, own, prefix.empty() ? p.text : prefix + "." + p.text, prefix, out);
        break;
      case Part::Kind::kWildcard: {
        std::string name = prefix.empty() ? p.text : prefix + "." + p.text;
        const std::string inner = name;
        decode_choice(p.wildcard->options, p.wildcard->starts, own, std::move(name), inner, out);
        break;
      }
    }
  }
}

void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static const char* hex = "0123456789abcdef";
      out += "\\u00";
      out += hex[(c >> 4) & 0xf];
      out += hex[c & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
}

// The next 64 random bits of SplitMix64 (Steele, Lea and Flood): the same stream on every platform.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound): the values below 2^64 mod bound are rejected, so no residue is favoured.
  uint64_t below(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;
    for (;;) {
      const uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }
};

}  // namespace

std::string Expansion::choices_json() const {
  std::string out = "{";
  for (const auto& c : choices) {
    if (out.size() > 1) out += ',';
    append_json_string(out, c.name);
    out += ':';
    append_json_string(out, c.value);
  }
  return out + "}";
}

uint64_t PromptTemplate::count() const { return root_ ? root_->count : 1; }

void PromptTemplate::expand(uint64_t index, Expansion& out) const {
  out.prompt.clear();
  out.choices.clear();
  if (root_) decode(*root_, index, "", out);
}

// The wildcards of one parser: each read and parsed once; `chain` is the wildcards being parsed now,
// outermost first (what a cycle and the depth are told by).
struct template_detail::Library {
  WildcardSet* files = nullptr;
  std::map<std::string, std::shared_ptr<const Wildcard>> parsed;
  std::map<std::string, std::string> failed;  // the error of each wildcard that failed outermost
  std::vector<std::string> chain;

  std::shared_ptr<const Wildcard> resolve(const std::string& name, size_t at);
  std::shared_ptr<const Wildcard> load(const std::string& name, size_t at);
};

namespace {

// One text (a template, or one option of a wildcard): its own group numbers and wildcard occurrences.
class TextParser {
 public:
  // `limited`: the text is a job's prompt over kMaxTemplateBytes, refused if it turns out a template.
  TextParser(template_detail::Library& library, std::string_view text, bool limited = false)
      : library_(library), s_(text), limited_(limited) {}

  Sequence parse() { return sequence(0); }
  bool special() const { return special_; }
  const std::vector<std::string>& deepest() const { return deepest_; }  // of the wildcards it names

 private:
  [[noreturn]] void fail(size_t at, const std::string& what) const { throw TemplateError(at, what); }

  // The text is a template from byte `at` on: a group, a wildcard or an escape.
  void special(size_t at) {
    special_ = true;
    if (limited_) {
      fail(at, "a template may be at most " + std::to_string(kMaxTemplateBytes) + " bytes; this prompt is " +
                   std::to_string(s_.size()) + " bytes (long options go in a wildcard file)");
    }
  }

  // What a sequence makes, with a group or wildcard at byte `at` in it: refused, there, over the limits.
  void check(const template_detail::Longest& l, size_t at) const {
    const std::string with = "with this, one expansion ";
    if (l.bytes > kMaxExpandedPromptBytes) {
      fail(at, with + "is up to " + amount(l.bytes) + " bytes long; a prompt may have at most " + std::to_string(kMaxExpandedPromptBytes));
    }
    if (l.choices > kMaxTemplateChoices) {
      fail(at, with + "records up to " + amount(l.choices) + " choices; a prompt may have at most " + std::to_string(kMaxTemplateChoices));
    }
    if (l.choice_bytes > kMaxChoiceBytes) {
      fail(at, with + "records choices of up to " + amount(l.choice_bytes) + " bytes in all; a prompt's may have at most " +
                   std::to_string(kMaxChoiceBytes));
    }
  }

  // Parts up to the end, or (inside a group) up to its next '|' or its '}', which is left for the group.
  Sequence sequence(int depth) {
    Sequence seq;
    std::string text;
    size_t last_special = std::string_view::npos;  // where the last group or wildcard began
    // A part at byte `at` (npos for plain text, which adds no more than its own bytes).
    const auto add = [&](Part p, size_t at) {
      seq.longest = after(seq.longest, p.longest);
      seq.parts.push_back(std::move(p));
      if (at == std::string_view::npos) return;
      last_special = at;
      check(seq.longest, at);
    };
    const auto flush = [&] {
      if (text.empty()) return;
      Part p;
      p.longest.bytes = text.size();
      p.text = std::move(text);
      text.clear();
      add(std::move(p), std::string_view::npos);
    };
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '\\' && pos_ + 1 < s_.size() && std::string_view("{|}\\_").find(s_[pos_ + 1]) != std::string_view::npos) {
        special(pos_);
        text += s_[pos_ + 1];
        pos_ += 2;
      } else if (c == '{') {
        flush();
        const size_t at = pos_;
        add(group(depth), at);
      } else if (c == '|' && depth > 0) {
        break;
      } else if (c == '}') {
        if (depth > 0) break;
        fail(pos_, "a '}' that closes no '{' (write \\} for a '}' of the prompt)");
      } else if (c == '_' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '_') {
        const size_t end = s_.find("__", pos_ + 2);
        const std::string_view name = end == std::string_view::npos ? std::string_view() : s_.substr(pos_ + 2, end - pos_ - 2);
        if (!is_wildcard_name(name)) {
          text += c;  // not a wildcard: "snake__case", "__init__.py" without a closing pair
          ++pos_;
          continue;
        }
        flush();
        add(wildcard(std::string(name), pos_), pos_);
        pos_ = end + 2;
      } else {
        text += c;
        ++pos_;
      }
    }
    flush();
    if (last_special != std::string_view::npos) check(seq.longest, last_special);  // with the text after it
    seal(seq);
    return seq;
  }

  Part group(int depth) {
    const size_t open = pos_;
    if (depth + 1 > kMaxGroupNesting) fail(open, "groups nest more than " + std::to_string(kMaxGroupNesting) + " deep");
    special(open);
    Part g;
    g.kind = Part::Kind::kGroup;
    g.text = std::to_string(++groups_);
    ++pos_;
    for (;;) {
      g.alternatives.push_back(sequence(depth + 1));
      if (pos_ >= s_.size()) fail(open, "this '{' is never closed: no '}' ends its group (write \\{ for a '{' of the prompt)");
      if (s_[pos_++] == '}') break;  // else a '|': the next alternative
    }
    g.count = starts_of(g.alternatives, g.starts);
    g.longest = one_of(g.alternatives);
    return g;
  }

  Part wildcard(const std::string& name, size_t at) {
    special(at);
    Part w;
    w.kind = Part::Kind::kWildcard;
    const int n = ++occurrences_[name];
    w.text = n == 1 ? name : name + "#" + std::to_string(n);
    w.wildcard = library_.resolve(name, at);
    w.count = w.wildcard->count;
    w.longest = w.wildcard->longest;
    if (w.wildcard->deepest.size() > deepest_.size()) deepest_ = w.wildcard->deepest;
    return w;
  }

  template_detail::Library& library_;
  std::string_view s_;
  bool limited_ = false;
  size_t pos_ = 0;
  int groups_ = 0;
  std::map<std::string, int> occurrences_;
  bool special_ = false;
  std::vector<std::string> deepest_;
};

}  // namespace

std::shared_ptr<const Wildcard> template_detail::Library::resolve(const std::string& name, size_t at) {
  if (const auto it = std::find(chain.begin(), chain.end(), name); it != chain.end()) {
    std::vector<std::string> cycle(it, chain.end());
    cycle.push_back(name);
    throw TemplateError(at, "a wildcard cycle: " + chain_text(cycle) + " (a wildcard may not name itself, even through others)");
  }
  const auto too_deep = [&](const std::vector<std::string>& below) {
    std::vector<std::string> all = chain;
    all.insert(all.end(), below.begin(), below.end());
    throw TemplateError(at, "wildcards nest more than " + std::to_string(kMaxWildcardDepth) + " deep: " + chain_text(all));
  };
  if (chain.size() + 1 > static_cast<size_t>(kMaxWildcardDepth)) too_deep({name});
  if (const auto it = parsed.find(name); it != parsed.end()) {
    if (chain.size() + it->second->deepest.size() > static_cast<size_t>(kMaxWildcardDepth)) too_deep(it->second->deepest);
    return it->second;
  }
  if (const auto it = failed.find(name); it != failed.end()) throw TemplateError(at, it->second);
  // Named outermost, its error depends on no chain above it: every other template naming it gets it.
  const bool outermost = chain.empty();
  try {
    return load(name, at);
  } catch (const TemplateError& e) {
    if (outermost) failed.emplace(name, e.what());
    throw;
  }
}

// NAME read and parsed, with `chain` as resolve checked it.
std::shared_ptr<const Wildcard> template_detail::Library::load(const std::string& name, size_t at) {
  if (!files) throw TemplateError(at, "unknown wildcard __" + name + "__: no wildcard folder was given");
  std::string why;
  const std::string* text = files->read(name, why);
  if (!text) throw TemplateError(at, "unknown wildcard __" + name + "__: " + why);
  const std::string label = files->file_label(name);
  const auto options = wildcard_options(*text);
  if (options.empty()) {
    throw TemplateError(at, "wildcard __" + name + "__: " + label + " has no options (each of its lines is blank or a # comment)");
  }
  auto w = std::make_shared<Wildcard>();
  chain.push_back(name);
  struct Pop {
    std::vector<std::string>& chain;
    ~Pop() { chain.pop_back(); }
  } pop{chain};
  std::vector<std::string> deepest;
  for (const auto& option : options) {
    const auto where = [&](size_t offset) {
      return label + ":" + std::to_string(option.line) + ":" +
             std::to_string(option.column + count_chars(std::string_view(option.text).substr(0, offset)));
    };
    if (const size_t bad = invalid_utf8_at(option.text); bad != std::string::npos) {
      throw TemplateError(at, "in __" + name + "__, " + where(bad) + ": invalid UTF-8");
    }
    if (const size_t nul = option.text.find('\0'); nul != std::string::npos) {
      throw TemplateError(at, "in __" + name + "__, " + where(nul) + ": a NUL character");
    }
    TextParser p(*this, option.text);
    try {
      w->options.push_back(p.parse());
    } catch (const TemplateError& e) {
      throw TemplateError(at, "in __" + name + "__, " + where(e.offset()) + ": " + e.what());
    }
    if (p.deepest().size() > deepest.size()) deepest = p.deepest();
  }
  w->count = starts_of(w->options, w->starts);
  w->longest = one_of(w->options);
  w->deepest = {name};
  w->deepest.insert(w->deepest.end(), deepest.begin(), deepest.end());
  parsed.emplace(name, w);
  return w;
}

TemplateParser::TemplateParser(WildcardSet* wildcards) : library_(std::make_unique<template_detail::Library>()) { library_->files = wildcards; }
TemplateParser::~TemplateParser() = default;

PromptTemplate TemplateParser::parse(std::string_view text) {
  TextParser p(*library_, text, text.size() > kMaxTemplateBytes);
  PromptTemplate t;
  t.root_ = std::make_shared<const Sequence>(p.parse());
  t.is_template_ = p.special();
  return t;
}

void sort_choices(std::vector<std::pair<std::string, std::string>>& choices) {
  const auto rank = [](const std::string& n) {
    return !n.empty() && n.find_first_not_of("0123456789") == std::string::npos ? n.size() : SIZE_MAX;
  };
  std::stable_sort(choices.begin(), choices.end(), [&](const auto& l, const auto& r) {
    return std::pair(rank(l.first), std::string_view(l.first)) < std::pair(rank(r.first), std::string_view(r.first));
  });
}

std::vector<uint64_t> sample_combinations(uint64_t count, uint64_t n, uint64_t seed) {
  std::vector<uint64_t> out;
  if (n >= count) {
    out.resize(count);
    for (uint64_t i = 0; i < count; ++i) out[i] = i;
    return out;
  }
  // Floyd's algorithm: n draws, each distinct, whatever count is.
  SplitMix64 rng{seed};
  std::unordered_set<uint64_t> taken;
  taken.reserve(static_cast<size_t>(n) * 2);
  for (uint64_t j = count - n; j < count; ++j) {
    const uint64_t t = rng.below(j + 1);
    taken.insert(taken.count(t) ? j : t);
  }
  out.assign(taken.begin(), taken.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace rgbaq::jobs
