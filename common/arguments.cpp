#include "common/arguments.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace rgbaq::common {
namespace {

// Levenshtein distance, for "did you mean": names are short.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean --X?)" for the known option nearest to `name` within two edits, else "".
std::string suggestion(const std::string& name, const std::set<std::string>& valued, const std::set<std::string>& flags) {
  std::vector<std::string> known(valued.begin(), valued.end());
  known.insert(known.end(), flags.begin(), flags.end());
  const std::string best = nearest_name(name, known);
  return best.empty() ? "" : " (did you mean --" + best + "?)";
}

}  // namespace

std::string nearest_name(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = 3;  // within two edits
  for (const auto& k : known) {
    const size_t d = edit_distance(name, k);
    if (d < best_distance) best = k, best_distance = d;
  }
  return best;
}

Arguments::Arguments(const std::vector<std::string>& args, const std::set<std::string>& valued,
                     const std::set<std::string>& flags) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      positionals_.insert(positionals_.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) {
      positionals_.push_back(a);
      continue;
    }
    const auto eq = a.find('=');
    const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (valued.count(name)) {
      if (eq != std::string::npos) {
        values_[name] = a.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        values_[name] = args[++i];
      } else {
        throw UsageError("option --" + name + " needs a value");
      }
      all_[name].push_back(values_[name]);
    } else if (flags.count(name)) {
      if (eq != std::string::npos) throw UsageError("option --" + name + " takes no value");
      values_[name] = "";
    } else {
      throw UsageError("unknown option " + a.substr(0, eq) + suggestion(name, valued, flags));
    }
  }
}

std::vector<std::string> Arguments::get_all(const std::string& name) const {
  const auto it = all_.find(name);
  return it == all_.end() ? std::vector<std::string>{} : it->second;
}

std::optional<std::string> Arguments::get(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Arguments::require(const std::string& name) const {
  auto v = get(name);
  if (!v) throw UsageError("option --" + name + " is required");
  return *v;
}

std::optional<uint64_t> parse_u64(const std::string& text) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

uint64_t Arguments::get_u64(const std::string& name, uint64_t fallback) const {
  const auto v = get(name);
  if (!v) return fallback;
  const auto parsed = parse_u64(*v);
  if (!parsed) throw UsageError("--" + name + " \"" + *v + "\" is not an integer in 0..18446744073709551615");
  return *parsed;
}

namespace {

int get_int_checked(const std::string& name, const std::string& v) {
  int value = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
    throw UsageError("--" + name + " \"" + v + "\" is not an integer");
  }
  return value;
}

}  // namespace

int Arguments::get_int(const std::string& name, int fallback) const {
  const auto v = get(name);
  return v ? get_int_checked(name, *v) : fallback;
}

}  // namespace rgbaq::common
