#include "cli/http_url_command.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/daemon_client.h"
#include "common/arguments.h"

namespace rgbaq::cli {

using nlohmann::json;

// The token is read from the daemon's data directory (ours: the client only talks to a daemon of its
// own user), never sent over the socket.
int http_url_command(const std::vector<std::string>& args, CliContext& ctx) {
  const common::Arguments a(args, {}, {"no-token"});
  DaemonClient client(ctx.socket);
  const json s = client.call("status");
  if (!s.contains("http") || !s["http"].is_object()) {
    ctx.err << "rgbaq: this rgbaqd serves no HTTP (it was started with --http off)\n";
    return 1;
  }
  const std::string url = s["http"].value("url", "");
  if (a.has("no-token")) {
    ctx.out << url << "/\n";
    return 0;
  }
  const std::filesystem::path token_file = std::filesystem::path(s.value("data_dir", "")) / "http-token";
  std::ifstream in(token_file);
  std::string token;
  if (!std::getline(in, token) || token.empty()) {
    ctx.err << "rgbaq: cannot read the HTTP token in " << token_file.string() << "\n";
    return 1;
  }
  ctx.out << url << "/?token=" << token << "\n";
  return 0;
}

}  // namespace rgbaq::cli
