#include "daemon/socket/socket_server.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <deque>
#include <limits>
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "common/peer_credentials.h"
#include "daemon/api/request_params.h"
#include "daemon/socket/request_frame.h"

namespace rgbaq::daemon {
namespace {

namespace asio = boost::asio;
using nlohmann::json;
using stream = asio::local::stream_protocol;

// Descriptors kept free for the queue database, the log, PNG writes and the embedding cache: clients
// never get these, so a flood of connections cannot fail a job with "Too many open files".
constexpr int kReservedDescriptors = 32;
constexpr size_t kParseInlineBytes = 64u << 10;

std::string to_line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

// Read-only and small: never queued behind a submit, nor behind a write waiting for the database lock.
bool is_quick(const std::string& method) { return method == "ping" || method == "status" || method == "ls_runs"; }

class Connection;

}  // namespace

struct SocketServer::Shared {
  Shared(ServerLimits l, RequestLane q, RequestLane b, EventHub& e)
      : limits(l), quick(std::move(q)), bulk(std::move(b)), events(e), cap(l.max_connections) {}
  ServerLimits limits;
  RequestLane quick, bulk;
  EventHub& events;
  int cap = 0;
  std::mutex mutex;                                    // guards open (connections die on any thread)
  std::map<const void*, std::weak_ptr<Connection>> open;
  std::chrono::steady_clock::time_point last_refusal_log;  // a flood of refusals logs once a second
};

namespace {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(stream::socket socket, std::shared_ptr<SocketServer::Shared> shared)
      : socket_(std::move(socket)),
        frame_watch_{asio::steady_timer(socket_.get_executor())},
        write_watch_{asio::steady_timer(socket_.get_executor())},
        shared_(std::move(shared)) {}

  ~Connection() {
    if (watch_id_) shared_->events.unsubscribe(watch_id_);
    std::lock_guard lock(shared_->mutex);
    shared_->open.erase(this);
  }

  void start() {
    const auto uid = common::peer_uid(socket_.native_handle());
    if (!uid || *uid != geteuid()) {
      spdlog::warn("refused a connection from uid {}", uid ? std::to_string(*uid) : "unknown");
      fail(json(nullptr), protocol::error_code::kBadRequest, "this daemon serves its own user only");
      return;
    }
    peer_ = common::describe_uid(*uid);
    process();
  }

  // Closes now, unsent output and all (shutdown, or a client that does not read).
  void close() {
    closed_ = true;
    outbox_.clear();
    outbox_bytes_ = 0;
    written_ = 0;
    boost::system::error_code ignored;
    frame_watch_.timer.cancel();
    write_watch_.timer.cancel();
    socket_.shutdown(stream::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  const ServerLimits& limits() const { return shared_->limits; }

  // Dispatches the complete lines already buffered, one request at a time, then reads more.
  void process() {
    while (!closed_ && !closing_ && !busy_ && outbox_bytes_ <= limits().max_output_bytes) {
      const auto nl = pending_.find('\n', scanned_);
      if (nl == std::string::npos) {
        scanned_ = pending_.size();
        if (pending_.size() > limits().max_frame_bytes) return frame_too_large();
        return read();
      }
      if (nl > limits().max_frame_bytes) return frame_too_large();
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      scanned_ = 0;
      ++frames_;
      if (pending_.capacity() > (1u << 20) && pending_.size() < (1u << 16)) pending_.shrink_to_fit();  // a big frame's memory comes back
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) dispatch(std::move(line));
    }
  }

  void read() {
    if (reading_) return;
    reading_ = true;
    if (!pending_.empty()) watch_frame_deadline();
    auto self = shared_from_this();
    socket_.async_read_some(asio::buffer(chunk_), [this, self](const boost::system::error_code& ec, size_t n) {
      reading_ = false;
      if (ec || closed_) {  // a hang-up: the connection goes with its last reference (replies in flight first)
        frame_watch_.timer.cancel();
        return;
      }
      pending_.append(chunk_.data(), n);
      process();
    });
  }

  // A partial request line must complete within frame_timeout of its first wait for more bytes.
  void watch_frame_deadline() {
    watch_progress(frame_watch_, frames_, [this] { return !closing_ && reading_ && !pending_.empty(); }, [this] {
      spdlog::warn("closed a connection whose request line stayed incomplete for {} ms", limits().frame_timeout.count());
      boost::system::error_code ignored;
      socket_.cancel(ignored);
      fail(json(nullptr), protocol::error_code::kBadRequest,
           "a request line stayed incomplete for " + std::to_string(limits().frame_timeout.count()) + " ms");
    });
  }

  // When `progress` has not moved for frame_timeout while `waiting()` holds, `stalled()` runs. The
  // timer holds the connection weakly: what it watches (a read, a write) holds it while it waits, and a
  // client that hung up must free its slot now, not when the last reply's watch runs out.
  struct Watch {
    asio::steady_timer timer;
    bool armed = false;
  };
  template <typename Waiting, typename Stalled>
  void watch_progress(Watch& watch, const uint64_t& progress, Waiting waiting, Stalled stalled) {
    if (watch.armed) return;
    watch.armed = true;
    const uint64_t seen = progress;
    watch.timer.expires_after(limits().frame_timeout);
    watch.timer.async_wait(
        [this, weak = weak_from_this(), &watch, &progress, seen, waiting, stalled](const boost::system::error_code& ec) {
          const auto self = weak.lock();
          if (!self) return;  // gone, and its timer with it
          watch.armed = false;
          if (ec || closed_ || !waiting()) return;
          if (progress == seen) return stalled();
          watch_progress(watch, progress, waiting, stalled);
        });
  }

  void frame_too_large() {
    pending_.clear();
    pending_.shrink_to_fit();
    fail(json(nullptr), protocol::error_code::kFrameTooLarge,
         "a request line is longer than " + std::to_string(limits().max_frame_bytes) + " bytes");
  }

  // Small lines are checked here; a big one (a submit's file) is parsed on the bulk lane, so parsing
  // megabytes of JSON never holds up the socket thread either.
  void dispatch(std::string line) {
    busy_ = true;
    if (line.size() <= kParseInlineBytes) return act(parse_request_frame(line));
    asio::post(shared_->bulk.executor, [self = shared_from_this(), line = std::move(line)]() mutable {
      ParsedFrame frame = parse_request_frame(line);
      line = {};
      auto& conn = *self;
      asio::post(conn.socket_.get_executor(), [self = std::move(self), frame = std::move(frame)]() mutable {
        if (self->closed_) return;
        self->act(std::move(frame));
        if (!self->busy_) self->process();
      });
    });
  }

  // On the socket thread, with busy_ set: answers the frame's error, subscribes a watch (busy_ cleared),
  // or hands the request to its lane (busy_ until its reply is queued).
  void act(ParsedFrame frame) {
    if (!frame.request) {
      busy_ = false;
      closing_ = true;  // a malformed frame costs its connection, after the error goes out
      return queue(to_line(frame.error_response));
    }
    RequestFrame& request = *frame.request;
    if (request.method == "watch") {
      try {
        watch(request.params);
        queue(to_line(ok_response(request.id, {{"watching", true}})));
      } catch (const RequestError& e) {
        queue(to_line(error_response(request.id, e.code(), e.what(), e.details())));
      }
      busy_ = false;  // the caller goes on with the next line (no recursion: a client may send many)
      return;
    }
    // Who sets a mark, as this transport knows them: the peer's uid, whatever the client wrote.
    if (request.method == "mark") request.params["by"] = peer_;
    RequestLane& lane = is_quick(request.method) ? shared_->quick : shared_->bulk;
    asio::post(lane.executor, [self = shared_from_this(), &lane, request = std::move(request)]() mutable {
      std::string reply;
      try {
        reply = to_line(ok_response(request.id, lane.handler.handle(request.method, request.params)));
      } catch (const RequestError& e) {
        reply = to_line(error_response(request.id, e.code(), e.what(), e.details()));
      } catch (const std::exception& e) {
        spdlog::error("{} failed: {}", request.method, e.what());
        reply = to_line(error_response(request.id, protocol::error_code::kInternal, e.what()));
      }
      request = {};  // a submit's file is freed here, on the lane
      auto& conn = *self;
      asio::post(conn.socket_.get_executor(), [self = std::move(self), reply = std::move(reply)]() mutable {
        self->busy_ = false;
        if (self->closed_) return;
        self->queue(std::move(reply));
        self->process();
      });
    });
  }

  void watch(const json& params) {
    const int64_t run = int_param(params, "run", 0, 0, std::numeric_limits<int64_t>::max());  // 0: every run
    // Events are small and few: a watcher's kernel buffer need not be the default ~200 KiB, so one that
    // stops reading reaches its queue bound (and is dropped) after kilobytes, not megabytes.
    const int sndbuf = 16 << 10;
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    std::weak_ptr<Connection> weak = shared_from_this();
    if (watch_id_) shared_->events.unsubscribe(watch_id_);
    // Runs on the publishing thread with the hub's lock held: only hand the line over.
    watch_id_ = shared_->events.subscribe(
        [weak, run, executor = socket_.get_executor()](const std::shared_ptr<const Event>& event) {
          if (run != 0 && event->run != run) return;
          asio::post(executor, [weak, event] {
            if (auto self = weak.lock()) self->queue_event(event->line);
          });
        });
  }

  void queue_event(const std::string& line) {
    if (closed_ || closing_) return;
    if (outbox_bytes_ + line.size() > limits().max_output_bytes) {
      spdlog::warn("disconnected a watch client that stopped reading ({} bytes of events unsent)", outbox_bytes_);
      return close();
    }
    queue(line);
  }

  void fail(const json& id, std::string_view code, const std::string& message) {
    closing_ = true;
    queue(to_line(error_response(id, code, message)));
  }

  void queue(std::string line) {
    if (closed_) return;
    outbox_bytes_ += line.size();
    outbox_.push_back(std::move(line));
    if (!writing_) write();
  }

  // Writes the front of the outbox a piece at a time, so a reader that stalls is seen to stall.
  void write() {
    writing_ = true;
    watch_write_progress();
    auto self = shared_from_this();
    const std::string& front = outbox_.front();
    socket_.async_write_some(asio::buffer(front.data() + written_, front.size() - written_),
                             [this, self](const boost::system::error_code& ec, size_t n) {
                               writing_ = false;
                               if (ec || closed_) return close();
                               ++writes_;
                               written_ += n;
                               if (written_ < outbox_.front().size()) return write();
                               outbox_bytes_ -= outbox_.front().size();
                               outbox_.pop_front();
                               written_ = 0;
                               if (!outbox_.empty()) return write();
                               if (closing_) return close();
                               process();  // a client that pipelines requests waits for its replies to drain first
                             });
  }

  // A client that takes nothing of its pending output for frame_timeout is disconnected: a reply it
  // asked for and never reads (a large export) must not hold the daemon's memory for good.
  void watch_write_progress() {
    watch_progress(write_watch_, writes_, [this] { return writing_; }, [this] {
      spdlog::warn("disconnected a client that read nothing of {} pending bytes for {} ms", outbox_bytes_ - written_,
                   limits().frame_timeout.count());
      close();
    });
  }

  stream::socket socket_;
  Watch frame_watch_, write_watch_;
  std::shared_ptr<SocketServer::Shared> shared_;
  std::array<char, 65536> chunk_;
  std::string pending_;   // bytes read, not yet dispatched
  size_t scanned_ = 0;    // pending_ holds no newline before this
  uint64_t frames_ = 0;
  std::deque<std::string> outbox_;
  size_t outbox_bytes_ = 0;
  size_t written_ = 0;     // of outbox_.front()
  uint64_t writes_ = 0;    // completed writes, to tell a stalled reader
  bool reading_ = false, writing_ = false, busy_ = false, closing_ = false, closed_ = false;
  int watch_id_ = 0;
  std::string peer_;  // "uid N (name)": who marks jobs through this connection
};

int open_reserve() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace

SocketServer::SocketServer(asio::io_context& io, int listen_fd, RequestLane quick, RequestLane bulk, EventHub& events,
                           ServerLimits limits)
    : acceptor_(io, stream(), listen_fd),
      backoff_(io),
      shared_(std::make_shared<Shared>(limits, std::move(quick), std::move(bulk), events)),
      reserve_fd_(open_reserve()) {
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    const int room = static_cast<int>(std::min<rlim_t>(nofile.rlim_cur, 1 << 20)) - kReservedDescriptors;
    shared_->cap = std::max(1, std::min(shared_->cap, room));
  }
}

SocketServer::~SocketServer() {
  if (reserve_fd_ >= 0) ::close(reserve_fd_);
}

int SocketServer::connection_limit() const { return shared_->cap; }

void SocketServer::start() { accept(); }

void SocketServer::stop() {
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

// Out of descriptors: the reserve one makes room to accept the waiting connection and close it at once,
// so the listening socket stops being readable and the loop does not spin; then a pause before retrying.
void SocketServer::shed_excess_connection() {
  if (reserve_fd_ >= 0) {
    ::close(reserve_fd_);
    const int fd = ::accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) ::close(fd);
    reserve_fd_ = open_reserve();
  }
  backoff_.expires_after(std::chrono::milliseconds(100));
  backoff_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) accept();
  });
}

void SocketServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, stream::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec == asio::error::no_descriptors || ec.value() == ENFILE || ec == asio::error::no_memory ||
        ec == asio::error::no_buffer_space) {
      spdlog::warn("accepting a connection failed ({}); shedding it and pausing", ec.message());
      return shed_excess_connection();
    }
    if (!ec) {
      bool admitted = false;
      {
        std::lock_guard lock(shared_->mutex);
        admitted = static_cast<int>(shared_->open.size()) < shared_->cap;
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
        const std::string line = to_line(error_response(nullptr, protocol::error_code::kTooManyConnections,
                                                        "rgbaqd serves at most " + std::to_string(shared_->cap) +
                                                            " connections at once; try again later"));
        ::send(socket.native_handle(), line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (const auto now = std::chrono::steady_clock::now(); now - shared_->last_refusal_log > std::chrono::seconds(1)) {
          shared_->last_refusal_log = now;
          spdlog::warn("refused a connection: {} are open", shared_->cap);
        }
      }
    } else {
      spdlog::warn("accepting a connection failed: {}", ec.message());
    }
    accept();
  });
}

}  // namespace rgbaq::daemon
