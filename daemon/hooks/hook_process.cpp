#include "daemon/hooks/hook_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace rgbaq::daemon::hooks {
namespace {

// Every descriptor from 3 up is closed in the child: the daemon's sockets, its queue database and the
// data directory's lock must not live on in a hook that outlives it (a restarted daemon could not take
// the lock while the hook runs).
void close_inherited_descriptors(int highest) {
#if defined(__linux__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  if (::close_range(3, ~0u, 0) == 0) return;  // ENOSYS before Linux 5.9
#endif
  for (int fd = 3; fd <= highest; ++fd) ::close(fd);
}

std::string seconds_text(std::chrono::milliseconds d) {
  const auto ms = d.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(ms) / 1000.0);
  return buf;
}

std::string ended_words(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "ended (wait status " + std::to_string(status) + ")";
}

}  // namespace

std::vector<std::string> hook_environment(const std::vector<std::pair<std::string, std::string>>& vars) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    const bool replaced = std::any_of(vars.begin(), vars.end(), [&](const auto& v) { return v.first == name; });
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
  return env;
}

HookProcess::HookProcess(const std::string& command, const std::vector<std::string>& env, const std::filesystem::path& output) {
  const int out = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (out < 0) throw std::runtime_error("cannot write " + output.string() + ": " + std::strerror(errno));
  read_fd_ = ::open(output.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  const int no_input = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (read_fd_ < 0 || no_input < 0) {
    const int error = errno;
    ::close(out);
    if (read_fd_ >= 0) ::close(read_fd_);
    if (no_input >= 0) ::close(no_input);
    throw std::runtime_error("cannot open " + std::string(read_fd_ < 0 ? output.string() : "/dev/null") + ": " + std::strerror(error));
  }
  // Everything the child needs is made before the fork: a child of a threaded process may only make
  // async-signal-safe calls until it execs.
  std::string sh = "sh", dash_c = "-c", text = command;
  std::vector<char*> argv = {sh.data(), dash_c.data(), text.data(), nullptr};
  std::vector<std::string> env_copy = env;
  std::vector<char*> envp;
  for (auto& e : env_copy) envp.push_back(e.data());
  envp.push_back(nullptr);
  const long open_max = ::sysconf(_SC_OPEN_MAX);
  const int highest = static_cast<int>(std::clamp<long>(open_max, 256, 65536));
  started_ = std::chrono::steady_clock::now();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setsid();  // its own session and process group: the daemon's death leaves it running
    ::dup2(no_input, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    close_inherited_descriptors(highest);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // SIGPIPE was ignored by the daemon
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve("/bin/sh", argv.data(), envp.data());
    _exit(127);
  }
  const int fork_error = errno;
  ::close(out);
  ::close(no_input);
  if (pid_ < 0) {
    ::close(read_fd_);
    read_fd_ = -1;
    throw std::runtime_error(std::string("cannot start /bin/sh: fork: ") + std::strerror(fork_error));
  }
}

HookProcess::~HookProcess() {
  if (read_fd_ >= 0) ::close(read_fd_);
}

void HookProcess::relay(const std::function<void(const std::string&)>& on_line, bool flush_partial) {
  char buf[16384];
  for (ssize_t n; (n = ::read(read_fd_, buf, sizeof buf)) > 0;) {
    partial_.append(buf, static_cast<size_t>(n));
    size_t begin = 0;
    for (size_t nl; (nl = partial_.find('\n', begin)) != std::string::npos; begin = nl + 1) {
      for (size_t at = begin;; at += kLongestLine) {  // a line longer than kLongestLine goes in pieces
        const size_t piece = std::min(kLongestLine, nl - at);
        on_line(partial_.substr(at, piece));
        if (at + piece >= nl) break;
      }
    }
    partial_.erase(0, begin);
    while (partial_.size() >= kLongestLine) {  // nor does one without its end yet sit whole in memory
      on_line(partial_.substr(0, kLongestLine));
      partial_.erase(0, kLongestLine);
    }
  }
  if (flush_partial && !partial_.empty()) {
    on_line(partial_);
    partial_.clear();
  }
}

std::optional<std::string> HookProcess::wait(std::chrono::milliseconds limit, const std::function<void(const std::string&)>& on_line,
                                             const std::function<bool()>& stop) {
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      relay(on_line, true);
      return ended_words(status);
    }
    relay(on_line, false);
    const auto elapsed = std::chrono::steady_clock::now() - started_;
    if (elapsed >= limit) {
      ::kill(-pid_, SIGKILL);  // the whole group: the shell and what it started
      ::waitpid(pid_, &status, 0);
      relay(on_line, true);
      return "killed at the " + seconds_text(limit) + " s limit";
    }
    if (stop()) return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(limit - elapsed);
    std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(50)));
  }
}

}  // namespace rgbaq::daemon::hooks
