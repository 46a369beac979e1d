#pragma once
// One HTTP POST of a webhook, through libcurl (http:// and https://, the system's CA certificates, no
// redirects followed): the daemon has Boost.Beast, but a TLS client with certificate and host name
// checks is libcurl's daily work, and the CLI links it already.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace rgbaq::daemon::hooks {

struct PostAnswer {
  long status = 0;    // the HTTP status; 0 when none came
  std::string error;  // why none came (a connection refused, a timeout, a TLS failure)
  bool delivered() const { return status >= 200 && status < 300; }
  // "HTTP 200", "HTTP 500", or "no answer: Couldn't connect to server (...)".
  std::string words() const;
};

// POSTs `body` to `url` with `headers` ("Name: value"). Connecting may take `connect_timeout`, the whole
// exchange `timeout`; `stop` turning true ends it early (an error). The answer's body is read and
// dropped. Call curl_global_init once before (WebhookSender does).
PostAnswer post(const std::string& url, const std::string& body, const std::vector<std::string>& headers,
                std::chrono::milliseconds connect_timeout, std::chrono::milliseconds timeout, const std::function<bool()>& stop);

}  // namespace rgbaq::daemon::hooks
