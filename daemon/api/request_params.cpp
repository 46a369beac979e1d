#include "daemon/api/request_params.h"

#include "daemon/api/request_handler.h"
#include "daemon/protocol.h"

namespace rgbaq::daemon {

using nlohmann::json;

void bad_param(const std::string& key, const std::string& why) {
  throw RequestError(protocol::error_code::kBadRequest, "param \"" + key + "\" " + why);
}

const json* find_param(const json& params, const char* key) {
  const auto it = params.find(key);
  return it == params.end() || it->is_null() ? nullptr : &*it;
}

std::string text_param(const json& params, const char* key, const std::string& fallback, const char* prefix) {
  const json* v = find_param(params, key);
  if (!v) return fallback;
  if (!v->is_string()) bad_param(prefix + std::string(key), "must be a string");
  return v->get<std::string>();
}

bool bool_param(const json& params, const char* key, bool fallback) {
  const json* v = find_param(params, key);
  if (!v) return fallback;
  if (!v->is_boolean()) bad_param(key, "must be true or false");
  return v->get<bool>();
}

int64_t int_param(const json& params, const char* key, int64_t fallback, int64_t lo, int64_t hi, const char* prefix) {
  const json* v = find_param(params, key);
  if (!v) return fallback;
  // Judged in the type JSON holds it in: an unsigned past INT64_MAX is no int64, a signed one no uint64.
  const bool fits = (v->is_number_unsigned() && hi >= 0 && v->get<uint64_t>() <= static_cast<uint64_t>(hi) &&
                     (lo <= 0 || v->get<uint64_t>() >= static_cast<uint64_t>(lo))) ||
                    (v->is_number_integer() && !v->is_number_unsigned() && v->get<int64_t>() >= lo && v->get<int64_t>() <= hi);
  if (!fits) {
    bad_param(prefix + std::string(key),
              "must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + " (got " + v->dump() + ")");
  }
  return v->is_number_unsigned() ? static_cast<int64_t>(v->get<uint64_t>()) : v->get<int64_t>();
}

int64_t required_int_param(const json& params, const char* key, int64_t lo, int64_t hi) {
  if (!find_param(params, key)) bad_param(key, "is required");
  return int_param(params, key, 0, lo, hi);
}

}  // namespace rgbaq::daemon
