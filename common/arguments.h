#pragma once
// A small command-line parser: `--name value`, `--name=value`, boolean `--flag`, positionals.
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace rgbaq::common {

// A mistake in how the command was called: exit code 2, the message says what to type instead.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Arguments {
 public:
  // `valued` options take a value, `flags` do not; anything else starting with "--" is an error.
  Arguments(const std::vector<std::string>& args, const std::set<std::string>& valued,
            const std::set<std::string>& flags);

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::optional<std::string> get(const std::string& name) const;  // the last when given more than once
  std::vector<std::string> get_all(const std::string& name) const;  // every value, in order (repeatable options)
  std::string require(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

  // Numeric option values; throw UsageError naming the option.
  uint64_t get_u64(const std::string& name, uint64_t fallback) const;
  int get_int(const std::string& name, int fallback) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_;
  std::vector<std::string> positionals_;
};

// parse(text) for the value of option --NAME; a std::invalid_argument from it becomes a UsageError
// "--NAME: what", so each option's parser names only the value.
template <typename Parse>
auto parse_option(const std::string& name, const std::string& text, Parse parse) -> decltype(parse(text)) {
  try {
    return parse(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError("--" + name + ": " + e.what());
  }
}

// The name among `known` nearest to `name` within two edits (Levenshtein), for "did you mean": "" when
// none is that near. The first of equally near ones wins.
std::string nearest_name(const std::string& name, const std::vector<std::string>& known);

// Parses an unsigned 64-bit decimal integer; nullopt unless the whole text is one.
std::optional<uint64_t> parse_u64(const std::string& text);

}  // namespace rgbaq::common
