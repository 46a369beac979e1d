#include "daemon/http/http_guard.h"

#include <cctype>
#include <cstring>
#include <stdexcept>

#include "common/sha256.h"
#include "daemon/base/private_files.h"

namespace rgbaq::daemon::http {
namespace {

// RFC 4648 base64, for HTTP Basic credentials; nullopt for anything that is not.
std::optional<std::string> base64_decode(std::string_view in) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (const char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') break;
    else return std::nullopt;
    buffer = buffer << 6 | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Equal texts, in a time that does not depend on where they differ.
bool same_text(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool state_changing(beast_http::verb v) {
  return v != beast_http::verb::get && v != beast_http::verb::head && v != beast_http::verb::options;
}

}  // namespace

std::string load_or_create_http_token(const std::filesystem::path& file) {
  return load_or_create_secret(file, "the HTTP API's token");
}

HttpGuard::HttpGuard(std::string token, std::vector<std::string> hosts, std::string cors_origin)
    : token_(std::move(token)), hosts_(std::move(hosts)), cors_origin_(std::move(cors_origin)) {
  for (auto& h : hosts_) h = lower(h);
}

bool HttpGuard::token_matches(std::string_view candidate) const { return same_text(candidate, token_); }

std::string HttpGuard::media_key(int64_t expires_at) const {
  const std::string expiry = std::to_string(expires_at);
  return expiry + "." + common::hmac_sha256_hex(token_, "rgbaq media key " + expiry);
}

bool HttpGuard::media_key_valid(std::string_view key, int64_t now) const {
  const auto dot = key.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 12) return false;
  int64_t expires_at = 0;
  for (const char c : key.substr(0, dot)) {
    if (c < '0' || c > '9') return false;
    expires_at = expires_at * 10 + (c - '0');
  }
  return expires_at >= now && same_text(key, media_key(expires_at));
}

std::string HttpGuard::job_image_query(int64_t job, int64_t expires_at) const {
  const std::string expiry = std::to_string(expires_at);
  return "expires=" + expiry + "&signature=" + common::hmac_sha256_hex(token_, "rgbaq job image " + std::to_string(job) + " " + expiry);
}

bool HttpGuard::job_image_signed(int64_t job, std::string_view expires, std::string_view signature, int64_t now) const {
  if (expires.empty() || expires.size() > 12) return false;
  int64_t expires_at = 0;
  for (const char c : expires) {
    if (c < '0' || c > '9') return false;
    expires_at = expires_at * 10 + (c - '0');
  }
  const std::string wanted = common::hmac_sha256_hex(token_, "rgbaq job image " + std::to_string(job) + " " + std::to_string(expires_at));
  return expires_at >= now && same_text(signature, wanted);
}

bool HttpGuard::origin_allowed(std::string_view origin) const {
  if (!cors_origin_.empty() && origin == cors_origin_) return true;
  const std::string o = lower(origin);
  for (const auto& h : hosts_) {
    if (o == "http://" + h) return true;
  }
  return false;
}

std::optional<Refusal> HttpGuard::check_host_and_origin(const Request& r) const {
  const std::string host = lower(std::string(r[beast_http::field::host]));
  bool host_ok = false;
  for (const auto& h : hosts_) host_ok = host_ok || host == h;
  if (!host_ok) {
    return Refusal{beast_http::status::forbidden, "host_refused",
                   "this server answers to Host " + (hosts_.empty() ? std::string("?") : hosts_.front()) +
                       ", not \"" + host + "\" (rgbaqd --http-host NAME adds a name)"};
  }
  const std::string_view origin = text_of(r[beast_http::field::origin]);
  if (!origin.empty() && !origin_allowed(origin)) {
    return Refusal{beast_http::status::forbidden, "origin_refused",
                   "requests from pages of " + std::string(origin) + " are refused (rgbaqd --http-cors ORIGIN allows one origin)"};
  }
  // A browser names the fetch's site; a state-changing request from a browser must carry our Origin.
  const std::string_view fetch_site = text_of(r["Sec-Fetch-Site"]);
  if (state_changing(r.method()) && origin.empty() && !fetch_site.empty() && fetch_site != "same-origin" && fetch_site != "none") {
    return Refusal{beast_http::status::forbidden, "origin_refused", "a state-changing request from a browser must carry this server's Origin"};
  }
  return std::nullopt;
}

bool HttpGuard::authenticated(const Request& r) const {
  const std::string_view auth = text_of(r[beast_http::field::authorization]);
  if (auth.size() > 7 && lower(auth.substr(0, 7)) == "bearer ") return token_matches(auth.substr(7));
  if (auth.size() > 6 && lower(auth.substr(0, 6)) == "basic ") {
    const auto decoded = base64_decode(auth.substr(6));
    if (!decoded) return false;
    const auto colon = decoded->find(':');
    return colon != std::string::npos && token_matches(std::string_view(*decoded).substr(colon + 1));
  }
  return false;
}

bool HttpGuard::is_cors_preflight(const Request& r) const {
  return r.method() == beast_http::verb::options && !cors_origin_.empty() && r[beast_http::field::origin] == cors_origin_;
}

void HttpGuard::add_cors_headers(const Request& r, Response& response) const {
  if (cors_origin_.empty() || r[beast_http::field::origin] != cors_origin_) return;
  response.set(beast_http::field::access_control_allow_origin, cors_origin_);
  response.set(beast_http::field::vary, "Origin");
  response.set(beast_http::field::access_control_allow_headers, "Authorization, Content-Type, Last-Event-ID");
  response.set(beast_http::field::access_control_allow_methods, "GET, POST, OPTIONS");
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::optional<std::string> query_value(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const auto end = query.find('&');
    const std::string_view item = query.substr(0, end);
    const auto eq = item.find('=');
    if (percent_decode(item.substr(0, eq)) == key) return eq == std::string_view::npos ? "" : percent_decode(item.substr(eq + 1));
    if (end == std::string_view::npos) break;
    query.remove_prefix(end + 1);
  }
  return std::nullopt;
}

}  // namespace rgbaq::daemon::http
