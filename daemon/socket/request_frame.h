#pragma once
// One request line of the protocol (daemon/protocol.h), checked before anything acts on it: JSON no
// deeper than protocol::kMaxJsonDepth, an object, "v" the integer protocol::kVersion, an "id" that is
// null, a number or a string, a "method" string and "params" an object. Pure, so the fuzzer drives it.
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rgbaq::daemon {

struct RequestFrame {
  nlohmann::json id;  // echoed in the response
  std::string method;
  nlohmann::json params;  // an object
};

// Either the request or the error response to send before closing the connection.
struct ParsedFrame {
  std::optional<RequestFrame> request;
  nlohmann::json error_response;
};

ParsedFrame parse_request_frame(std::string_view line);

// A response line's JSON (without the newline).
nlohmann::json ok_response(const nlohmann::json& id, nlohmann::json result);
nlohmann::json error_response(const nlohmann::json& id, std::string_view code, const std::string& message,
                              nlohmann::json details = nlohmann::json::array());

}  // namespace rgbaq::daemon
