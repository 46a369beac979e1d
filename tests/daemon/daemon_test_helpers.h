#pragma once
// Helpers shared by the daemon's integration tests: the tiny model (made once per binary), rgbaq
// calls against a running daemon, and output listings.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/daemon/daemon_process.h"
#include "tests/engine/tiny_model_fixture.h"
#include "tests/run_process.h"

namespace rgbaq {

using nlohmann::json;
namespace fs = std::filesystem;

// RGBAQ_TEST_RGBAQD / RGBAQ_TEST_RGBAQ run the same tests against other binaries (an older build, to
// see a test fail before its fix).
inline std::string binary(const char* env, const char* built) {
  const char* other = std::getenv(env);
  return other && *other ? other : built;
}
inline const std::string kRgbaqd = binary("RGBAQ_TEST_RGBAQD", RGBAQD_PATH);
inline const std::string kRgbaq = binary("RGBAQ_TEST_RGBAQ", RGBAQ_CLI_PATH);

inline const TinyModel& model() {
  static const TinyModel m;
  return m;
}

inline ProcessResult rgbaq(const DaemonProcess& d, std::vector<std::string> args, const std::string& input = {}) {
  args.insert(args.begin(), {kRgbaq, "--socket", d.socket().string()});
  return run_process(args, input);
}

// The last `bytes` of a daemon's log, for a failure message.
inline std::string log_tail(const DaemonProcess& d, size_t bytes = 4000) {
  std::ifstream in(d.log());
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

inline json status(const DaemonProcess& d) {
  const auto r = rgbaq(d, {"status", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err << "the daemon's log ends:\n" << log_tail(d);
  return json::parse(r.out);
}

inline std::vector<fs::path> pngs_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".png" && e.path().filename().string().rfind("sheet", 0) != 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A raw protocol connection.
struct Raw {
  int fd = -1;
  explicit Raw(const fs::path& socket) {
    sockaddr_un addr = unix_address(socket);
    fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  }
  ~Raw() { close(fd); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;
  // Whether all of `s` went out (the daemon may close first).
  bool send_all(const std::string& s) {
    for (size_t sent = 0; sent < s.size();) {
      const ssize_t n = ::send(fd, s.data() + sent, s.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  std::string read_until_close() {
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
    return out;
  }
  // The next line (without its newline), or "" after timeout_ms or at the end of the stream.
  std::string read_line(int timeout_ms = 30000) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms) * test_time_scale();
    for (;;) {
      if (const auto nl = buffer.find('\n'); nl != std::string::npos) {
        std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
      pollfd p{fd, POLLIN, 0};
      if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) return "";
      char buf[65536];
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return "";
      buffer.append(buf, static_cast<size_t>(n));
    }
  }
  std::string buffer;
};

inline void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary | std::ios::trunc) << text; }

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// Every job in the queue, as `rgbaq ls jobs --all --json` lists them.
inline json jobs_of(const DaemonProcess& d) {
  const auto r = rgbaq(d, {"ls", "jobs", "--all", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out)["jobs"];
}

// Whether `done` holds within `limit` (scaled), asked every 100 ms and once more at the end.
template <class F>
bool eventually(F done, std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto until = std::chrono::steady_clock::now() + limit * test_time_scale();
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

// Waits (up to a minute, scaled) until nothing is queued or running.
inline void wait_until_idle(const DaemonProcess& d) {
  for (int i = 0; i < 600 * test_time_scale(); ++i) {
    const json s = status(d);
    if (s["jobs"]["queued"] == 0 && s["jobs"]["running"] == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "the queue did not drain: " << log_tail(d);
}

// Starts rgbaqd in `dir` again and again (at most `starts` times) until its queue has nothing queued or
// running: `submit(d)` runs on the first start; a start that ends by SIGABRT (a render that crashes the
// daemon) is counted, any other end fails the test. Returns the crashes.
inline int crashes_until_the_queue_is_done(const fs::path& dir, const DaemonProcess::Options& opts,
                                           const std::function<void(DaemonProcess&)>& submit, int starts = 8) {
  int crashes = 0;
  for (int start = 0; start < starts; ++start) {
    DaemonProcess d(kRgbaqd, model().dir(), dir, opts);
    if (start == 0) submit(d);
    int code = -1;
    bool finished = false;
    for (int i = 0; i < 120 && code == -1 && !finished; ++i) {
      code = d.wait_exit(std::chrono::seconds(1));
      if (code == -1) {
        const auto r = rgbaq(d, {"status", "--json"});
        if (r.exit_code == 0) {
          const json s = json::parse(r.out);
          finished = s["jobs"]["queued"] == 0 && s["jobs"]["running"] == 0;
        }
      }
    }
    if (finished) break;
    EXPECT_EQ(code, 128 + SIGABRT) << log_tail(d);
    if (code != 128 + SIGABRT) break;
    ++crashes;
  }
  return crashes;
}


}  // namespace rgbaq
