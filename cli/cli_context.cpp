#include "cli/cli_context.h"

#include <ostream>

#include "common/arguments.h"
#include "cli/daemon_client.h"
#include "daemon/protocol.h"

namespace rgbaq::cli {

using common::UsageError;

int guarded(const std::string& command, CliContext& ctx, const std::function<int()>& body) {
  const std::string prefix = "rgbaq " + command + ": ";
  try {
    return body();
  } catch (const UsageError& e) {
    ctx.err << prefix << e.what() << "\n(see rgbaq " << command << " --help)\n";
    return 2;
  } catch (const DaemonUnreachable& e) {
    ctx.err << prefix << e.what() << "\n";
    return 3;
  } catch (const DaemonError& e) {
    ctx.err << prefix << e.what() << "\n";
    const bool bad_input = e.code == protocol::error_code::kInvalidFile || e.code == protocol::error_code::kBadRequest ||
                           e.code == protocol::error_code::kNotFound;
    return bad_input ? 2 : 1;
  } catch (const std::exception& e) {
    ctx.err << prefix << e.what() << "\n";
    return 1;
  }
}

}  // namespace rgbaq::cli
