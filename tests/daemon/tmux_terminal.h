#pragma once
// A terminal for tests of what a person sees: a detached tmux session of a given size running a
// command, read back with `capture-pane` (the screen, not the bytes written).
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/run_process.h"

namespace rgbaq {

// tmux's full path (run_process does not search PATH).
inline std::string tmux_path() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/bin"}) {
    if (std::filesystem::exists(std::filesystem::path(dir) / "tmux")) return (std::filesystem::path(dir) / "tmux").string();
  }
  return "tmux";
}

inline std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class Tmux {
 public:
  Tmux(const std::filesystem::path& socket, const std::string& session, int width, int height, const std::string& command)
      : socket_(socket), session_(session) {
    run("new-session -d -s " + session + " -x " + std::to_string(width) + " -y " + std::to_string(height) + " " + quoted(command));
  }
  ~Tmux() { run("kill-session -t " + session_); }

  std::vector<std::string> capture() const {
    const auto r = run_process({tmux_path(), "-u", "-S", socket_.string(), "capture-pane", "-p", "-t", session_});
    std::vector<std::string> lines;
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    while (!lines.empty() && lines.back().empty()) lines.pop_back();
    return lines;
  }
  // The last screen wait_for saw (for a failure's message).
  std::string screen() const {
    std::string s;
    for (const auto& l : last_) s += l + "\n";
    return s;
  }
  // Captures until `ok` holds (true) or 60 s pass (false).
  template <typename Pred>
  bool wait_for(Pred ok) {
    for (int i = 0; i < 600; ++i) {
      last_ = capture();
      if (ok(last_)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  void resize(int width, int height) const {
    run("resize-window -t " + session_ + " -x " + std::to_string(width) + " -y " + std::to_string(height));
  }

 private:
  int run(const std::string& args) const { return std::system((quoted(tmux_path()) + " -u -S " + quoted(socket_.string()) + " " + args + " >/dev/null 2>&1").c_str()); }
  std::filesystem::path socket_;
  std::string session_;
  std::vector<std::string> last_;
};

}  // namespace rgbaq
