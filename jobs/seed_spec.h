#pragma once
// Seeds as a row or an option gives them: one integer ("7"), a range ("1-16"), a list ("1,5,9"), or a
// list of integers and ranges ("1-4,9"). Every seed is in [0, 2^64).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rgbaq::jobs {

struct SeedRange {
  uint64_t first = 0, last = 0;  // inclusive
};

struct SeedSpec {
  std::vector<SeedRange> ranges;
  // The number of seeds, saturating at UINT64_MAX (a typo like 1-100000000 must not overflow).
  uint64_t count() const;
  bool single() const { return ranges.size() == 1 && ranges[0].first == ranges[0].last; }
  // Calls f(seed) in order.
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& r : ranges) {
      for (uint64_t s = r.first;; ++s) {
        f(s);
        if (s == r.last) break;
      }
    }
  }
};

// nullopt with `error` set when the text is not a seed specification.
std::optional<SeedSpec> parse_seed_spec(std::string_view text, std::string& error);

}  // namespace rgbaq::jobs
