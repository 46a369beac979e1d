#pragma once
// A real PostgreSQL server for tests, from Debian's packages (initdb, pg_ctl), in a temporary directory
// on a Unix socket directory and a free port; stopped and removed when the object goes. As root (CI),
// the server runs as the unprivileged uid 65534, since postgres refuses to run as root. available() is
// false, with why(), only when the binaries are not installed.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/run_process.h"

namespace rgbaq {

class PostgresServer {
 public:
  static std::filesystem::path bin_dir() {
    if (const char* d = std::getenv("RGBAQ_PG_BIN")) return d;
    for (int v : {17, 16, 15, 14, 13}) {
      const std::filesystem::path p = "/usr/lib/postgresql/" + std::to_string(v) + "/bin";
      if (std::filesystem::exists(p / "initdb") && std::filesystem::exists(p / "pg_ctl")) return p;
    }
    return {};
  }
  static bool available() { return !bin_dir().empty(); }
  static std::string why_unavailable() {
    return "PostgreSQL server binaries (initdb, pg_ctl) not found under /usr/lib/postgresql/*/bin; install the "
           "Debian package postgresql (scripts/setup does) or set RGBAQ_PG_BIN";
  }

  PostgresServer() {
    if (!available()) throw std::runtime_error(why_unavailable());
    std::random_device rd;
    dir_ = std::filesystem::temp_directory_path() / ("rgbaq-pg-" + std::to_string(rd()));
    std::filesystem::create_directories(dir_);
    if (geteuid() == 0) {
      if (::chown(dir_.c_str(), 65534, 65534) != 0) throw std::runtime_error("cannot chown " + dir_.string());
    }
    ::chmod(dir_.c_str(), 0700);
    port_ = 20000 + static_cast<int>(rd() % 30000);
    const auto bin = bin_dir();
    check(as_server_user({(bin / "initdb").string(), "-D", (dir_ / "data").string(), "-U", "rgbaq", "--auth=trust",
                          "-E", "UTF8", "--no-sync", "--no-instructions"}),
          "initdb");
    start();
  }
  ~PostgresServer() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // Starts the server again after stop() (tests of a server restart mid-run).
  void start() {
    for (int tries = 0;; ++tries) {
      const auto r = as_server_user({(bin_dir() / "pg_ctl").string(), "-D", (dir_ / "data").string(), "-l",
                                     (dir_ / "server.log").string(), "-w", "-t", "60", "-o",
                                     "-k " + dir_.string() + " -p " + std::to_string(port_) +
                                         " -c listen_addresses= -c fsync=off -c max_connections=200",
                                     "start"});
      if (r.exit_code == 0) break;
      if (tries == 5) check(r, "pg_ctl start");
      port_ = 20000 + static_cast<int>(std::random_device{}() % 30000);  // the port was taken
    }
    running_ = true;
  }
  // Fast shutdown: the server ends every connection, as a crash or a restart would for the clients.
  void stop() {
    if (!running_) return;
    as_server_user({(bin_dir() / "pg_ctl").string(), "-D", (dir_ / "data").string(), "-m", "fast", "-w", "stop"});
    running_ = false;
  }

  // A fresh database for one test; returns its URL.
  std::string create_database(const std::string& name) {
    check(run_process({(bin_dir() / "psql").string(), "-X", "-q", "-h", dir_.string(), "-p", std::to_string(port_), "-U",
                       "rgbaq", "-d", "postgres", "-c", "DROP DATABASE IF EXISTS " + name, "-c", "CREATE DATABASE " + name}),
          "CREATE DATABASE");
    return url(name);
  }
  std::string url(const std::string& database) const {
    return "postgresql://rgbaq@/" + database + "?host=" + dir_.string() + "&port=" + std::to_string(port_);
  }
  // Runs SQL through psql (tests that reach behind the store's back).
  ProcessResult psql(const std::string& database, const std::string& sql) const {
    return run_process({(bin_dir() / "psql").string(), "-X", "-q", "-At", "-h", dir_.string(), "-p",
                        std::to_string(port_), "-U", "rgbaq", "-d", database, "-c", sql});
  }

 private:
  ProcessResult as_server_user(std::vector<std::string> argv) const {
    if (geteuid() == 0) {
      argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
    }
    return run_process(argv);
  }
  static void check(const ProcessResult& r, const std::string& what) {
    if (r.exit_code != 0) throw std::runtime_error(what + " failed (" + std::to_string(r.exit_code) + "): " + r.err + r.out);
  }

  std::filesystem::path dir_;
  int port_ = 0;
  bool running_ = false;
};

}  // namespace rgbaq
