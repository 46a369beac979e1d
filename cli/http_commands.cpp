#include "cli/http_commands.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/daemon_client.h"
#include "common/arguments.h"

extern char** environ;

namespace rgbaq::cli {

using nlohmann::json;

namespace {

struct HttpAddress {
  std::string url;    // "http://127.0.0.1:7878"
  std::string token;  // "" when not read
  std::filesystem::path data_dir;
};

// The token is read from the daemon's data directory (ours: the client only talks to a daemon of its
// own user), never sent over the socket. Throws std::runtime_error saying what is missing.
HttpAddress http_address(CliContext& ctx, bool with_token) {
  DaemonClient client(ctx.socket);
  const json s = client.call("status");
  if (!s.contains("http") || !s["http"].is_object()) throw std::runtime_error("this rgbaqd serves no HTTP (it was started with --http off)");
  HttpAddress a{s["http"].value("url", ""), "", s.value("data_dir", "")};
  if (!with_token) return a;
  const auto token_file = a.data_dir / "http-token";
  std::ifstream in(token_file);
  if (!std::getline(in, a.token) || a.token.empty()) throw std::runtime_error("cannot read the HTTP token in " + token_file.string());
  return a;
}

}  // namespace

int http_url_command(const std::vector<std::string>& args, CliContext& ctx) {
  const common::Arguments a(args, {}, {"no-token"});
  try {
    const auto address = http_address(ctx, !a.has("no-token"));
    ctx.out << address.url << "/" << (address.token.empty() ? "" : "?token=" + address.token) << "\n";
    return 0;
  } catch (const std::runtime_error& e) {
    ctx.err << "rgbaq: " << e.what() << "\n";
    return 1;
  }
}

// The browser is handed a private file that forwards to the address, not the address itself: a
// command line is readable by every user of the machine (/proc/PID/cmdline), the token must not be.
int gallery_command(const std::vector<std::string>& args, CliContext& ctx) {
  const common::Arguments a(args, {}, {"print"});
  HttpAddress address;
  try {
    address = http_address(ctx, true);
  } catch (const std::runtime_error& e) {
    ctx.err << "rgbaq: " << e.what() << "\n";
    return 1;
  }
  const std::string url = address.url + "/?token=" + address.token;
  ctx.out << url << "\n";
  if (a.has("print")) return 0;
  const auto page = address.data_dir / "open-gallery.html";
  {
    const int fd = ::open(page.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      ctx.err << "rgbaq: cannot write " << page.string() << ": " << std::strerror(errno) << "; open the address above yourself\n";
      return 1;
    }
    const std::string html = "<!doctype html><meta charset=utf-8><meta http-equiv=\"refresh\" content=\"0;url=" + url +
                             "\"><title>rgbaq gallery</title><a href=\"" + url + "\">the gallery</a>\n";
    const bool ok = ::write(fd, html.data(), html.size()) == static_cast<ssize_t>(html.size());
    ::close(fd);
    if (!ok) return 1;
  }
#ifdef __APPLE__
  const char* opener = "open";
#else
  const char* opener = "xdg-open";
#endif
  const std::string target = "file://" + page.string();
  char* argv[] = {const_cast<char*>(opener), const_cast<char*>(target.c_str()), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, opener, nullptr, nullptr, argv, environ) != 0) {
    ctx.err << "rgbaq: no " << opener << " to open a browser with; open the address above yourself\n";
    return 1;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ctx.err << "rgbaq: " << opener << " failed; open the address above yourself\n";
    return 1;
  }
  return 0;
}

}  // namespace rgbaq::cli
