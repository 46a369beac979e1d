#pragma once
// A real rgbaqd process for integration tests: started with its own socket and data directory on the
// tiny model, waited for until it answers, stopped with any signal.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/run_process.h"

namespace rgbaq {

// The address of a Unix socket at `path`, for the tests' own sockets.
inline sockaddr_un unix_address(const std::filesystem::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  return addr;
}

class DaemonProcess {
 public:
  struct Options {
    std::vector<std::string> extra_args;
    std::map<std::string, std::string> env;
    int inherit_fd = -1;          // passed as fd 3 (socket activation), with LISTEN_PID set to the child
    bool wait_until_ready = true;
    rlim_t max_files = 0;         // RLIMIT_NOFILE (soft and hard) of the daemon; 0: inherited
    bool default_http = false;    // HTTP as a user gets it (127.0.0.1:7878), not off
  };

  DaemonProcess(const std::string& rgbaqd, const std::filesystem::path& model, const std::filesystem::path& dir, Options o)
      : socket_(dir / "run" / "rgbaqd.sock"), data_(dir / "data"), log_(dir / "rgbaqd.log") {
    std::vector<std::string> args = {rgbaqd, "--model", model.string(), "--socket", socket_.string(), "--data-dir",
                                     data_.string(), "--threads", "2"};
    if (model.empty()) args.erase(args.begin() + 1, args.begin() + 3);  // no model directory (component files in extra_args)
    // Tests run side by side: HTTP only where a test asks for it (on a free port, --http 127.0.0.1:0).
    if (!o.default_http && std::find(o.extra_args.begin(), o.extra_args.end(), "--http") == o.extra_args.end()) {
      args.insert(args.end(), {"--http", "off"});
    }
    args.insert(args.end(), o.extra_args.begin(), o.extra_args.end());
    pid_ = fork();
    if (pid_ == 0) {
      const int log = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      dup2(log, 1);
      dup2(log, 2);
      for (const auto& [k, v] : o.env) setenv(k.c_str(), v.c_str(), 1);
      if (o.max_files > 0) {
        const rlimit limit{o.max_files, o.max_files};
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(126);
      }
      if (o.inherit_fd >= 0) {
        if (o.inherit_fd == 3) {
          fcntl(3, F_SETFD, 0);  // dup2 onto itself would keep close-on-exec
        } else {
          dup2(o.inherit_fd, 3);
        }
        setenv("LISTEN_FDS", "1", 1);
        setenv("LISTEN_PID", std::to_string(getpid()).c_str(), 1);
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (o.wait_until_ready && !wait_ready()) throw std::runtime_error("rgbaqd did not come up; log: " + log_.string());
  }

  ~DaemonProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Connectable within 60 s (longer in a sanitizer build): a start on a loaded machine can take 20.
  bool wait_ready() {
    for (int i = 0; i < 1200 * test_time_scale(); ++i) {
      if (connectable()) return true;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        exit_status_ = status;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  bool connectable() const {
    sockaddr_un addr = unix_address(socket_);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    return ok;
  }

  void signal(int sig) { ::kill(pid_, sig); }

  // The exit code (or 128 + signal) after waiting up to `timeout`; -1 if it is still running.
  int wait_exit(std::chrono::seconds timeout = std::chrono::seconds(30)) {
    const auto until = std::chrono::steady_clock::now() + timeout * test_time_scale();
    while (!exited_ && std::chrono::steady_clock::now() < until) {
      if (waitpid(pid_, &exit_status_, WNOHANG) == pid_) exited_ = true;
      else std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!exited_) return -1;
    return WIFEXITED(exit_status_) ? WEXITSTATUS(exit_status_) : 128 + WTERMSIG(exit_status_);
  }

  pid_t pid() const { return pid_; }
  const std::filesystem::path& socket() const { return socket_; }
  const std::filesystem::path& data_dir() const { return data_; }
  const std::filesystem::path& log() const { return log_; }

 private:
  std::filesystem::path socket_, data_, log_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_status_ = 0;
};

}  // namespace rgbaq
