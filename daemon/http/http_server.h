#pragma once
// The HTTP/1.1 server (Boost.Beast, on an io_context of its own thread): it reads requests within
// bounds and hands each one, whole, to the routes. Each request's header is screened first (the
// credentials): a refused one is answered from its header and its body is never buffered. What one
// client may take is bounded as on the socket: the header (max_header_bytes, else 431), the body
// (max_body_bytes, else 413, refused from its Content-Length before it is read; a Transfer-Encoding
// other than chunked, whose length is unknown, gets 400), the time a request may take to arrive and a
// response to be taken (timeout: a slow or stalled client is closed), the connections open at once (at
// the cap, the one that has waited longest for a request is closed to make room; when every one is
// in a request, the newcomer gets a 503), and an event stream's unsent bytes (then it is dropped). A
// client that hangs up while its request is handled frees its connection at once. A client can cost
// only its own connection.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including <utility>

#include <boost/asio.hpp>

#include "daemon/http/http_exchange.h"

namespace rgbaq::daemon::http {

struct HttpLimits {
  size_t max_header_bytes = 16u << 10;
  size_t max_body_bytes = 16u << 20;
  std::chrono::milliseconds timeout{30000};
  int max_connections = 64;
  size_t max_stream_bytes = 1u << 20;
};

// "127.0.0.1:7878", "[::1]:7878", "0.0.0.0:8080" -> an endpoint. Throws std::invalid_argument naming
// what is wrong.
boost::asio::ip::tcp::endpoint parse_http_address(const std::string& text);

// The address could not be bound: what() names it and the OS's reason; in_use() when another process
// holds it.
class HttpBindError : public std::runtime_error {
 public:
  HttpBindError(const std::string& what, bool in_use) : std::runtime_error(what), in_use_(in_use) {}
  bool in_use() const { return in_use_; }

 private:
  bool in_use_;
};

class HttpServer {
 public:
  using Handler = std::function<void(const std::shared_ptr<HttpExchange>&)>;
  // Sees each request's header (the body still unread, request.body() empty) on the server's thread:
  // a response refuses it (sent, then the connection is closed without reading the body).
  using Screen = std::function<std::optional<Response>(const Request& header)>;
  // Binds now (throws HttpBindError naming the address and the OS's reason, e.g. in use).
  HttpServer(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint, Screen screen, Handler handler,
             HttpLimits limits);
  ~HttpServer();
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void start();
  void stop();  // stops accepting and closes every connection; call on the io_context's thread

  struct Shared;

 private:
  void accept();

  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer backoff_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace rgbaq::daemon::http
