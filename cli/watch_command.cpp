#include "cli/watch_command.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "common/arguments.h"

namespace rgbaq::cli {

using common::Arguments;
using common::UsageError;
using common::parse_u64;
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string bar(int64_t done, int64_t total, int width = 24) {
  const int64_t filled = total > 0 ? done * width / total : 0;
  return "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '-') + "]";
}

struct RunTotals {
  int64_t total = 0, done = 0, failed = 0, canceled = 0;
  bool finished() const { return total > 0 && done + failed + canceled >= total; }
};

RunTotals totals(DaemonClient& client, int64_t run) {
  RunTotals t;
  const json runs = client.call("ls_runs");  // named: a temporary's element would dangle in the loop
  for (const auto& r : runs["runs"]) {
    if (run != 0 && r.value("id", int64_t{0}) != run) continue;
    t.total += r.value("total", int64_t{0});
    t.done += r["counts"].value("done", int64_t{0});
    t.failed += r["counts"].value("failed", int64_t{0});
    t.canceled += r["counts"].value("canceled", int64_t{0});
  }
  return t;
}

}  // namespace

int watch_run(DaemonClient& client, CliContext& ctx, int64_t run, bool until_done) {
  RunTotals t = totals(client, run);
  if (run != 0 && t.total == 0) throw UsageError("there is no run " + std::to_string(run));
  client.call("watch", {{"run", run}});
  t = totals(client, run);  // again, now that no event can slip between the count and the watch
  const auto start = Clock::now();
  const int64_t done_at_start = t.done;
  int64_t job = -1;
  int step = 0, steps = 0;
  bool drawn = false;
  const std::string label = run ? "run " + std::to_string(run) : "all runs";
  auto draw = [&] {
    if (!ctx.out_is_tty) return;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const int64_t fresh = t.done - done_at_start;
    const double rate = elapsed > 0 && fresh > 0 ? fresh / elapsed : 0;
    const int64_t left = t.total - t.done - t.failed - t.canceled;
    char line2[160];
    std::snprintf(line2, sizeof line2, "%-9s %s %lld/%lld images%s  %.2f img/s  ETA %s", label.c_str(), bar(t.done, t.total).c_str(),
                  static_cast<long long>(t.done), static_cast<long long>(t.total),
                  t.failed ? (" (" + std::to_string(t.failed) + " failed)").c_str() : "", rate,
                  rate > 0 ? (std::to_string(static_cast<int64_t>(left / rate)) + "s").c_str() : "?");
    std::ostringstream line1;
    if (job >= 0) {
      line1 << "job " << job << std::string(job < 10000 ? 5 - std::to_string(job).size() : 0, ' ') << bar(step, steps) << " "
            << step << "/" << steps << " steps";
    } else {
      line1 << "idle";
    }
    ctx.out << (drawn ? "\x1b[1A\r\x1b[K" : "") << line1.str() << "\n\r\x1b[K" << line2 << std::flush;
    drawn = true;
  };
  draw();
  auto last_check = Clock::now();
  for (;;) {
    if (until_done && t.finished()) break;
    const auto event = client.next_event(1000);
    if (!event) {
      if (drawn) ctx.out << "\n";
      ctx.err << "rgbaqd closed the connection\n";
      return 1;
    }
    const std::string kind = event->value("event", "");
    if (kind == "progress") {
      job = event->value("job", int64_t{-1});
      step = event->value("step", 0);
      steps = event->value("steps", 0);
    } else if (kind == "job_started") {
      job = event->value("job", int64_t{-1});
      step = 0;
    } else if (kind == "job_done" || kind == "job_failed" || kind == "job_canceled") {
      t = totals(client, run);
      if (!ctx.out_is_tty) {
        ctx.out << "job " << event->value("job", 0) << " "
                << (kind == "job_done" ? "done: " + event->value("path", "")
                    : kind == "job_failed" ? "failed: " + event->value("error", "") +
                                                 (event->value("will_retry", false) ? " (will retry)" : "")
                                           : "canceled")
                << "  (" << t.done << "/" << t.total << " done)\n"
                << std::flush;
      }
      job = -1;
    } else if (kind.empty() || Clock::now() - last_check > std::chrono::seconds(2)) {
      t = totals(client, run);  // also covers events this watch could not see
      last_check = Clock::now();
    }
    draw();
  }
  if (drawn) ctx.out << "\n";
  ctx.out << label << ": " << t.done << " done, " << t.failed << " failed, " << t.canceled << " canceled of " << t.total << "\n";
  return t.failed + t.canceled == 0 ? 0 : 1;
}

int watch_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {}, {"until-done"});
  if (a.positionals().size() > 1) throw UsageError("usage: rgbaq watch [RUN]");
  int64_t run = 0;
  if (!a.positionals().empty()) {
    const auto v = parse_u64(a.positionals()[0]);
    if (!v || *v == 0) throw UsageError("run \"" + a.positionals()[0] + "\" is not a positive integer");
    run = static_cast<int64_t>(*v);
  }
  DaemonClient client(ctx.socket);
  return watch_run(client, ctx, run, run != 0 || a.has("until-done"));
}

}  // namespace rgbaq::cli
