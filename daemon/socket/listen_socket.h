#pragma once
// The daemon's Unix socket, placed securely: its directory created 0700 (or refused when it exists
// with other owners or wider permissions), the socket created 0600, a stale socket probed before it is
// replaced, and a live daemon on the same path refused. Also adoption of a socket that systemd
// (LISTEN_FDS) or launchd (launch_activate_socket) opened for us.
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace rgbaq::daemon {

// A listening socket bound at `path`. Throws std::runtime_error saying what is wrong (another daemon
// listening, an insecure directory, a non-socket file in the way).
int open_listen_socket(const std::filesystem::path& path);

// A listening socket passed by the service manager, if any (systemd: LISTEN_FDS with LISTEN_PID of this
// process; macOS: the launchd.plist's "Listener" socket).
std::optional<int> activated_listen_socket();

}  // namespace rgbaq::daemon
