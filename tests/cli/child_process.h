#pragma once
// rgbaq (or any program) as a child whose output goes to files, for a test that acts while it runs (a
// signal in the middle of it, a daemon that dies under it).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace rgbaq {

struct Child {
  pid_t pid = -1;
  std::filesystem::path out, err;
  Child(const std::filesystem::path& dir, std::vector<std::string> argv) : out(dir / "child.out"), err(dir / "child.err") {
    pid = fork();
    if (pid == 0) {
      const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      const int null = open("/dev/null", O_RDONLY);
      dup2(null, 0);
      std::vector<char*> a;
      for (auto& s : argv) a.push_back(s.data());
      a.push_back(nullptr);
      execv(a[0], a.data());
      _exit(127);
    }
  }
  int wait() {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

}  // namespace rgbaq
