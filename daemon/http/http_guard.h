#pragma once
// Who may use the HTTP API, checked from a request's header before its body is read: a token
// (DATA_DIR/http-token, made at the first start, mode 0600) as `Authorization: Bearer TOKEN` (so an
// OpenAI client's API key is the token) or as the password of HTTP Basic (A1111 clients). No cookie
// grants anything: a browser sends a host's cookies to every port of it (another user's server on
// 127.0.0.1 would receive them), so the gallery keeps the token in its origin's storage (origins do
// include the port) and sends the header; its <img> elements, which cannot, carry a media key, an
// expiring HMAC of the token that opens the images and thumbnails and nothing else; an image URL the
// OpenAI API hands out carries a signature of its one job instead (an HMAC of the job and an expiry,
// an hour). Against browser-borne attacks: the Host header must name an address we serve (DNS
// rebinding), a request from a page of another origin is refused, and CORS headers are sent only for
// the one origin `--http-cors` names. A refusal says only what is needed: nothing of the queue reaches
// a client without the token.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "daemon/http/http_exchange.h"

namespace rgbaq::daemon::http {

// Reads DATA_DIR/http-token, or makes it (32 random bytes as hex, mode 0600, written atomically) when
// there is none. Throws std::runtime_error naming the file when it cannot, or when it is open to others
// (it is then made 0600 again and the log says so).
std::string load_or_create_http_token(const std::filesystem::path& file);

struct Refusal {
  beast_http::status status;
  std::string code, message;
};

class HttpGuard {
 public:
  // `hosts`: every Host header value we answer to ("127.0.0.1:7878", "localhost:7878", ...).
  HttpGuard(std::string token, std::vector<std::string> hosts, std::string cors_origin);

  // Host and Origin. nullopt: the request may go on.
  std::optional<Refusal> check_host_and_origin(const Request& request) const;
  // The token in an Authorization header (Bearer, or Basic's password).
  bool authenticated(const Request& request) const;
  bool token_matches(std::string_view candidate) const;  // in constant time
  // "EXPIRY.HEX": HEX = HMAC-SHA256(token, "rgbaq media key " + EXPIRY), EXPIRY in Unix seconds.
  std::string media_key(int64_t expires_at) const;
  // A media key of this token that has not expired at `now` (Unix seconds); compared in constant time.
  bool media_key_valid(std::string_view key, int64_t now) const;
  // A signed address for one job's image, as the OpenAI API's `response_format: "url"` hands out (an
  // <img> or a download needs no token): the query "expires=EXPIRY&signature=HEX", HEX =
  // HMAC-SHA256(token, "rgbaq job image " + JOB + " " + EXPIRY), EXPIRY in Unix seconds.
  std::string job_image_query(int64_t job, int64_t expires_at) const;
  // Whether `expires` and `signature` sign job `job`'s image and have not expired at `now`; compared in
  // constant time.
  bool job_image_signed(int64_t job, std::string_view expires, std::string_view signature, int64_t now) const;
  // Access-Control-Allow-* for the configured origin, when the request comes from it.
  void add_cors_headers(const Request& request, Response& response) const;
  bool is_cors_preflight(const Request& request) const;
  const std::vector<std::string>& hosts() const { return hosts_; }

 private:
  bool origin_allowed(std::string_view origin) const;

  std::string token_;
  std::vector<std::string> hosts_;
  std::string cors_origin_;
};

// The value of `key` in a query string ("a=1&token=x"), percent-decoded.
std::optional<std::string> query_value(std::string_view query, std::string_view key);
std::string percent_decode(std::string_view text);

}  // namespace rgbaq::daemon::http
