#pragma once
// The Unix-socket server (Boost.Asio, one thread): newline-delimited JSON requests, one response each,
// and a stream of events on connections that watch. A client from another uid, a malformed frame, an
// oversized line or an abrupt disconnect costs that client its connection and nothing else.
#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including <utility>

#include <boost/asio.hpp>

#include <memory>

#include "daemon/event_hub.h"
#include "daemon/request_handler.h"

namespace rgbaq::daemon {

class SocketServer {
 public:
  // Takes ownership of the listening socket `listen_fd`.
  SocketServer(boost::asio::io_context& io, int listen_fd, RequestHandler& handler, EventHub& events);
  void start();
  void stop();  // stops accepting; open connections close with the io_context

 private:
  void accept();

  boost::asio::io_context& io_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  RequestHandler& handler_;
  EventHub& events_;
};

}  // namespace rgbaq::daemon
