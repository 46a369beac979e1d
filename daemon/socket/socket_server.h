#pragma once
// The Unix-socket server (Boost.Asio, one I/O thread): newline-delimited JSON requests, one response
// each, and a stream of events on connections that watch. The I/O thread only moves bytes: every
// request runs on a request lane (a thread of its own with its own RequestHandler), so one client's
// long submit or export never delays another client's status or watch. What one client can take is
// bounded: its request line (max_frame_bytes), the time a partial line may stay incomplete, its queue
// of unsent events, the time it may leave its output unread, and the number of connections. A client from another uid, a malformed frame, an
// oversized or stalled line, a reader too slow for its events or an abrupt disconnect costs that client
// its connection and nothing else. Out of file descriptors (EMFILE), the server sheds the excess
// connection through a reserve descriptor and backs off instead of spinning.
#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including <utility>

#include <boost/asio.hpp>

#include <chrono>
#include <memory>

#include "daemon/base/event_hub.h"
#include "daemon/protocol.h"
#include "daemon/api/request_handler.h"

namespace rgbaq::daemon {

struct ServerLimits {
  size_t max_frame_bytes = protocol::kMaxFrameBytes;
  size_t max_output_bytes = 1u << 20;                   // unsent events a watcher may have queued
  std::chrono::milliseconds frame_timeout{30000};      // a partial request line must complete within this, and
                                                       // a client must take some of its pending output within it
  int max_connections = 64;                            // also kept under RLIMIT_NOFILE
};

class SocketServer {
 public:
  // Takes ownership of the listening socket `listen_fd`. Quick requests (ping, status, ls_runs) go to
  // `quick`, every other one to `bulk`.
  SocketServer(boost::asio::io_context& io, int listen_fd, RequestLane quick, RequestLane bulk, EventHub& events,
               ServerLimits limits);
  ~SocketServer();
  void start();
  void stop();  // stops accepting and closes every open connection
  int connection_limit() const;

  struct Shared;

 private:
  void accept();
  void shed_excess_connection();

  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::steady_timer backoff_;
  std::shared_ptr<Shared> shared_;  // also held by every connection, which may outlive the server
  int reserve_fd_ = -1;
};

}  // namespace rgbaq::daemon
