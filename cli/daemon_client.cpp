#include "cli/daemon_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/peer_credentials.h"
#include "daemon/protocol.h"

namespace rgbaq::cli {
namespace {

std::string how_to_start(const std::filesystem::path& socket) {
  return "rgbaqd is not running at " + socket.string() +
         ".\nStart it with `rgbaqd --model DIR` (add --socket " + socket.string() +
         " if that is not its default), or install the service with `rgbaq service install --model DIR`.";
}

// Only a directory that is ours alone guarantees that the socket in it is our daemon's: the default path
// without XDG_RUNTIME_DIR is /tmp/rgbaq-$UID, which any user could have created first.
void check_socket_directory(const std::filesystem::path& socket) {
  const std::filesystem::path dir = socket.parent_path().empty() ? std::filesystem::path(".") : socket.parent_path();
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) throw DaemonUnreachable(how_to_start(socket));
  const std::string refuse = "refusing to talk to " + socket.string() + ": ";
  if (!S_ISDIR(st.st_mode)) throw UntrustedDaemon(refuse + "its directory " + dir.string() + " is not a directory");
  if (st.st_uid != geteuid()) {
    throw UntrustedDaemon(refuse + "its directory " + dir.string() + " belongs to " + common::describe_uid(st.st_uid) +
                          ", not to you (" + common::describe_uid(geteuid()) +
                          "); another user may have put a daemon there. Remove the directory or choose another --socket.");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    throw UntrustedDaemon(refuse + "its directory " + dir.string() + " (owner " + common::describe_uid(st.st_uid) +
                          ") is open to other users (mode " + mode + "); it must be 0700");
  }
}

}  // namespace

DaemonClient::DaemonClient(const std::filesystem::path& socket) : socket_(socket) {
  check_socket_directory(socket);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = socket.string();
  if (p.size() >= sizeof(addr.sun_path)) throw DaemonUnreachable(p + ": socket path is too long");
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    throw DaemonUnreachable(how_to_start(socket));
  }
  const auto uid = common::peer_uid(fd_);
  if (!uid || *uid != geteuid()) {
    close(fd_);
    fd_ = -1;
    throw UntrustedDaemon("refusing to talk to " + socket.string() + ": the process listening there runs as " +
                          (uid ? common::describe_uid(*uid) : std::string("an unknown user")) + ", not as you (" +
                          common::describe_uid(geteuid()) + ")");
  }
}

DaemonClient::~DaemonClient() {
  if (fd_ >= 0) close(fd_);
}

void DaemonClient::write_all(const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw DaemonUnreachable("the connection to rgbaqd broke: " + std::string(std::strerror(errno)));
    sent += static_cast<size_t>(n);
  }
}

std::optional<std::string> DaemonClient::read_line(int timeout_ms) {
  for (;;) {
    if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return std::string();  // timed out: an empty line
    char chunk[65536];
    const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

nlohmann::json DaemonClient::call(const std::string& method, const nlohmann::json& params) {
  const int64_t id = next_id_++;
  write_all(nlohmann::json({{"v", protocol::kVersion}, {"id", id}, {"method", method}, {"params", params}}).dump() + "\n");
  for (;;) {
    const auto line = read_line(-1);
    if (!line) throw DaemonUnreachable("rgbaqd closed the connection (it may be stopping)");
    if (!protocol::nesting_within(*line)) throw DaemonUnreachable("rgbaqd sent JSON nested too deep to be protocol JSON");
    const auto msg = nlohmann::json::parse(*line, nullptr, false);
    if (msg.is_discarded() || !msg.is_object()) throw DaemonUnreachable("rgbaqd sent something that is not protocol JSON");
    if (msg.contains("event")) continue;  // an event of an earlier watch; the caller asked for a response
    const auto reply_id = msg.find("id");
    if (reply_id == msg.end() || !(reply_id->is_null() || (reply_id->is_number_integer() && *reply_id == id))) continue;
    if (msg.value("ok", false)) return msg.value("result", nlohmann::json::object());
    const auto& e = msg.value("error", nlohmann::json::object());
    throw DaemonError(e.value("code", "unknown"), e.value("message", "error"), e.value("details", nlohmann::json::array()));
  }
}

std::optional<nlohmann::json> DaemonClient::next_event(int timeout_ms) {
  for (;;) {
    const auto line = read_line(timeout_ms);
    if (!line) return std::nullopt;
    if (line->empty()) return nlohmann::json::object();  // no event within the timeout
    if (!protocol::nesting_within(*line)) continue;
    const auto msg = nlohmann::json::parse(*line, nullptr, false);
    if (!msg.is_discarded() && msg.contains("event")) return msg;
  }
}

}  // namespace rgbaq::cli
