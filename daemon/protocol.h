#pragma once
// The rgbaqd socket protocol, version 1: newline-delimited JSON over a Unix stream socket.
//
//   request   {"v": 1, "id": 7, "method": "status", "params": {...}}
//   response  {"v": 1, "id": 7, "ok": true, "result": {...}}
//             {"v": 1, "id": 7, "ok": false, "error": {"code": "not_found", "message": "...", "details": [...]}}
//   event     {"v": 1, "event": "progress", ...}     (only on a connection that asked to "watch")
//
// Methods: ping, status, submit, ls_runs, ls_jobs, cancel, retry, pause, resume, prioritize, export,
// watch. A malformed or oversized frame costs its connection (after an error response), nothing else.
// Header-only: the client (cli/) and the server (daemon/) share these names and limits, nothing more.
#include <cstddef>
#include <string_view>

namespace rgbaq::protocol {

inline constexpr int kVersion = 1;
inline constexpr size_t kMaxFrameBytes = 64u << 20;  // a submit carries the whole file

namespace error_code {
inline constexpr std::string_view kBadRequest = "bad_request";      // not JSON, no method, wrong params
inline constexpr std::string_view kUnsupportedVersion = "unsupported_version";
inline constexpr std::string_view kUnknownMethod = "unknown_method";
inline constexpr std::string_view kInvalidFile = "invalid_file";    // details: [{"line", "column", "field", "message"}]
inline constexpr std::string_view kNotFound = "not_found";
inline constexpr std::string_view kFrameTooLarge = "frame_too_large";
inline constexpr std::string_view kInternal = "internal";
}  // namespace error_code

}  // namespace rgbaq::protocol
