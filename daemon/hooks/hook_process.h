#pragma once
// The owner's hook command as a process: `/bin/sh -c COMMAND` in a session (and process group) of its
// own, so that it outlives a SIGKILL of the daemon and its whole group can be killed at the time limit;
// the environment given (the daemon's, plus what describes the run), nothing of the daemon's open files
// but stdin from /dev/null and stdout and stderr both into a file of the daemon's, read back as it
// grows (a file rather than a pipe: a hook that outlives the daemon can still write). No text but the
// owner's command line is ever given to the shell.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rgbaq::daemon::hooks {

class HookProcess {
 public:
  // Starts it. `env` holds "NAME=value" entries, the whole environment the command gets; `output` is
  // created (0600, truncated) for its stdout and stderr. Throws std::runtime_error naming what failed
  // (the output file, fork).
  HookProcess(const std::string& command, const std::vector<std::string>& env, const std::filesystem::path& output);
  ~HookProcess();  // a process still running is left to run (and is not reaped)
  HookProcess(const HookProcess&) = delete;
  HookProcess& operator=(const HookProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Waits for it to end, handing each line of its output (without the newline, at most kLongestLine
  // bytes a piece) to `on_line` as it comes. At `limit` after the start its process group is killed
  // (SIGKILL). Returns how it ended: "exit N", "signal N", "killed at the N s limit"; nullopt when
  // `stop()` turned true first (the process is left running, alone).
  std::optional<std::string> wait(std::chrono::milliseconds limit, const std::function<void(const std::string&)>& on_line,
                                  const std::function<bool()>& stop);

  static constexpr size_t kLongestLine = 4096;

 private:
  void relay(const std::function<void(const std::string&)>& on_line, bool flush_partial);

  pid_t pid_ = -1;
  int read_fd_ = -1;
  std::chrono::steady_clock::time_point started_;
  std::string partial_;  // output read but not yet a whole line
};

// The environment a hook gets: this process's own, with `vars` ({name, value}) put over it.
std::vector<std::string> hook_environment(const std::vector<std::pair<std::string, std::string>>& vars);

}  // namespace rgbaq::daemon::hooks
