#pragma once
// `rgbaqd serve`: the daemon's lifetime. Start-up: logs, the engine session, the queue (crash recovery:
// running jobs back to queued, stale temporary files removed), the socket (adopted from systemd or
// launchd, else bound), READY to systemd. Then the worker renders on this thread while the socket
// server answers on its own, until SIGTERM or SIGINT: stop claiming, return the job in hand to the
// queue at its next step, write the PNGs already rendered, STOPPING to systemd, exit 0.
#include <string>
#include <vector>

namespace rgbaq::daemon {

// args are the words after `serve` (or all of them). Returns the exit code: 0 after a clean stop,
// 1 on a failure at start-up, 2 for bad options.
int run_serve_command(const std::vector<std::string>& args);

}  // namespace rgbaq::daemon
