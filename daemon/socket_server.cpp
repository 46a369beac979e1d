#include "daemon/socket_server.h"

#include <unistd.h>

#include <deque>

#include <spdlog/spdlog.h>

#include "daemon/listen_socket.h"
#include "daemon/protocol.h"

namespace rgbaq::daemon {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using stream = asio::local::stream_protocol;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(stream::socket socket, RequestHandler& handler, EventHub& events)
      : socket_(std::move(socket)), buffer_(protocol::kMaxFrameBytes), handler_(handler), events_(events) {}

  ~Connection() {
    if (watch_id_) events_.unsubscribe(watch_id_);
  }

  void start() {
    const auto uid = peer_uid(socket_.native_handle());
    if (!uid || *uid != geteuid()) {
      spdlog::warn("refused a connection from uid {}", uid ? std::to_string(*uid) : "unknown");
      send_error(json(nullptr), protocol::error_code::kBadRequest, "this daemon serves its own user only");
      closing_ = true;
      return;
    }
    read();
  }

 private:
  void read() {
    auto self = shared_from_this();
    asio::async_read_until(socket_, buffer_, '\n', [this, self](const boost::system::error_code& ec, size_t n) {
      if (ec == asio::error::not_found) {  // the line outgrew the buffer
        send_error(json(nullptr), protocol::error_code::kFrameTooLarge,
                   "a request line is longer than " + std::to_string(protocol::kMaxFrameBytes) + " bytes");
        closing_ = true;
        return;
      }
      if (ec) return;  // disconnect: the connection goes with its last reference
      std::string line(asio::buffers_begin(buffer_.data()), asio::buffers_begin(buffer_.data()) + static_cast<std::ptrdiff_t>(n));
      buffer_.consume(n);
      if (!line.empty() && line.back() == '\n') line.pop_back();
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty() && !dispatch(line)) {
        closing_ = true;
        return;
      }
      read();
    });
  }

  // false: the frame was malformed and the connection should close after the error goes out.
  bool dispatch(const std::string& line) {
    const json request = json::parse(line, nullptr, false);
    if (request.is_discarded() || !request.is_object()) {
      send_error(json(nullptr), protocol::error_code::kBadRequest, "a request must be one JSON object per line");
      return false;
    }
    const json id = request.value("id", json(nullptr));
    if (request.value("v", 0) != protocol::kVersion) {
      send_error(id, protocol::error_code::kUnsupportedVersion,
                 "this daemon speaks protocol version " + std::to_string(protocol::kVersion));
      return false;
    }
    if (!request.contains("method") || !request["method"].is_string()) {
      send_error(id, protocol::error_code::kBadRequest, "a request needs a \"method\" string");
      return false;
    }
    const std::string method = request["method"];
    const json params = request.value("params", json::object());
    try {
      if (method == "watch") {
        watch(params);
        send({{"v", protocol::kVersion}, {"id", id}, {"ok", true}, {"result", {{"watching", true}}}});
        return true;
      }
      const json result = handler_.handle(method, params);
      send({{"v", protocol::kVersion}, {"id", id}, {"ok", true}, {"result", result}});
    } catch (const RequestError& e) {
      send_error(id, e.code(), e.what(), e.details());
    } catch (const std::exception& e) {
      spdlog::error("{} failed: {}", method, e.what());
      send_error(id, protocol::error_code::kInternal, e.what());
    }
    return true;
  }

  void watch(const json& params) {
    if (!params.is_object()) throw RequestError(protocol::error_code::kBadRequest, "params must be an object");
    const int64_t run = params.value("run", int64_t{0});
    std::weak_ptr<Connection> weak = shared_from_this();
    if (watch_id_) events_.unsubscribe(watch_id_);
    watch_id_ = events_.subscribe([weak, run](const std::string& line) {
      auto self = weak.lock();
      if (!self || self->closing_) return;
      if (run != 0) {
        const json event = json::parse(line, nullptr, false);
        if (event.value("run", int64_t{0}) != run) return;
      }
      self->queue(line);
    });
  }

  void send(const json& response) { queue(response.dump() + "\n"); }

  void send_error(const json& id, std::string_view code, const std::string& message, const json& details = json::array()) {
    send({{"v", protocol::kVersion}, {"id", id}, {"ok", false},
          {"error", {{"code", code}, {"message", message}, {"details", details}}}});
  }

  void queue(std::string line) {
    outbox_.push_back(std::move(line));
    if (outbox_.size() > 10000) {  // a watcher that never reads: drop it rather than grow without bound
      boost::system::error_code ignored;
      socket_.close(ignored);
      return;
    }
    if (!writing_) write();
  }

  void write() {
    writing_ = true;
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(outbox_.front()), [this, self](const boost::system::error_code& ec, size_t) {
      outbox_.pop_front();
      if (ec) {
        writing_ = false;
        outbox_.clear();
        return;
      }
      if (!outbox_.empty()) return write();
      writing_ = false;
      if (closing_) {
        boost::system::error_code ignored;
        socket_.shutdown(stream::socket::shutdown_both, ignored);
        socket_.close(ignored);
      }
    });
  }

  stream::socket socket_;
  asio::streambuf buffer_;
  RequestHandler& handler_;
  EventHub& events_;
  std::deque<std::string> outbox_;
  bool writing_ = false, closing_ = false;
  int watch_id_ = 0;
};

}  // namespace

SocketServer::SocketServer(asio::io_context& io, int listen_fd, RequestHandler& handler, EventHub& events)
    : io_(io), acceptor_(io, stream(), listen_fd), handler_(handler), events_(events) {}

void SocketServer::start() { accept(); }

void SocketServer::stop() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

void SocketServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, stream::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) std::make_shared<Connection>(std::move(socket), handler_, events_)->start();
    accept();
  });
}

}  // namespace rgbaq::daemon
