#pragma once
// The HTTP/1.1 server (Boost.Beast, on an io_context of its own thread): it reads requests within
// bounds and hands each one, whole, to the routes. What one client may take is bounded as on the
// socket: the header (max_header_bytes, else 431), the body (max_body_bytes, else 413, refused from
// its Content-Length before it is read), the time a request may take to arrive and a response to be
// taken (timeout: a slow or stalled client is closed), the connections open at once (more get a 503
// and are closed), and an event stream's unsent bytes (then it is dropped). A client can cost only its
// own connection.
#include <chrono>
#include <functional>
#include <memory>
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

class HttpServer {
 public:
  using Handler = std::function<void(const std::shared_ptr<HttpExchange>&)>;
  // Binds now (throws std::runtime_error naming the address and the OS's reason, e.g. in use).
  HttpServer(boost::asio::io_context& io, const boost::asio::ip::tcp::endpoint& endpoint, Handler handler, HttpLimits limits);
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
