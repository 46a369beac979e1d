#pragma once
// A row's prompt as a template, expanded at submit into plain prompts (issue 41), the subset of
// sd-dynamic-prompts' syntax (adieyal/sd-dynamic-prompts docs/SYNTAX.md) that people already type:
//   {a|b|c}      one of the alternatives; groups nest, an alternative may be empty ("{|huge }dragon")
//   __name__     one option of the wildcard file name.txt (jobs/wildcard_set.h), itself a template;
//                wildcards inside wildcards up to kMaxWildcardDepth deep, a cycle refused
//   \{ \| \} \\ \_   the character itself ('|' outside a group, and '{' '}' escaped, are plain text)
// A <lora:name:weight> tag is plain text here: an alternative may hold one, and the expanded prompt's
// tags are taken out as any prompt's are (jobs/lora_list.h), so each expansion has its own LoRA set.
//
// Order: combinations are numbered 0..count()-1 as the digits of a number whose leftmost digit is the
// leftmost choice, so the leftmost choice varies slowest ("{a|b} {x|y}": a x, a y, b x, b y). A group's
// alternatives come in order, each with every combination inside it before the next ("{a {1|2}|b}":
// a 1, a 2, b); a wildcard's options likewise, in file order. Counting never enumerates.
//
// Choices: an expansion names what it chose. {...} groups by number, 1.. in the order of their opening
// braces in the text (nested ones included; a group inside an alternative not taken is absent);
// wildcards by name ("style"; a second __style__ in the same text is "style#2"). Inside a wildcard's
// option the names are the wildcard's, dotted: its first group "style.1", a wildcard in it
// "style.color". A value is the text the choice expanded to, without leading and trailing blanks.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jobs/wildcard_set.h"

namespace rgbaq::jobs {

inline constexpr int kMaxWildcardDepth = 8;  // __a__ whose options name __b__ ...: 8 levels in all
inline constexpr int kMaxGroupNesting = 32;  // {...} inside {...}

// What one template may make, refused when it is parsed (each combination is copied into the queue, and
// a daemon expands what a client sent): a template's own text, at most kMaxTemplateBytes (sixteen times a
// long prompt: a template that needs more puts its options in wildcard files); its longest expansion, at
// most kMaxExpandedPromptBytes (far over any prompt the encoder's 512 tokens take, so no prompt it could
// render is refused); the choices one expansion records, at most kMaxTemplateChoices, and their values'
// bytes, at most kMaxChoiceBytes. Lengths are reckoned from the longest option of every group and
// wildcard, saturating, without expanding anything.
inline constexpr size_t kMaxTemplateBytes = size_t{16} << 10;
inline constexpr uint64_t kMaxExpandedPromptBytes = uint64_t{64} << 10;
inline constexpr uint64_t kMaxTemplateChoices = 1000;
inline constexpr uint64_t kMaxChoiceBytes = uint64_t{256} << 10;

// A template that does not parse: the byte of the text given to TemplateParser::parse at fault (for a
// fault inside a wildcard's file, the __name__ that reached it; the message names the file, its line
// and column), and what is wrong.
class TemplateError : public std::runtime_error {
 public:
  TemplateError(size_t offset, const std::string& what) : std::runtime_error(what), offset_(offset) {}
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

struct Choice {
  std::string name, value;
};

struct Expansion {
  std::string prompt;
  std::vector<Choice> choices;  // in the order of the text
  // The choices as a JSON object in that order: {"1":"red","style":"pixel art"}; "{}" for none.
  std::string choices_json() const;
};

namespace template_detail {
struct Sequence;
struct Library;
}

class PromptTemplate {
 public:
  // Whether the text held a group, a wildcard or an escape: its expansions are not its text as written.
  bool is_template() const { return is_template_; }
  // The combinations, saturating at UINT64_MAX.
  uint64_t count() const;
  // Combination `index` (< count(), which must not have saturated), into `out` (cleared first).
  void expand(uint64_t index, Expansion& out) const;

 private:
  friend class TemplateParser;
  std::shared_ptr<const template_detail::Sequence> root_;
  bool is_template_ = false;
};

// Parses templates, reading and parsing each wildcard once for all the templates of one submit.
class TemplateParser {
 public:
  // `wildcards`: where __name__ is read (nullptr: none are, and a template naming one is refused).
  explicit TemplateParser(WildcardSet* wildcards);
  ~TemplateParser();
  TemplateParser(const TemplateParser&) = delete;
  TemplateParser& operator=(const TemplateParser&) = delete;

  // Throws TemplateError: an unclosed '{', a stray '}', groups nested over kMaxGroupNesting, an unknown
  // wildcard (naming the folder looked in), a wildcard file with no options, a fault in one (its file,
  // line and column), wildcards nested over kMaxWildcardDepth or in a cycle (naming the chain), a
  // template over kMaxTemplateBytes (at its start), an expansion over kMaxExpandedPromptBytes,
  // kMaxTemplateChoices or kMaxChoiceBytes (at the group or __name__ that takes it over). A wildcard
  // that fails is not parsed again: its error is kept for the other templates that name it.
  PromptTemplate parse(std::string_view text);

 private:
  std::unique_ptr<template_detail::Library> library_;
};

// Choices in the order they are shown: numbered groups by number ("2" before "10"), then the named
// ones in name order (an empty name is a named one). Sorts `choices`, whatever their order was.
void sort_choices(std::vector<std::pair<std::string, std::string>>& choices);

// `n` distinct combinations of `count`, drawn at random from `seed` (the same draw for the same three,
// on every platform: SplitMix64 and Floyd's algorithm, no library distribution), ascending; all of them
// when n >= count. Never enumerates the combinations not drawn.
std::vector<uint64_t> sample_combinations(uint64_t count, uint64_t n, uint64_t seed);

}  // namespace rgbaq::jobs
