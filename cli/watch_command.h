#pragma once
// `rgbaq watch [RUN]`: each job in hand (run, name or prompt, seed, size, step or decode) and a bar
// for each run in progress with its ETA, redrawn in place on a terminal (and for its new width on
// SIGWINCH), as plain lines otherwise. When the daemon goes away the watch says so and reconnects when
// it returns (`--no-reconnect`: exit 1 instead).
#include <cstdint>
#include <string>
#include <vector>

#include "cli/cli_context.h"
#include "cli/daemon_client.h"

namespace rgbaq::cli {

int watch_command(const std::vector<std::string>& args, CliContext& ctx);

// Follows `run` (0: every run) until it finishes (when `until_done`), or the daemon goes and not
// `reconnect`. Returns 0 when every job of the run (with 0: of the runs seen in progress) is done, 1
// when some failed or were canceled or the daemon went away. `watching_every_run`: `client` asked to
// "watch" every run before the run was made (submit --wait), so no event of the run came before the
// watch; other runs' events are passed over.
int watch_run(DaemonClient& client, CliContext& ctx, int64_t run, bool until_done, bool reconnect = false,
              bool watching_every_run = false);

}  // namespace rgbaq::cli
