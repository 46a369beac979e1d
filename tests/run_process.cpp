#include "tests/run_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace rgbaq {

int test_time_scale() {
  if (const char* s = std::getenv("RGBAQ_TEST_TIME_SCALE"); s && std::atoi(s) > 0) return std::atoi(s);
#if defined(__SANITIZE_THREAD__)
  return 8;
#elif defined(__SANITIZE_ADDRESS__)
  return 3;
#else
  return 1;
#endif
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& stdin_text) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC)) {
    throw std::runtime_error("pipe failed");
  }
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  signal(SIGPIPE, SIG_IGN);

  ProcessResult result;
  size_t written = 0;
  if (stdin_text.empty()) close(in_pipe[1]), in_pipe[1] = -1;
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    pollfd fds[3] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}, {in_pipe[1], POLLOUT, 0}};
    const nfds_t n = in_pipe[1] >= 0 ? 3 : 2;
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t got = read(fds[i].fd, buf, sizeof buf);
        if (got > 0) {
          (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(got));
        } else {
          (i == 0 ? out_open : err_open) = false;
        }
      }
    }
    if (n == 3 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t put = write(in_pipe[1], stdin_text.data() + written, stdin_text.size() - written);
      if (put > 0) written += static_cast<size_t>(put);
      if (put <= 0 || written == stdin_text.size()) close(in_pipe[1]), in_pipe[1] = -1;
    }
  }
  if (in_pipe[1] >= 0) close(in_pipe[1]);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  result.max_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace rgbaq
