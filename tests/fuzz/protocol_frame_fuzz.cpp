// libFuzzer target for the daemon's request frames (daemon/request_frame.h) and the client's reply
// check: any line must give a request or an error response that serializes, never a crash, a stack
// overflow, an uncaught exception or a sanitizer report. Build and run with scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/protocol.h"
#include "daemon/socket/request_frame.h"

using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const auto frame = rgbaq::daemon::parse_request_frame(line);
  if (frame.request) {
    const auto& r = *frame.request;
    if (!r.params.is_object()) __builtin_trap();
    if (!r.id.is_null() && !r.id.is_number() && !r.id.is_string()) __builtin_trap();
    // The reply echoes the id; the client parses it back within the same depth bound.
    const std::string reply = rgbaq::daemon::ok_response(r.id, {{"params", r.params}}).dump(-1, ' ', false, json::error_handler_t::replace);
    if (!rgbaq::protocol::nesting_within(reply)) __builtin_trap();
    if (json::parse(reply, nullptr, false).is_discarded()) __builtin_trap();
  } else {
    const auto& e = frame.error_response;
    if (!e.is_object() || e["ok"] != false || !e["error"]["code"].is_string()) __builtin_trap();
    (void)e.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  // The client side: a reply line is parsed only within the depth bound.
  if (rgbaq::protocol::nesting_within(line)) (void)json::parse(line, nullptr, false);
  return 0;
}
