#include "cli/cli_context.h"

#include <ostream>

#include "common/arguments.h"
#include "common/printable_text.h"
#include "cli/daemon_client.h"
#include "daemon/protocol.h"

namespace rgbaq::cli {

using common::UsageError;
using common::printable;

int guarded(const std::string& command, CliContext& ctx, const std::function<int()>& body) {
  const std::string prefix = "rgbaq " + command + ": ";
  // A message may carry text from outside (a file's key, a LoRA tag, a prompt): escaped, its own line
  // breaks kept.
  try {
    return body();
  } catch (const UsageError& e) {
    ctx.err << prefix << printable(e.what(), true) << "\n(see rgbaq " << command << " --help)\n";
    return 2;
  } catch (const DaemonUnreachable& e) {
    ctx.err << prefix << printable(e.what(), true) << "\n";
    return 3;
  } catch (const DaemonError& e) {
    ctx.err << prefix << printable(e.what(), true) << "\n";
    const bool bad_input = e.code == protocol::error_code::kInvalidFile || e.code == protocol::error_code::kBadRequest ||
                           e.code == protocol::error_code::kNotFound;
    return bad_input ? 2 : 1;
  } catch (const std::exception& e) {
    ctx.err << prefix << printable(e.what(), true) << "\n";
    return 1;
  }
}

}  // namespace rgbaq::cli
