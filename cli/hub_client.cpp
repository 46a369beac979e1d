#include "cli/hub_client.h"

#include <curl/curl.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "common/build_info.h"
#include "common/printable_text.h"

namespace rgbaq::cli {
namespace {

using nlohmann::json;

constexpr size_t kMostBodyBytes = 64u << 20;  // a JSON answer (a listing of many thousand files is a few MiB)
constexpr int kMostRedirects = 10;

struct Transfer {
  void* response;  // HubClient::Response*, whose type is private
  const void* sink;
  std::exception_ptr error;  // thrown by the sink: kept across libcurl's C frames, rethrown after
  const std::function<void(int)>* on_waiting = nullptr;
  long* status = nullptr;  // the response's status: 0 until its status line came
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int reported = 0;  // the last whole second reported
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// huggingface_hub's _normalize_etag: a weak validator's W/ and the quotes go.
std::string normalize_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

std::string escaped(CURL* curl, const std::string& text, bool keep_slashes) {
  std::string out, part;
  auto flush = [&] {
    char* e = curl_easy_escape(curl, part.data(), static_cast<int>(part.size()));
    if (!e) throw std::bad_alloc();
    out += e;
    curl_free(e);
    part.clear();
  };
  for (const char c : text) {
    if (c == '/' && keep_slashes) {
      flush();
      out += '/';
    } else {
      part += c;
    }
  }
  flush();
  return out;
}

bool lower_hex(const std::string& s, size_t digits) {
  return s.size() == digits && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Why a listed file's path could lead out of the folder the pull writes it into, or is no file name
// git would hold ("" when it is fine): relative, no segment empty, "." or "..", no control character.
std::string listed_path_fault(const std::string& path) {
  if (path.empty()) return "an empty path";
  if (path.front() == '/') return "an absolute path";
  for (const char c : path)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "a control character";
  for (size_t start = 0;;) {
    const size_t end = path.find('/', start);
    const std::string segment = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (segment.empty()) return "an empty segment";
    if (segment == "." || segment == "..") return "a \"" + segment + "\" segment";
    if (segment.size() > 255) return "a segment over 255 bytes";
    if (end == std::string::npos) return "";
    start = end + 1;
  }
}

}  // namespace

std::string url_origin(const std::string& url) {
  CURLU* u = curl_url();
  if (!u) throw std::bad_alloc();
  std::string origin;
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char *scheme = nullptr, *host = nullptr, *port = nullptr;
    if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK && curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
      origin = lower(scheme) + "://" + lower(host) + ":" + port;
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
  }
  curl_url_cleanup(u);
  return origin;
}

HubClient::HubClient(std::string endpoint, std::string token) : endpoint_(std::move(endpoint)), token_(std::move(token)) {
  while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
  if (url_origin(endpoint_).empty()) throw std::invalid_argument("\"" + endpoint_ + "\" is not an http(s) URL");
  curl_global_init(CURL_GLOBAL_DEFAULT);
  curl_ = curl_easy_init();
  if (!curl_) throw std::runtime_error("libcurl failed to start");
}

HubClient::~HubClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HubClient::Response HubClient::perform(const std::string& url, std::optional<uint64_t> range_from, const BodySink* sink) {
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);
  Response r;
  Transfer t{&r, sink};
  char error[CURL_ERROR_SIZE] = {};
  curl_slist* headers = nullptr;
  // The token only to the Hub's own origin: a redirect to a CDN (another host or port) goes without it.
  const std::string auth = "Authorization: Bearer " + token_;
  if (!token_.empty() && url_origin(url) == url_origin(endpoint_)) headers = curl_slist_append(headers, auth.c_str());
  headers = curl_slist_append(headers, "Accept-Encoding: identity");
  const std::string agent = std::string("rgbaq/") + common::project_version();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, agent.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 30L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled transfer ends after a minute
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  const std::string range = range_from ? std::to_string(*range_from) + "-" : "";
  if (range_from) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, +[](char* data, size_t, size_t n, void* user) -> size_t {
    auto& resp = *static_cast<Response*>(static_cast<Transfer*>(user)->response);
    std::string line(data, n);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a 100 Continue): its own headers
      resp.headers.clear();
      const auto space = line.find(' ');
      resp.status = space == std::string::npos ? 0 : std::atol(line.c_str() + space + 1);
    } else if (const auto colon = line.find(':'); colon != std::string::npos) {
      const auto value = line.find_first_not_of(" \t", colon + 1);
      resp.headers[lower(line.substr(0, colon))] = value == std::string::npos ? "" : line.substr(value);
    }
    return n;
  });
  if (on_waiting_) {
    t.on_waiting = &on_waiting_;
    t.status = &r.status;
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, +[](void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> int {
      auto& tr = *static_cast<Transfer*>(user);
      if (*tr.status != 0) return 0;  // answered
      const int waited = static_cast<int>(std::chrono::duration<double>(std::chrono::steady_clock::now() - tr.start).count());
      if (waited > tr.reported) {
        tr.reported = waited;
        try {
          (*tr.on_waiting)(waited);
        } catch (...) {
          tr.error = std::current_exception();
          return 1;  // ends the transfer
        }
      }
      return 0;
    });
  }
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, +[](char* data, size_t, size_t n, void* user) -> size_t {
    auto& tr = *static_cast<Transfer*>(user);
    auto& resp = *static_cast<Response*>(tr.response);
    const auto* out = static_cast<const BodySink*>(tr.sink);
    if (resp.status / 100 == 2 && out) {
      try {
        (*out)(resp, data, n);
      } catch (...) {
        tr.error = std::current_exception();
        return 0;  // ends the transfer
      }
      return n;
    }
    if (resp.body.size() + n > kMostBodyBytes) return 0;
    resp.body.append(data, n);
    return n;
  });
  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (t.error) std::rethrow_exception(t.error);
  if (code != CURLE_OK) {
    throw HubError(HubErrorKind::kNetwork, std::string(curl_easy_strerror(code)) + (*error ? std::string(": ") + error : ""));
  }
  if (r.status / 100 == 3) {
    char* location = nullptr;
    curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location);
    if (location) r.redirect = location;
  }
  return r;
}

void HubClient::fail(const Response& r, const std::string& what) const {
  const auto code = r.headers.count("x-error-code") ? r.headers.at("x-error-code") : std::string();
  const std::string status = " (HTTP " + std::to_string(r.status) + (code.empty() ? "" : ", " + code) + ")";
  if (r.status == 401) {
    throw HubError(HubErrorKind::kDenied,
                   what + ": " + (token_.empty() ? "the Hub asks for a token" : "the Hub refused the token") + status +
                       ": the repo is gated or private (or does not exist); set HF_TOKEN or --token-file to a token "
                       "(" + endpoint_ + "/settings/tokens) of an account that has accepted its licence");
  }
  if (r.status == 403) {
    throw HubError(HubErrorKind::kDenied, what + ": access refused" + status +
                                              ": the repo is gated; accept its licence on the Hub with the account "
                                              "the token belongs to, or use a token with read access");
  }
  if (r.status == 404) {
    const std::string which = code == "RevisionNotFound" ? "no such revision"
                              : code == "EntryNotFound"  ? "no such file at this revision"
                              : code == "RepoNotFound"   ? "no such repo"
                                                         : "not found (the repo or the revision)";
    throw HubError(HubErrorKind::kNotFound, what + ": " + which + status);
  }
  throw HubError(HubErrorKind::kServer, what + ": the Hub answered" + status + " " + common::printable(r.body.substr(0, 200)));
}

HubRevision HubClient::revision(const std::string& repo, const std::string& revision) {
  CURL* curl = static_cast<CURL*>(curl_);
  std::string url = endpoint_ + "/api/models/" + repo + "/revision/" + escaped(curl, revision, false) + "?blobs=true";
  const std::string what = repo + "@" + revision;
  Response r;
  for (int hop = 0;; ++hop) {
    try {
      r = perform(url, std::nullopt, nullptr);
    } catch (const HubError& e) {
      throw HubError(e.kind(), "cannot reach " + endpoint_ + " (" + e.what() +
                                   "); check the network, or give a mirror with HF_ENDPOINT or --endpoint");
    }
    if (r.status / 100 != 3 || r.redirect.empty() || hop == kMostRedirects) break;
    url = r.redirect;  // a renamed repo
  }
  if (r.status != 200) fail(r, what);
  HubRevision out;
  // The listing names the files the pull writes (the blob an ETag names, the snapshot entry a path
  // names): a value that could lead outside the cache or DIR refuses the whole listing, before a write.
  const auto refuse = [&](const std::string& text) {
    throw HubError(HubErrorKind::kServer, what + ": the Hub lists " + text + "; refusing the listing");
  };
  try {
    const json doc = json::parse(r.body);
    out.commit = doc.at("sha").get<std::string>();
    std::set<std::string> seen;
    for (const auto& s : doc.at("siblings")) {
      HubFile f;
      f.path = s.at("rfilename").get<std::string>();
      const std::string shown = common::printable(f.path);
      if (const std::string fault = listed_path_fault(f.path); !fault.empty()) {
        refuse("a file \"" + shown + "\" (rfilename): " + fault + "; a listed file must stay inside the model's folder");
      }
      if (!seen.insert(f.path).second) refuse("the file \"" + shown + "\" twice (rfilename)");
      f.lfs = s.contains("lfs") && s["lfs"].is_object();
      const json& fields = f.lfs ? s["lfs"] : s;
      const std::string prefix = f.lfs ? "lfs." : "";
      const char* etag_field = f.lfs ? "sha256" : "blobId";
      const json etag = fields.contains(etag_field) ? fields[etag_field] : json();
      f.etag = etag.is_string() ? etag.get<std::string>() : std::string();
      if (f.lfs ? !lower_hex(f.etag, 64) : !lower_hex(f.etag, 40) && !lower_hex(f.etag, 64)) {
        refuse(shown + " with " + prefix + etag_field + " " + common::printable(etag.dump()) +
               (f.lfs ? ", not 64 lower-case hex digits (a SHA-256)" : ", not 40 or 64 lower-case hex digits (a git blob id)"));
      }
      const json size = fields.contains("size") ? fields["size"] : json();
      if (!size.is_number_unsigned()) refuse(shown + " with " + prefix + "size " + common::printable(size.dump()) + ", not a byte count");
      f.size = size.get<uint64_t>();
      if (f.size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        refuse(shown + " with " + prefix + "size " + std::to_string(f.size) + ", more than a file can hold (2^63-1 bytes)");
      }
      out.files.push_back(f);
    }
  } catch (const json::exception& e) {
    throw HubError(HubErrorKind::kServer, what + ": the Hub's revision listing is not what huggingface_hub reads: " + e.what());
  }
  if (out.commit.size() != 40 || out.commit.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw HubError(HubErrorKind::kServer, what + ": the Hub named \"" + common::printable(out.commit) + "\" as its commit");
  }
  return out;
}

void HubClient::download(const std::string& repo, const std::string& commit, const HubFile& file, uint64_t offset,
                         const std::function<void(uint64_t)>& begin, const std::function<void(const char*, size_t)>& sink) {
  CURL* curl = static_cast<CURL*>(curl_);
  const std::string start_url = endpoint_ + "/" + repo + "/resolve/" + commit + "/" + escaped(curl, file.path, true);
  const std::string what = repo + ": " + file.path;
  std::string url = start_url;
  bool begun = false;
  // The Hub's own answer (the redirect, or the file itself) says which commit and content it serves.
  auto check_hub = [&](const Response& r) {
    const auto header = [&](const char* name) { return r.headers.count(name) ? r.headers.at(name) : std::string(); };
    const std::string served = header("x-repo-commit");
    if (!served.empty() && served != commit) {
      throw HubError(HubErrorKind::kServer, what + ": the Hub serves commit " + common::printable(served) + ", not " + commit);
    }
    const std::string etag = normalize_etag(!header("x-linked-etag").empty() ? header("x-linked-etag") : header("etag"));
    if (!etag.empty() && !file.etag.empty() && etag != file.etag) {
      throw HubError(HubErrorKind::kServer, what + ": the Hub's ETag " + common::printable(etag) +
                                                " is not the listing's " + file.etag + " (the repo changed during the pull?)");
    }
  };
  int hop = 0;
  const BodySink body = [&](const Response& r, const char* data, size_t n) {
    if (!begun) {
      if (hop == 0) check_hub(r);
      begun = true;
      uint64_t start = 0;
      const auto& h = r.headers;
      if (r.status == 206 && h.count("content-range")) {
        // "bytes START-END/TOTAL"
        start = std::strtoull(h.at("content-range").c_str() + h.at("content-range").find_first_of("0123456789"), nullptr, 10);
      }
      begin(start);
    }
    sink(data, n);
  };
  for (;; ++hop) {
    Response r;
    try {
      r = perform(url, offset > 0 ? std::optional<uint64_t>(offset) : std::nullopt, &body);
    } catch (const HubError& e) {
      throw HubError(e.kind(), what + ": " + e.what());
    }
    if (hop == 0) check_hub(r);
    if (r.status / 100 == 3 && !r.redirect.empty() && hop < kMostRedirects) {
      url = r.redirect;
      continue;
    }
    if (r.status == 416 && offset > 0) {  // the bytes on disk are not a prefix the server knows: start over
      offset = 0;
      url = start_url;
      hop = -1;
      continue;
    }
    if (r.status / 100 != 2) fail(r, what);
    if (!begun) begin(r.status == 206 ? offset : 0);  // an empty file
    return;
  }
}

}  // namespace rgbaq::cli
