#pragma once
// A request's parameters, read as JSON holds them: the one reader every method uses (whatever the
// transport: the socket, HTTP), so an integer out of its range is refused naming its field, never
// wrapped (get<int>() would store 2^40 + 1 as 1), and a value of the wrong type likewise.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace rgbaq::daemon {

// Throws RequestError (bad_request): param "KEY" WHY.
[[noreturn]] void bad_param(const std::string& key, const std::string& why);

// The value of `key`, or nullptr when it is absent or null.
const nlohmann::json* find_param(const nlohmann::json& params, const char* key);

// `prefix` names the object the key is in ("defaults."), for the message.
std::string text_param(const nlohmann::json& params, const char* key, const std::string& fallback, const char* prefix = "");
bool bool_param(const nlohmann::json& params, const char* key, bool fallback = false);

// An integer in [lo, hi]; `fallback` when absent. Anything else (out of range, a fraction, a string)
// is refused with the range and the value sent.
int64_t int_param(const nlohmann::json& params, const char* key, int64_t fallback, int64_t lo, int64_t hi,
                  const char* prefix = "");
// As int_param, and refused when absent.
int64_t required_int_param(const nlohmann::json& params, const char* key, int64_t lo, int64_t hi);

}  // namespace rgbaq::daemon
