#pragma once
// Who is at the other end of a connected Unix socket: the daemon checks its clients with it and the
// client checks the daemon (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS).
#include <sys/types.h>

#include <optional>
#include <string>

namespace rgbaq::common {

// The uid of the process at the other end of the connected Unix socket `fd`, or nullopt.
std::optional<uid_t> peer_uid(int fd);

// "uid 65534 (nobody)", or "uid 65534" when the name is unknown: for messages.
std::string describe_uid(uid_t uid);

}  // namespace rgbaq::common
