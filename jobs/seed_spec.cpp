#include "jobs/seed_spec.h"

#include <charconv>
#include <limits>

namespace rgbaq::jobs {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<uint64_t> parse_u64(std::string_view s) {
  s = trim(s);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

uint64_t SeedSpec::count() const {
  uint64_t total = 0;
  for (const auto& r : ranges) {
    const uint64_t n = r.last - r.first;  // + 1 below, guarding the full range
    if (n == std::numeric_limits<uint64_t>::max() || total > std::numeric_limits<uint64_t>::max() - n - 1) {
      return std::numeric_limits<uint64_t>::max();
    }
    total += n + 1;
  }
  return total;
}

std::optional<SeedSpec> parse_seed_spec(std::string_view text, std::string& error) {
  SeedSpec spec;
  text = trim(text);
  if (text.empty()) {
    error = "is empty";
    return std::nullopt;
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string_view item = trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    const size_t dash = item.find('-', 1);  // a leading '-' is a sign, not a range
    SeedRange r;
    if (dash == std::string_view::npos) {
      const auto v = parse_u64(item);
      if (!v) {
        error = "\"" + std::string(item) + "\" is not an integer in 0..18446744073709551615";
        return std::nullopt;
      }
      r = {*v, *v};
    } else {
      const auto a = parse_u64(item.substr(0, dash)), b = parse_u64(item.substr(dash + 1));
      if (!a || !b) {
        error = "\"" + std::string(item) + "\" is not a range of integers in 0..18446744073709551615 (like 1-16)";
        return std::nullopt;
      }
      if (*a > *b) {
        error = "range \"" + std::string(item) + "\" runs backwards";
        return std::nullopt;
      }
      r = {*a, *b};
    }
    spec.ranges.push_back(r);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return spec;
}

}  // namespace rgbaq::jobs
