#include "cli/service_command.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "common/arguments.h"
#include "common/data_files.h"
#include "common/printable_text.h"
#include "daemon/socket_paths.h"
#include "engine/model/hf_cache.h"
#include "engine/model/model_directory.h"
#include "launchd/service_templates.h"

namespace rgbaq::cli {

using common::Arguments;
using common::UsageError;
namespace {

#ifdef __APPLE__
constexpr bool kLaunchd = true;
#else
constexpr bool kLaunchd = false;
#endif
constexpr const char* kSystemdRuntimeSocket = "%t/rgbaq/rgbaqd.sock";

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
  return text;
}

std::string xml_escape(const std::string& s) {
  return replace_all(replace_all(replace_all(s, "&", "&amp;"), "<", "&lt;"), ">", "&gt;");
}

// A value inside a double-quoted argument of a systemd unit's Exec line (systemd.service(5), "Command
// lines"): backslashes and quotes escaped C-style, `%` doubled (a specifier otherwise: %h is the home
// directory) and `$` doubled (an environment variable otherwise), a newline or other control character
// as a C escape, so no value can end the line and add a setting (ExecStartPre=...).
std::string systemd_quoted(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (c == '\\' || c == '"') out += std::string("\\") + static_cast<char>(c);
    else if (c == '%') out += "%%";
    else if (c == '$') out += "$$";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    } else out += static_cast<char>(c);
  }
  return out;
}

// A path as ListenStream= takes it (the rest of the line, specifiers expanded, no escapes): `%`
// doubled; a control character cannot be written there at all.
std::string systemd_listen_path(const std::string& s) {
  for (const unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) throw UsageError("the socket path \"" + s + "\" holds a control character; systemd cannot listen there");
  }
  return replace_all(s, "%", "%%");
}

// The rgbaqd next to this rgbaq (an install), or in the build tree beside it, or on PATH: an absolute
// path to a file that exists, since the service manager runs it from elsewhere.
std::string find_rgbaqd() {
  if (const auto bin = common::executable_dir(); !bin.empty()) {
    for (const auto& candidate : {bin / "rgbaqd", bin.parent_path() / "daemon" / "rgbaqd"}) {
      if (access(candidate.c_str(), X_OK) == 0) return candidate.lexically_normal().string();
    }
  }
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t start = 0; start <= p.size();) {
      const size_t colon = std::min(p.find(':', start), p.size());
      const auto candidate = std::filesystem::path(p.substr(start, colon - start)) / "rgbaqd";
      if (candidate.is_absolute() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
      start = colon + 1;
    }
  }
  throw UsageError("cannot find rgbaqd beside this rgbaq or on PATH; say where it is with --rgbaqd PATH");
}

// Runs a service-manager command (RGBAQ_SYSTEMCTL / RGBAQ_LAUNCHCTL replace the program, for tests and
// packagers); its output goes straight through, or its stderr into `*err_text` when given. Returns its
// exit status.
int run_tool(CliContext& ctx, std::vector<std::string> argv, std::string* err_text = nullptr) {
  const char* override_tool = std::getenv(kLaunchd ? "RGBAQ_LAUNCHCTL" : "RGBAQ_SYSTEMCTL");
  if (override_tool && *override_tool) argv[0] = override_tool;
  ctx.out.flush();
  int err_pipe[2] = {-1, -1};
  if (err_text && pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  const pid_t pid = fork();
  if (pid == 0) {
    if (err_text) dup2(err_pipe[1], STDERR_FILENO);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    execvp(a[0], a.data());
    _exit(127);
  }
  if (err_text) {
    close(err_pipe[1]);
    char buf[4096];
    for (ssize_t n; (n = read(err_pipe[0], buf, sizeof buf)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      err_text->append(buf, static_cast<size_t>(n));
    }
    close(err_pipe[0]);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  if (code == 127) ctx.err << common::printable(argv[0]) << " was not found\n";
  return code;
}

std::filesystem::path unit_dir() {
  if (kLaunchd) return paths::home_dir() / "Library" / "LaunchAgents";
  const char* config = std::getenv("XDG_CONFIG_HOME");
  return (config && *config ? std::filesystem::path(config) : paths::home_dir() / ".config") / "systemd" / "user";
}

}  // namespace

std::map<std::string, std::string> service_files(bool launchd, const std::string& rgbaqd, const std::string& model,
                                                 const std::string& data_dir, const std::string& socket, const std::string& log) {
  if (launchd) {
    std::string text = launchd::k_com_rgbaq_rgbaqd_plist;
    for (const auto& [at, value] : {std::pair{"@RGBAQD@", rgbaqd}, {"@MODEL@", model}, {"@DATA_DIR@", data_dir},
                                    {"@SOCKET@", socket}, {"@LOG@", log}}) {
      text = replace_all(text, at, xml_escape(value));
    }
    return {{"com.rgbaq.rgbaqd.plist", text}};
  }
  // Our own specifier for the socket stays one: systemd's runtime directory.
  const bool runtime_socket = socket.empty();
  const std::string exec_socket = runtime_socket ? kSystemdRuntimeSocket : systemd_quoted(socket);
  std::string service = launchd::k_rgbaqd_service;
  for (const auto& [at, value] : {std::pair{"@RGBAQD@", systemd_quoted(rgbaqd)}, {"@MODEL@", systemd_quoted(model)},
                                  {"@DATA_DIR@", systemd_quoted(data_dir)}, {"@SOCKET@", exec_socket}}) {
    service = replace_all(service, at, value);
  }
  const std::string listen = runtime_socket ? kSystemdRuntimeSocket : systemd_listen_path(socket);
  return {{"rgbaqd.socket", replace_all(launchd::k_rgbaqd_socket, "@SOCKET@", listen)}, {"rgbaqd.service", service}};
}

int service_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {"model", "data-dir", "rgbaqd"}, {"print"});
  if (a.positionals().size() != 1) throw UsageError("usage: rgbaq service install|uninstall|status [--print] [--model DIR]");
  const std::string action = a.positionals()[0];
  const auto dir = unit_dir();
  const std::string label = "gui/" + std::to_string(getuid());

  if (action == "status") {
    if (kLaunchd) return run_tool(ctx, {"launchctl", "print", label + "/com.rgbaq.rgbaqd"});
    std::string err;
    const int code = run_tool(ctx, {"systemctl", "--user", "status", "--no-pager", "rgbaqd.socket", "rgbaqd.service"}, &err);
    if (err.find("Failed to connect to bus") == std::string::npos) {
      ctx.err << err;
      return code;
    }
    // systemctl's own words name no cause a user can act on: this login has no user session bus.
    ctx.err << "rgbaq service status: systemctl cannot reach your user's service manager (\""
            << common::printable(err.substr(0, err.find('\n'))) << "\"): this login has no user session bus "
            << "(su, sudo, ssh without lingering, a container), so systemd --user services cannot be checked from "
               "here.\n  Is rgbaqd answering?  rgbaq status\n  Its log:            "
            << common::printable((std::filesystem::path(a.get("data-dir").value_or(paths::default_data_dir().string())) / "logs" /
                                  "rgbaqd.log").string())
            << "\n  Or log in to a session of your own (`loginctl enable-linger` keeps one) and ask again.\n";
    return 1;
  }
  if (action == "uninstall") {
    const auto names = kLaunchd ? std::vector<std::string>{"com.rgbaq.rgbaqd.plist"} : std::vector<std::string>{"rgbaqd.socket", "rgbaqd.service"};
    if (a.has("print")) {
      for (const auto& n : names) ctx.out << "would remove " << common::printable((dir / n).string()) << "\n";
      return 0;
    }
    const int code = kLaunchd ? run_tool(ctx, {"launchctl", "bootout", label + "/com.rgbaq.rgbaqd"})
                              : run_tool(ctx, {"systemctl", "--user", "disable", "--now", "rgbaqd.socket", "rgbaqd.service"});
    for (const auto& n : names) std::filesystem::remove(dir / n);
    if (!kLaunchd) run_tool(ctx, {"systemctl", "--user", "daemon-reload"});
    ctx.out << "removed the rgbaqd service\n";
    return code == 0 ? 0 : 1;
  }
  if (action != "install") throw UsageError("unknown service action \"" + action + "\" (install, uninstall, status)");

  const auto model = a.get("model");
  if (!model) throw UsageError("--model DIR is required: the service runs rgbaqd with it");
  // A repo id becomes its snapshot's folder: the service's environment may not name the same cache.
  std::filesystem::path model_dir;
  try {
    model_dir = std::filesystem::absolute(engine::resolve_model_argument(*model)).lexically_normal();
  } catch (const engine::InvalidModel& e) {
    throw UsageError(std::string("--model ") + e.what());
  }
  if (!std::filesystem::exists(model_dir / "model_index.json")) {
    throw UsageError("--model " + model_dir.string() + " has no model_index.json");
  }
  const auto data_dir = std::filesystem::absolute(a.get("data-dir").value_or(paths::default_data_dir().string())).lexically_normal();
  const std::string rgbaqd = a.has("rgbaqd") ? std::filesystem::absolute(*a.get("rgbaqd")).lexically_normal().string() : find_rgbaqd();
  if (access(rgbaqd.c_str(), X_OK) != 0) throw UsageError("--rgbaqd " + rgbaqd + " is not an executable file");
  const std::string socket = kLaunchd || std::getenv("RGBAQ_SOCKET") ? paths::default_socket_path().string() : "";
  const auto files = service_files(kLaunchd, rgbaqd, model_dir.string(), data_dir.string(),
                                   socket, (data_dir / "logs" / "rgbaqd.out").string());
  if (a.has("print")) {
    for (const auto& [name, text] : files) ctx.out << "# " << common::printable((dir / name).string()) << "\n" << text << "\n";
    return 0;
  }
  std::filesystem::create_directories(dir);
  std::filesystem::create_directories(data_dir / "logs");
  for (const auto& [name, text] : files) {
    std::ofstream f(dir / name, std::ios::trunc);
    f << text;
    if (!f) throw std::runtime_error((dir / name).string() + ": cannot write");
    ctx.out << "wrote " << common::printable((dir / name).string()) << "\n";
  }
  int code = 0;
  if (kLaunchd) {
    code = run_tool(ctx, {"launchctl", "bootstrap", label, (dir / "com.rgbaq.rgbaqd.plist").string()});
  } else {
    code = run_tool(ctx, {"systemctl", "--user", "daemon-reload"});
    if (code == 0) code = run_tool(ctx, {"systemctl", "--user", "enable", "--now", "rgbaqd.socket"});
  }
  if (code != 0) {
    ctx.err << "the unit files are written, but the service manager did not take them (exit " << code << ")\n";
    return 1;
  }
  ctx.out << "rgbaqd will start on the first `rgbaq` command\n";
  return 0;
}

}  // namespace rgbaq::cli
