#pragma once
// `rgbaqd serve`: the daemon's lifetime. Start-up: logs, the render workers' engine sessions (one per
// --devices entry, or --workers on the cpu; refused, exit 2, when they do not fit their devices), the
// queue (crash recovery: running jobs back to queued, stale temporary files removed), the socket
// (adopted from systemd or launchd, else bound), READY to systemd. Then each worker renders on a thread
// of its own while the socket server answers on its own, until SIGTERM or SIGINT: stop claiming, return
// the jobs in hand to the queue at their next step, write the PNGs already rendered, STOPPING to
// systemd, exit 0. A worker whose device fails goes out of service alone; when none is left, exit 1.
#include <string>
#include <vector>

namespace rgbaq::daemon {

// args are the words after `serve` (or all of them). Returns the exit code: 0 after a clean stop,
// 1 on a failure at start-up, 2 for bad options.
int run_serve_command(const std::vector<std::string>& args);

}  // namespace rgbaq::daemon
