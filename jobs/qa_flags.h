#pragma once
// The alpha check's flags by name (assets/alpha_check.h computes them): here, below assets/, because a
// job row names them (`reseed_on`) and the queue filters by them, and both are validated where rows are.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rgbaq::jobs {

enum class QaFlag : uint8_t { kEmpty, kNoAlpha, kCutOff, kFragmented, kFakeTransparency };
inline constexpr int kQaFlagCount = 5;
// A set of flags, one bit per QaFlag (bit i: QaFlag i); 0 is "ok".
using QaFlags = uint32_t;
inline constexpr QaFlags qa_bit(QaFlag f) { return QaFlags{1} << static_cast<int>(f); }

std::string_view qa_flag_name(QaFlag f);  // "empty", "no_alpha", "cut_off", "fragmented", "fake_transparency"
std::optional<QaFlag> parse_qa_flag(std::string_view name);
// "ok" for none, else the names in QaFlag order joined by ',' ("cut_off,fragmented").
std::string qa_flags_text(QaFlags flags);
// The names, joined by ", ", for messages ("one of empty, no_alpha, ...").
std::string qa_flag_names();

// A comma-separated list of flag names ("cut_off,empty"; spaces around names allowed; at least one).
// Throws std::invalid_argument naming the name at fault: an unknown one, "ok" (not a flag), or an
// empty list or entry.
QaFlags parse_qa_flag_list(std::string_view list);

// A listing's --qa filter: a flag name, or "ok" (no flag). nullopt for anything else.
std::optional<std::string> parse_qa_filter(std::string_view name);

}  // namespace rgbaq::jobs
