#include "daemon/hooks/webhook_post.h"

#include <curl/curl.h>

#include <memory>

#include "storage/render_metadata.h"

namespace rgbaq::daemon::hooks {

std::string PostAnswer::words() const {
  if (status != 0) return "HTTP " + std::to_string(status);
  return "no answer: " + error;
}

PostAnswer post(const std::string& url, const std::string& body, const std::vector<std::string>& headers,
                std::chrono::milliseconds connect_timeout, std::chrono::milliseconds timeout, const std::function<bool()>& stop) {
  const std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return {.error = "libcurl failed to start"};
  curl_slist* list = nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  const std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(list, curl_slist_free_all);
  const std::string agent = std::string("rgbaqd/") + storage::kRgbaqVersion;
  char error[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, header_list.get());
  curl_easy_setopt(c, CURLOPT_USERAGENT, agent.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for name lookups
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, +[](char*, size_t, size_t n, void*) -> size_t { return n; });
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &stop);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, +[](void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> int {
    return (*static_cast<const std::function<bool()>*>(user))() ? 1 : 0;
  });
  const CURLcode code = curl_easy_perform(c);
  if (code != CURLE_OK) {
    if (code == CURLE_ABORTED_BY_CALLBACK) return {.error = "the daemon stopped during the attempt"};
    return {.error = std::string(curl_easy_strerror(code)) + (*error ? std::string(" (") + error + ")" : "")};
  }
  PostAnswer answer;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

}  // namespace rgbaq::daemon::hooks
