#pragma once
// The tests' ways to reach the daemon's HTTP API: requests (http_request.h), raw connections for what
// a well-behaved client never sends, and the daemon's HTTP address and token as it reports them.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tests/daemon/daemon_test_helpers.h"
#include "tests/daemon/http_request.h"

namespace rgbaq {

// A raw TCP connection to the HTTP port, for what a well-behaved client never sends, and what it reads
// within a time ("<closed>" appended when the server closed it).
inline int tcp_connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

inline std::string read_some(int fd, int timeout_ms) {
  std::string out;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) return out;
    char buf[8192];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out + "<closed>";
    out.append(buf, static_cast<size_t>(n));
  }
}

inline mode_t current_umask() {
  const mode_t m = umask(0);
  umask(m);
  return m;
}

inline long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Sends `request` on a fresh connection and reads what comes back until the server closes it or
// `timeout_ms` passes: a request that hangs fails the test instead of hanging it.
inline std::string raw_exchange(int port, const std::string& request, int timeout_ms) {
  const int fd = tcp_connect(port);
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply = read_some(fd, timeout_ms);
  ::close(fd);
  return reply;
}

// The status of the first response in `reply` (0 when there is none).
inline int status_of(const std::string& reply) {
  return reply.rfind("HTTP/1.1 ", 0) == 0 && reply.size() >= 12 ? std::atoi(reply.substr(9, 3).c_str()) : 0;
}

// The port of the daemon's HTTP API (it was started with --http 127.0.0.1:0).
inline int http_port(const DaemonProcess& d) {
  const std::string url = status(d)["http"]["url"];
  return std::stoi(url.substr(url.rfind(':') + 1));
}

inline std::string http_token(const DaemonProcess& d) {
  std::ifstream in(d.data_dir() / "http-token");
  std::string token;
  std::getline(in, token);
  return token;
}

using Header = std::pair<std::string, std::string>;

inline std::vector<std::string> with_http(std::vector<std::string> args = {}) {
  args.insert(args.begin(), {"--http", "127.0.0.1:0"});
  return args;
}

// A daemon with HTTP on a free port, and requests to it with its token.
struct HttpDaemon {
  TempDir dir;
  DaemonProcess d;
  int port;
  std::string token;
  explicit HttpDaemon(std::vector<std::string> extra = {})
      : d(kRgbaqd, model().dir(), dir.path(), {.extra_args = with_http(std::move(extra))}), port(http_port(d)), token(http_token(d)) {}
  Header bearer() const { return {"Authorization", "Bearer " + token}; }
  HttpReply get(const std::string& target, std::vector<Header> h = {}) const {
    h.push_back(bearer());
    return http_request(port, "GET", target, h);
  }
  HttpReply post_json(const std::string& target, const json& body, std::vector<Header> h = {}) const {
    h.push_back(bearer());
    h.emplace_back("Content-Type", "application/json");
    return http_request(port, "POST", target, h, body.dump());
  }
};

}  // namespace rgbaq
