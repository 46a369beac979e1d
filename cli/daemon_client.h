#pragma once
// The client side of the rgbaqd protocol (daemon/protocol.h): one connection, requests with ids, and
// the event stream of a watch.
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace rgbaq::cli {

// The daemon is not there: exit code 3, with a message that says how to start it.
class DaemonUnreachable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What listens at the socket cannot be trusted with our requests: the socket's directory belongs to
// another user or is open to others, or the listening process runs as another user. Exit code 1.
class UntrustedDaemon : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The daemon answered with an error.
class DaemonError : public std::runtime_error {
 public:
  DaemonError(std::string code, const std::string& message, nlohmann::json details)
      : std::runtime_error(message), code(std::move(code)), details(std::move(details)) {}
  std::string code;
  nlohmann::json details;
};

class DaemonClient {
 public:
  // Throws DaemonUnreachable when nothing listens at `socket`, and UntrustedDaemon, before anything is
  // sent, when the socket's directory is not ours alone (owner our uid, no group or other access) or the
  // process listening runs as another uid (a fake daemon another user placed at the path first).
  explicit DaemonClient(const std::filesystem::path& socket);
  ~DaemonClient();
  DaemonClient(const DaemonClient&) = delete;
  DaemonClient& operator=(const DaemonClient&) = delete;

  // Sends a request and returns its result; throws DaemonError, or DaemonUnreachable if the daemon
  // goes away.
  nlohmann::json call(const std::string& method, const nlohmann::json& params = nlohmann::json::object());
  // The next event of a watch; nullopt when the daemon closed the connection. timeout_ms < 0: wait.
  std::optional<nlohmann::json> next_event(int timeout_ms = -1);

 private:
  std::optional<std::string> read_line(int timeout_ms);
  void write_all(const std::string& data);

  std::filesystem::path socket_;
  int fd_ = -1;
  std::string buffer_;
  int64_t next_id_ = 1;
};

}  // namespace rgbaq::cli
