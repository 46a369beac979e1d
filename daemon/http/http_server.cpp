#include "daemon/http/http_server.h"

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <boost/beast/core.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace rgbaq::daemon::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

constexpr auto kStreamKeepAlive = std::chrono::seconds(15);  // an idle event stream says it is alive
// A refused request's body is read and dropped (never held) for at most this long before the close.
constexpr std::chrono::milliseconds kDrainTime{2000};

class Connection;

}  // namespace

struct HttpServer::Shared {
  Shared(Screen s, Handler h, HttpLimits l) : screen(std::move(s)), handler(std::move(h)), limits(l) {}
  Screen screen;
  Handler handler;
  HttpLimits limits;
  std::mutex mutex;  // guards open (a connection may end on any thread)
  std::map<const void*, std::weak_ptr<Connection>> open;  // connections not yet closed: the cap counts these
  std::chrono::steady_clock::time_point last_refusal_log;
};

tcp::endpoint parse_http_address(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw std::invalid_argument("\"" + text + "\" is not ADDR:PORT (e.g. 127.0.0.1:7878), nor off");
  }
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  size_t used = 0;
  long port = -1;
  try {
    port = std::stol(port_text, &used);
  } catch (const std::exception&) {
  }
  if (used != port_text.size() || port < 0 || port > 65535) {
    throw std::invalid_argument("\"" + text + "\": the port \"" + port_text + "\" is not a number from 0 to 65535");
  }
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) throw std::invalid_argument("\"" + text + "\": \"" + host + "\" is not an IP address (a name other than localhost is not bound)");
  return {address, static_cast<unsigned short>(port)};
}

namespace {

// A response's status line and headers as they go on the wire, for a body written after them.
std::string header_text(const Response& header) {
  std::ostringstream text;
  text << header.base();
  return text.str();
}

class Connection : public HttpExchange, public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, std::shared_ptr<HttpServer::Shared> shared)
      : stream_(std::move(socket)), keep_alive_timer_(stream_.get_executor()), shared_(std::move(shared)) {
    boost::system::error_code ec;
    const auto remote = stream_.socket().remote_endpoint(ec);
    peer_ = ec ? "?" : remote.address().to_string() + ":" + std::to_string(remote.port());
  }

  ~Connection() override { forget(); }

  void start() { read_request(); }

  const Request& request() const override { return request_; }
  std::string peer() const override { return peer_; }
  bool hung_up() const override { return closed_; }

  // Whether it may be closed to make room for a newcomer: it has no request in hand (it waits for a
  // request's header, or its refused request's body is being drained), and since when. A request
  // whose header passed the screen is live, its body still arriving or not.
  bool idle() const { return waiting_ || draining_; }
  std::chrono::steady_clock::time_point idle_since() const { return idle_since_; }

  void respond(Response response) override {
    asio::post(stream_.get_executor(), [self = shared_from_this(), response = std::move(response)]() mutable {
      self->send(std::move(response));
    });
  }

  void open_stream(Response header, std::function<void()> on_end) override {
    asio::post(stream_.get_executor(), [self = shared_from_this(), header = std::move(header), on_end = std::move(on_end)]() mutable {
      if (self->closed_) {
        if (on_end) on_end();
        return;
      }
      self->streaming_ = true;
      self->event_stream_ = true;
      self->on_end_ = std::move(on_end);
      header.keep_alive(false);
      if (self->head_) return self->write_then(header_text(header), [self] { self->close(); });
      self->queue(header_text(header));
      self->keep_stream_alive();
    });
  }

  void write_event(std::string text) override {
    asio::post(stream_.get_executor(), [self = shared_from_this(), text = std::move(text)]() mutable {
      if (self->closed_ || self->head_) return;
      if (self->outbox_bytes_ + text.size() > self->limits().max_stream_bytes) {
        spdlog::warn("http: dropped an event stream to {} that stopped reading ({} bytes unsent)", self->peer_, self->outbox_bytes_);
        return self->close();
      }
      self->queue(std::move(text));
    });
  }

  void respond_chunked(Response header, BodySource source) override {
    asio::post(stream_.get_executor(), [self = shared_from_this(), header = std::move(header), source = std::move(source)]() mutable {
      if (self->closed_ || self->streaming_) return;
      self->streaming_ = true;  // no other answer on this connection until the body ends
      self->body_source_ = std::move(source);
      self->keep_after_body_ = header.keep_alive() && self->request_.keep_alive();
      header.keep_alive(self->keep_after_body_);
      header.chunked(true);
      if (self->head_) return self->write_then(header_text(header), [self] { self->end_body(); });  // the header alone
      self->write_then(header_text(header), [self] { self->pull_chunk(); });
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    waiting_ = draining_ = false;
    body_source_ = nullptr;  // a source may hold the route's call, which holds this connection
    keep_alive_timer_.cancel();
    boost::system::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    forget();  // its slot is free now, though a route may still hold this object
    if (auto end = std::move(on_end_)) end();
  }

 private:
  const HttpLimits& limits() const { return shared_->limits; }

  void forget() {
    std::lock_guard lock(shared_->mutex);
    shared_->open.erase(this);
  }

  void read_request() {
    if (closed_) return;
    if (watching_) {
      // The hang-up watch reads now; once it ends (cancelled here), it starts this read with what it got.
      next_request_wanted_ = true;
      boost::system::error_code ignored;
      stream_.socket().cancel(ignored);
      return;
    }
    waiting_ = true;
    idle_since_ = std::chrono::steady_clock::now();
    head_ = false;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(limits().max_header_bytes));
    parser_->body_limit(limits().max_body_bytes);
    stream_.expires_after(limits().timeout);  // the whole request, header and body, must arrive in this
    beast_http::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->on_header(ec);
    });
  }

  void on_header(beast::error_code ec) {
    if (closed_) return;
    if (ec) return refuse_read(ec);
    const auto& header = parser_->get();
    head_ = header.method() == beast_http::verb::head;
    if (const auto coding = unsupported_transfer_coding(header)) {
      // RFC 9112 6.1: a body whose length cannot be known; read as bodiless, its bytes would be taken
      // for the next request.
      return refuse(error_response(beast_http::status::bad_request, "bad_request",
                                   "Transfer-Encoding \"" + *coding + "\" is not supported: send the body with Content-Length, or chunked"));
    }
    if (shared_->screen) {
      if (auto refusal = shared_->screen(header)) return refuse(std::move(*refusal));
    }
    // No GET, HEAD or OPTIONS route takes a body, and some need no token (the gallery's files, an image
    // with a media key): a body there would be a stranger's to hold.
    const auto method = header.method();
    if ((method == beast_http::verb::get || method == beast_http::verb::head || method == beast_http::verb::options) &&
        (parser_->chunked() || parser_->content_length().value_or(0) > 0)) {
      return refuse(error_response(beast_http::status::bad_request, "bad_request",
                                   std::string(to_string(method)) + " takes no body; this request carries one"));
    }
    waiting_ = false;  // screened: a live request from here on
    if (beast::iequals(header[beast_http::field::expect], "100-continue")) {
      // The client waits for this before it sends the body (curl does, for big bodies).
      auto line = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      asio::async_write(stream_, asio::buffer(*line), [self = shared_from_this(), line](beast::error_code ec, size_t) {
        if (ec) return self->close();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    beast_http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (self->closed_) return;
      if (ec) return self->refuse_read(ec);
      self->request_ = self->parser_->release();
      self->parser_.reset();
      self->stream_.expires_never();
      self->watch_for_hang_up();
      self->shared_->handler(self);
    });
  }

  // The first Transfer-Encoding coding that is not a lone "chunked" (the only one whose length is known).
  static std::optional<std::string> unsupported_transfer_coding(const Request& header) {
    std::vector<std::string> codings;
    for (const auto& field : header) {
      if (field.name() != beast_http::field::transfer_encoding) continue;
      std::string_view value = text_of(field.value());
      for (;;) {
        const auto comma = value.find(',');
        std::string coding(value.substr(0, comma));
        const auto b = coding.find_first_not_of(" \t"), e = coding.find_last_not_of(" \t");
        coding = b == std::string::npos ? "" : coding.substr(b, e - b + 1);
        for (auto& c : coding) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        codings.push_back(coding);
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
      }
    }
    if (codings.empty() || (codings.size() == 1 && codings[0] == "chunked")) return std::nullopt;
    for (const auto& c : codings) {
      if (c != "chunked") return c;
    }
    return std::string("chunked, chunked");
  }

  static Response error_response(beast_http::status status, std::string_view code, const std::string& message) {
    Response r{status, 11};
    r.set(beast_http::field::content_type, "application/json");
    r.body() = nlohmann::json({{"error", {{"code", code}, {"message", message}}}}).dump() + "\n";
    return r;
  }

  // A request that could not be read: a bounded answer where the client can still take one.
  void refuse_read(beast::error_code ec) {
    if (ec == beast_http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
        ec == asio::error::operation_aborted) {
      return close();
    }
    if (ec == beast::error::timeout) {
      spdlog::warn("http: closed a connection from {} whose request did not arrive within {} ms", peer_, limits().timeout.count());
      return close();
    }
    beast_http::status status = beast_http::status::bad_request;
    std::string message = "the request is not valid HTTP/1.1: " + ec.message();
    if (ec == beast_http::error::body_limit) {
      status = beast_http::status::payload_too_large;
      message = "the request body is larger than " + std::to_string(limits().max_body_bytes) + " bytes (rgbaqd --max-frame-mb)";
    } else if (ec == beast_http::error::header_limit) {
      status = beast_http::status::request_header_fields_too_large;
      message = "the request header is larger than " + std::to_string(limits().max_header_bytes) + " bytes";
    }
    spdlog::warn("http: refused a request from {}: {}", peer_, message);
    const char* code = status == beast_http::status::payload_too_large ? "payload_too_large"
                       : status == beast_http::status::request_header_fields_too_large ? "header_too_large"
                                                                                         : "bad_request";
    refuse(error_response(status, code, message));
  }

  // Answers a request whose body is not read, then closes: the client may still be sending it, so the
  // connection stops sending and drains what arrives for a moment (closing at once with unread bytes
  // would reset the connection, and the client could lose the answer before reading it).
  void refuse(Response response) {
    waiting_ = false;
    response.keep_alive(false);
    response.prepare_payload();
    const auto text = std::make_shared<std::string>(header_text(response) + (head_ ? std::string() : response.body()));
    stream_.expires_after(limits().timeout);
    asio::async_write(stream_, asio::buffer(*text), [self = shared_from_this(), text](beast::error_code ec, size_t) {
      if (self->closed_) return;
      if (ec) return self->close();
      self->drain();
    });
  }

  void drain() {
    boost::system::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    draining_ = true;
    idle_since_ = std::chrono::steady_clock::now();
    stream_.expires_after(std::min<std::chrono::milliseconds>(limits().timeout, kDrainTime));
    drain_more();
  }

  void drain_more() {
    auto scratch = std::make_shared<std::array<char, 4096>>();
    stream_.async_read_some(asio::buffer(*scratch), [self = shared_from_this(), scratch](beast::error_code ec, size_t n) {
      if (self->closed_) return;
      self->drained_ += n;
      if (ec || self->drained_ > self->limits().max_body_bytes) return self->close();
      self->drain_more();
    });
  }

  // While a request is handled or a stream is open the client sends nothing but perhaps its next
  // request: a read that ends means it hung up, and the connection is closed at once (the route sees
  // hung_up()). Bytes that arrive are kept for the next request (pipelining), up to a header's bound.
  void watch_for_hang_up() {
    if (closed_ || watching_) return;
    if (event_stream_) buffer_.consume(buffer_.size());  // a stream takes no further request
    if (buffer_.size() >= limits().max_header_bytes) return;
    watching_ = true;
    stream_.socket().async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->watching_ = false;
      if (self->closed_) return;
      if (ec && ec != asio::error::operation_aborted) return self->close();
      self->buffer_.commit(n);
      if (self->next_request_wanted_) {
        self->next_request_wanted_ = false;
        return self->read_request();
      }
      self->watch_for_hang_up();
    });
  }

  void send(Response response) {
    if (closed_ || streaming_) return;
    const bool keep = response.keep_alive() && request_.keep_alive() && !parser_;
    response.keep_alive(keep);
    response.prepare_payload();
    if (head_) return write_then(header_text(response), [self = shared_from_this(), keep] { self->after_response(keep); });
    auto held = std::make_shared<Response>(std::move(response));
    stream_.expires_after(limits().timeout);  // a client that does not take its response is closed
    beast_http::async_write(stream_, *held, [self = shared_from_this(), held, keep](beast::error_code ec, size_t) {
      if (ec) return self->close();
      self->after_response(keep);
    });
  }

  void after_response(bool keep) {
    if (!keep) return close();
    request_ = {};
    read_request();
  }

  // Writes `text` whole, then runs `then`; a write error or a client that takes longer than the
  // timeout closes the connection.
  void write_then(std::string text, std::function<void()> then) {
    auto held = std::make_shared<std::string>(std::move(text));
    stream_.expires_after(limits().timeout);
    asio::async_write(stream_, asio::buffer(*held), [self = shared_from_this(), held, then = std::move(then)](beast::error_code ec, size_t) {
      if (self->closed_) return;
      if (ec) return self->close();
      self->stream_.expires_never();
      then();
    });
  }

  void pull_chunk() {
    if (closed_ || !body_source_) return;
    body_source_([self = shared_from_this()](BodyChunk chunk) {
      asio::post(self->stream_.get_executor(), [self, chunk = std::move(chunk)]() mutable { self->send_chunk(std::move(chunk)); });
    });
  }

  void send_chunk(BodyChunk chunk) {
    if (closed_) return;
    if (chunk.failed) {
      spdlog::warn("http: a body to {} failed after it began; closed the connection to cut it", peer_);
      return close();
    }
    std::string framed;
    if (!chunk.text.empty()) {  // an empty chunk would end the body
      std::ostringstream size;
      size << std::hex << chunk.text.size();
      framed = size.str() + "\r\n" + chunk.text + "\r\n";
    }
    if (!chunk.last) {
      if (framed.empty()) return pull_chunk();
      return write_then(std::move(framed), [self = shared_from_this()] { self->pull_chunk(); });
    }
    framed += "0\r\n\r\n";
    write_then(std::move(framed), [self = shared_from_this()] { self->end_body(); });
  }

  void end_body() {
    body_source_ = nullptr;
    streaming_ = false;
    after_response(keep_after_body_);
  }

  void queue(std::string text) {
    outbox_bytes_ += text.size();
    outbox_.push_back(std::move(text));
    pump();
  }

  void pump() {
    if (writing_ || outbox_.empty() || closed_) return;
    writing_ = true;
    stream_.expires_after(limits().timeout);
    asio::async_write(stream_, asio::buffer(outbox_.front()), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) return self->close();
      self->outbox_bytes_ -= self->outbox_.front().size();
      self->outbox_.pop_front();
      if (self->outbox_.empty()) self->stream_.expires_never();
      self->pump();
    });
  }

  void keep_stream_alive() {
    keep_alive_timer_.expires_after(kStreamKeepAlive);
    keep_alive_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
      const auto self = weak.lock();
      if (ec || !self || self->closed_) return;
      if (self->outbox_.empty()) self->queue(": keep-alive\n\n");
      self->keep_stream_alive();
    });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<beast_http::request_parser<beast_http::string_body>> parser_;
  Request request_;
  asio::steady_timer keep_alive_timer_;
  std::shared_ptr<HttpServer::Shared> shared_;
  std::string peer_;
  std::deque<std::string> outbox_;
  size_t outbox_bytes_ = 0, drained_ = 0;
  std::function<void()> on_end_;
  BodySource body_source_;
  std::chrono::steady_clock::time_point idle_since_ = std::chrono::steady_clock::now();
  bool keep_after_body_ = false;
  std::atomic<bool> closed_ = false;  // read by routes on other threads (hung_up)
  bool streaming_ = false, event_stream_ = false, writing_ = false, head_ = false;
  bool waiting_ = false, draining_ = false, watching_ = false, next_request_wanted_ = false;
};

}  // namespace

HttpServer::HttpServer(asio::io_context& io, const tcp::endpoint& endpoint, Screen screen, Handler handler, HttpLimits limits)
    : acceptor_(io), backoff_(io), shared_(std::make_shared<Shared>(std::move(screen), std::move(handler), limits)) {
  boost::system::error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    const std::string where = endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
    const bool in_use = ec == asio::error::address_in_use;
    throw HttpBindError("cannot listen for HTTP on " + where + ": " + ec.message() +
                            (in_use ? " (another rgbaqd? choose another with --http ADDR:PORT, or --http off)" : ""),
                        in_use);
  }
}

HttpServer::~HttpServer() = default;

tcp::endpoint HttpServer::local_endpoint() const { return acceptor_.local_endpoint(); }

void HttpServer::start() { accept(); }

void HttpServer::stop() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  backoff_.cancel();
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard lock(shared_->mutex);
    for (auto& [key, weak] : shared_->open) {
      if (auto c = weak.lock()) open.push_back(std::move(c));
    }
  }
  for (auto& c : open) c->close();
}

void HttpServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // Out of descriptors or memory: pause rather than spin (the socket server sheds these the same way).
      spdlog::warn("http: accepting a connection failed ({}); pausing", ec.message());
      backoff_.expires_after(std::chrono::milliseconds(100));
      backoff_.async_wait([this](const boost::system::error_code& e) {
        if (!e) accept();
      });
      return;
    }
    // At the cap, the connection that has waited longest without a request in hand makes room (idle
    // keep-alives, clients that connect and send nothing): a live request is never cut for a newcomer.
    bool admitted = false;
    std::shared_ptr<Connection> make_room;
    // Every connection looked at is released after the lock: the last owner's release runs its
    // destructor, which takes the lock itself.
    std::vector<std::shared_ptr<Connection>> looked_at;
    {
      std::lock_guard lock(shared_->mutex);
      admitted = static_cast<int>(shared_->open.size()) < shared_->limits.max_connections;
      if (!admitted) {
        looked_at.reserve(shared_->open.size());
        for (const auto& [key, weak] : shared_->open) {
          auto c = weak.lock();
          if (!c) continue;
          if (c->idle() && (!make_room || c->idle_since() < make_room->idle_since())) make_room = c;
          looked_at.push_back(std::move(c));
        }
      }
    }
    if (make_room) {
      make_room->close();  // on this thread, as every connection's work
      admitted = true;
    }
    if (admitted) {
      auto connection = std::make_shared<Connection>(std::move(socket), shared_);
      {
        std::lock_guard lock(shared_->mutex);
        shared_->open[connection.get()] = connection;
      }
      connection->start();
    } else {
      // Best effort, never blocking: say why, then close.
      const std::string body = "{\"error\":{\"code\":\"too_many_connections\",\"message\":\"rgbaqd serves at most " +
                               std::to_string(shared_->limits.max_connections) + " HTTP connections at once; try again later\"}}\n";
      const std::string reply = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                                "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      ::send(socket.native_handle(), reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (const auto now = std::chrono::steady_clock::now(); now - shared_->last_refusal_log > std::chrono::seconds(1)) {
        shared_->last_refusal_log = now;
        spdlog::warn("http: refused a connection: {} are open", shared_->limits.max_connections);
      }
    }
    accept();
  });
}

}  // namespace rgbaq::daemon::http
