#include "daemon/socket/request_frame.h"

#include "daemon/protocol.h"

namespace rgbaq::daemon {

using nlohmann::json;

json ok_response(const json& id, json result) {
  return {{"v", protocol::kVersion}, {"id", id}, {"ok", true}, {"result", std::move(result)}};
}

json error_response(const json& id, std::string_view code, const std::string& message, json details) {
  return {{"v", protocol::kVersion}, {"id", id}, {"ok", false},
          {"error", {{"code", code}, {"message", message}, {"details", std::move(details)}}}};
}

ParsedFrame parse_request_frame(std::string_view line) {
  auto refuse = [](const json& id, std::string_view code, const std::string& message) {
    return ParsedFrame{std::nullopt, error_response(id, code, message)};
  };
  if (!protocol::nesting_within(line)) {
    return refuse(nullptr, protocol::error_code::kBadRequest,
                  "a request nests JSON deeper than " + std::to_string(protocol::kMaxJsonDepth) + " levels");
  }
  json request = json::parse(line, nullptr, false);
  if (request.is_discarded() || !request.is_object()) {
    return refuse(nullptr, protocol::error_code::kBadRequest, "a request must be one JSON object per line");
  }
  json id = nullptr;
  if (const auto it = request.find("id"); it != request.end()) {
    if (!it->is_null() && !it->is_number() && !it->is_string()) {
      return refuse(nullptr, protocol::error_code::kBadRequest, "a request's \"id\" must be a number or a string");
    }
    id = *it;
  }
  const auto v = request.find("v");
  if (v == request.end() || !v->is_number_integer() || *v != protocol::kVersion) {
    return refuse(id, protocol::error_code::kUnsupportedVersion,
                  "this daemon speaks protocol version " + std::to_string(protocol::kVersion) + " (\"v\": " +
                      std::to_string(protocol::kVersion) + ")");
  }
  const auto method = request.find("method");
  if (method == request.end() || !method->is_string()) {
    return refuse(id, protocol::error_code::kBadRequest, "a request needs a \"method\" string");
  }
  json params = json::object();
  if (const auto it = request.find("params"); it != request.end() && !it->is_null()) {
    if (!it->is_object()) return refuse(id, protocol::error_code::kBadRequest, "a request's \"params\" must be an object");
    params = std::move(*it);
  }
  return {RequestFrame{std::move(id), method->get<std::string>(), std::move(params)}, json()};
}

}  // namespace rgbaq::daemon
