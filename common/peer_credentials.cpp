#include "common/peer_credentials.h"

#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#ifdef __APPLE__
#include <sys/ucred.h>
#include <sys/un.h>
#endif

namespace rgbaq::common {

std::optional<uid_t> peer_uid(int fd) {
#ifdef __APPLE__
  xucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_LOCAL, LOCAL_PEERCRED, &cred, &len) != 0) return std::nullopt;
  return cred.cr_uid;
#else
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  return cred.uid;
#endif
}

std::string describe_uid(uid_t uid) {
  std::string text = "uid " + std::to_string(uid);
  passwd entry{}, *found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found && found->pw_name) {
    text += std::string(" (") + found->pw_name + ")";
  }
  return text;
}

}  // namespace rgbaq::common
