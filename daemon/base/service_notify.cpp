#include "daemon/base/service_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace rgbaq::daemon {

bool sd_notify(const std::string& state) {
  const char* target = std::getenv("NOTIFY_SOCKET");
  if (!target || !*target) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t len = std::strlen(target);
  if (len >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, target, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // the abstract namespace
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  const bool sent = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), addr_len) ==
                    static_cast<ssize_t>(state.size());
  close(fd);
  return sent;
}

}  // namespace rgbaq::daemon
