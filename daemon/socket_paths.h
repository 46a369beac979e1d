#pragma once
// Where rgbaq keeps its socket and data, per platform. Header-only: the client and the daemon must
// agree without linking each other.
//   Linux: socket $XDG_RUNTIME_DIR/rgbaq/rgbaqd.sock (else /tmp/rgbaq-$UID/rgbaqd.sock),
//          data $XDG_DATA_HOME/rgbaq (else ~/.local/share/rgbaq)
//   macOS: socket $TMPDIR/rgbaq/rgbaqd.sock (the per-user temporary directory),
//          data ~/Library/Application Support/rgbaq
// RGBAQ_SOCKET overrides the socket for both.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace rgbaq::paths {

inline std::filesystem::path home_dir() {
  const char* h = std::getenv("HOME");
  return h && *h ? h : "/tmp";
}

inline std::filesystem::path default_socket_path() {
  if (const char* s = std::getenv("RGBAQ_SOCKET"); s && *s) return s;
#ifdef __APPLE__
  const char* tmp = std::getenv("TMPDIR");
  return std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / "rgbaq" / "rgbaqd.sock";
#else
  if (const char* run = std::getenv("XDG_RUNTIME_DIR"); run && *run) return std::filesystem::path(run) / "rgbaq" / "rgbaqd.sock";
  return std::filesystem::path("/tmp") / ("rgbaq-" + std::to_string(getuid())) / "rgbaqd.sock";
#endif
}

inline std::filesystem::path default_data_dir() {
#ifdef __APPLE__
  return home_dir() / "Library" / "Application Support" / "rgbaq";
#else
  if (const char* d = std::getenv("XDG_DATA_HOME"); d && *d) return std::filesystem::path(d) / "rgbaq";
  return home_dir() / ".local" / "share" / "rgbaq";
#endif
}

}  // namespace rgbaq::paths
