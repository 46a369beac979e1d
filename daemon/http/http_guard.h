#pragma once
// Who may use the HTTP API, checked before any route runs: a token (DATA_DIR/http-token, made at the
// first start, mode 0600) as `Authorization: Bearer TOKEN` (so an OpenAI client's API key is the
// token), as the password of HTTP Basic (A1111 clients), or as the cookie that `GET /?token=TOKEN`
// sets (a browser; HttpOnly, SameSite=Strict). Against browser-borne attacks: the Host header must name
// an address we serve (DNS rebinding), a request from a page of another origin is refused, and CORS
// headers are sent only for the one origin `--http-cors` names. A refusal says only what is needed:
// nothing of the queue reaches a client without the token.
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
  HttpGuard(std::string token, std::vector<std::string> hosts, std::string cors_origin, unsigned short port);

  // Host and Origin, then the credentials. nullopt: the request may go on.
  std::optional<Refusal> check(const Request& request) const;
  std::optional<Refusal> check_host_and_origin(const Request& request) const;
  bool authenticated(const Request& request) const;
  bool token_matches(std::string_view candidate) const;  // in constant time
  // The cookie a browser gets for a good `?token=`.
  std::string session_cookie() const;
  // Access-Control-Allow-* for the configured origin, when the request comes from it.
  void add_cors_headers(const Request& request, Response& response) const;
  bool is_cors_preflight(const Request& request) const;
  const std::vector<std::string>& hosts() const { return hosts_; }

 private:
  bool origin_allowed(std::string_view origin) const;

  std::string token_;
  std::vector<std::string> hosts_;
  std::string cors_origin_;
  std::string cookie_name_;
};

// The value of `key` in a query string ("a=1&token=x"), percent-decoded.
std::optional<std::string> query_value(std::string_view query, std::string_view key);
std::string percent_decode(std::string_view text);

}  // namespace rgbaq::daemon::http
