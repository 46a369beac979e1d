#pragma once
// `rgbaq watch [RUN]`: progress of the image in hand (its steps) and of the run (images, rate, ETA),
// redrawn in place on a terminal, as plain lines otherwise.
#include <cstdint>
#include <string>
#include <vector>

#include "cli/cli_context.h"
#include "cli/daemon_client.h"

namespace rgbaq::cli {

int watch_command(const std::vector<std::string>& args, CliContext& ctx);

// Follows `run` (0: every run) until it finishes (when `until_done`) or the daemon goes. Returns 0 when
// every job of the run is done, 1 when some failed or were canceled.
int watch_run(DaemonClient& client, CliContext& ctx, int64_t run, bool until_done);

}  // namespace rgbaq::cli
