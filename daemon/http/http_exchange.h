#pragma once
// One HTTP request in flight, as the server hands it to the routes: the parsed request, and the one
// way back to its connection. A route answers once (respond, or respond_chunked for a body made as it
// is sent), or opens an event stream (open_stream,
// then write_event as often as it likes) that lasts until the client goes or the server stops. Every
// method may be called from any thread: the connection does its I/O on its own.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including <utility>

#include <boost/beast/http.hpp>

namespace rgbaq::daemon::http {

namespace beast_http = boost::beast::http;
using Request = beast_http::request<beast_http::string_body>;
using Response = beast_http::response<beast_http::string_body>;

// Beast's string_view (Boost's own in 1.74) as the standard one.
inline std::string_view text_of(boost::beast::string_view s) { return {s.data(), s.size()}; }

// One piece of a body sent as it is made: its text, and whether it is the last or the making failed.
struct BodyChunk {
  std::string text;
  bool last = false;
  bool failed = false;  // the connection closes without the chunked body's end: the client sees it cut
};
// Asked for the next piece of a body once the one before is written; gives it (from any thread) to
// the function it is handed.
using BodySource = std::function<void(std::function<void(BodyChunk)> give)>;

class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  virtual const Request& request() const = 0;
  // The peer's address, for the log.
  virtual std::string peer() const = 0;
  // Whether the connection has ended (the client hung up, or the server closed it): an answer would go
  // nowhere, so work done only for it may stop.
  virtual bool hung_up() const = 0;
  // The response, once; keep-alive as the request asked unless the response says close.
  virtual void respond(Response response) = 0;
  // Sends `header` (a 200 with its headers, no body) and keeps the connection for `write_event`. The
  // stream ends when the client hangs up, stops reading (more than the server's event bound unsent),
  // or the server stops; `on_end` runs then, once, on any thread.
  virtual void open_stream(Response header, std::function<void()> on_end) = 0;
  virtual void write_event(std::string text) = 0;
  // Sends `header` (a 200 with its headers) and then a body in chunks (Transfer-Encoding: chunked),
  // asking `source` for each next piece only once the one before is written: a body of any size
  // holds one piece in memory, and a client that stops reading is closed at the server's timeout.
  virtual void respond_chunked(Response header, BodySource source) = 0;
};

}  // namespace rgbaq::daemon::http
