#include "cli/watch_command.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <csignal>
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "cli/watch_display.h"
#include "common/arguments.h"
#include "common/printable_text.h"

namespace rgbaq::cli {

using common::Arguments;
using common::UsageError;
using common::parse_u64;
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kPollMs = 200;                             // how soon a resize is redrawn
constexpr auto kRefresh = std::chrono::seconds(1);       // counts, pause and jobs in hand, asked again
constexpr auto kSizeMixRefresh = std::chrono::seconds(5);
constexpr auto kReconnectEvery = std::chrono::seconds(1);
constexpr int kSizeSample = 200;  // queued jobs sampled for a run's mix of sizes

volatile std::sig_atomic_t g_resized = 0;
extern "C" void on_winch(int) { g_resized = 1; }

// What a job_started event and an ls_jobs row both say of a job.
void describe(JobInHand& job, int64_t id, const json& fields) {
  job.job = id;
  job.run = fields.value("run", int64_t{0});
  job.label = fields.value("name", "").empty() ? fields.value("prompt", "") : fields.value("name", "");
  job.seed = fields.value("seed", uint64_t{0});
  job.width = fields.value("width", 0);
  job.height = fields.value("height", 0);
}

struct Totals {
  int64_t total = 0, done = 0, failed = 0, canceled = 0;
  bool finished() const { return total > 0 && done + failed + canceled >= total; }
};

// One watch: an event connection and a query connection (a call on the event connection would have
// to skip the events that arrive before its answer), the last known state, and the terminal frame.
// The last error rgbaqd logged since it last started (DATA_DIR/logs/rgbaqd.log), for a daemon that went
// away: its own words say why (a queue it lost, a port it could not have). nullopt when there is none
// (a SIGKILL leaves none).
std::optional<std::string> last_logged_error(const std::filesystem::path& log) {
  std::ifstream in(log, std::ios::binary);
  if (!in) return std::nullopt;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - (64 << 10)));
  std::optional<std::string> last;
  for (std::string line; std::getline(in, line);) {
    if (line.find("] [info] rgbaqd ") != std::string::npos && line.find(" starting: ") != std::string::npos) last.reset();
    if (line.find("] [error] ") != std::string::npos || line.find("] [critical] ") != std::string::npos) last = line;
  }
  return last;
}

class Watch {
 public:
  Watch(CliContext& ctx, int64_t run, bool until_done, bool reconnect)
      : ctx_(ctx), run_(run), until_done_(until_done), reconnect_(reconnect) {
    view_.scope = run ? "run " + std::to_string(run) : "all runs";
  }

  int follow(DaemonClient& first, bool watching_every_run) {
    events_ = &first;
    if (watching_every_run) {
      // Subscribed before the run was made (submit --wait): every one of its jobs' events will come.
      queries_ = std::make_unique<DaemonClient>(ctx_.socket);
      refresh();
    } else {
      subscribe();
    }
    for (;;) {
      if (until_done_ && totals_.finished()) {
        drain_last_events();
        break;
      }
      if (!step()) {
        if (!reconnect_) {
          end_frame();
          ctx_.err << "rgbaqd closed the connection\n";
          say_last_error();
          return 1;
        }
        wait_for_daemon();
      }
    }
    end_frame();
    // Every run: the runs this watch saw in progress; an older run's failures are not this watch's.
    const Totals& t = run_ ? totals_ : followed_totals_;
    ctx_.out << view_.scope << ": " << t.done << " done, " << t.failed << " failed, " << t.canceled << " canceled of " << t.total
             << "\n";
    return t.failed + t.canceled == 0 ? 0 : 1;
  }

 private:
  // The counts can say the run is finished before the events of its last jobs are read: their lines
  // come first (a wait that watched from the start sees one final event a job), for a short while.
  void drain_last_events() {
    const auto until = Clock::now() + std::chrono::milliseconds(500);
    while (!missed_events_ && final_events_ < totals_.total && Clock::now() < until) {
      try {
        const auto event = events_->next_event(50);
        if (!event) return;
        if (event->contains("event")) handle(*event);
      } catch (const DaemonUnreachable&) {
        return;
      }
    }
  }

  // Subscribes on events_ and reads the state afresh; throws DaemonUnreachable.
  void subscribe() {
    queries_ = std::make_unique<DaemonClient>(ctx_.socket);
    refresh();  // throws UsageError for a run that does not exist, before the watch begins
    // The jobs done before the watch: each line's count adds the done events read since to these.
    done_before_.clear();
    done_seen_.clear();
    for (const auto& [id, counts] : run_counts_) done_before_[id] = counts.done;
    events_->call("watch", {{"run", run_}});
    refresh();  // again, now that no event can slip between the counts and the watch
  }

  // "(3/10 done)" on a job's line off a terminal: the run's jobs done up to this event, counted from
  // the events read (the queue's counts, asked at another moment, ran ahead of or behind the lines:
  // 2, 2, 3 or 3, 4, 4, 4 of 10). Watching every run, the job's own run, named: not every job ever.
  std::string done_so_far(int64_t run) const {
    const auto counts = run_counts_.find(run);
    const int64_t total = counts == run_counts_.end() ? 0 : counts->second.total;
    const auto before = done_before_.find(run);
    const auto seen = done_seen_.find(run);
    const int64_t done = std::min<int64_t>(total, (before == done_before_.end() ? 0 : before->second) +
                                                      (seen == done_seen_.end() ? 0 : int64_t(seen->second.size())));
    return (run_ ? "" : "run " + std::to_string(run) + ": ") + std::to_string(done) + "/" + std::to_string(total) + " done";
  }

  // One event or one poll interval; false when the daemon went away.
  bool step() {
    try {
      const auto event = events_->next_event(kPollMs);
      if (!event) return false;
      handle(*event);
      if (Clock::now() - last_refresh_ > kRefresh) refresh();
    } catch (const DaemonUnreachable&) {
      return false;
    }
    draw();
    return true;
  }

  void handle(const json& e) {
    const std::string kind = e.value("event", "");
    const int64_t id = e.value("job", int64_t{-1});
    if (run_ && e.contains("run") && e["run"] != run_) return;  // a watch of every run, for this one
    if (e.contains("run") && e["run"].is_number_integer()) followed_.insert(e["run"].get<int64_t>());  // even one done in a blink
    if (kind == "job_started") {
      // A worker renders one job at a time: its previous one is past its decode (its PNG being
      // written, or already done with events still on the way), no longer in hand.
      const std::string worker = e.value("worker", "");
      std::erase_if(jobs_, [&](const auto& held) {
        const auto by = started_by_.find(held.first);
        return by != started_by_.end() && by->second == worker;
      });
      started_by_[id] = worker;
      JobInHand& j = jobs_[id];
      describe(j, id, e);
      j.step = 0;
      j.decoding = false;
    } else if (kind == "progress") {
      JobInHand& j = jobs_[id];
      j.job = id;
      if (e.contains("host")) j.worker = e.value("host", "");  // another host's job, relayed
      j.run = e.value("run", j.run);
      j.step = e.value("step", 0);
      j.steps = e.value("steps", 0);
      j.width = e.value("width", j.width);
      j.height = e.value("height", j.height);
      // The first step also carries the image's setup (RoPE tables, the text prefix): not a step's time.
      if (e.contains("step_s") && j.width > 0 && (j.step > 1 || !times_.image_s(j.width, j.height))) {
        times_.step(j.width, j.height, j.steps, e.value("step_s", 0.0));
      }
    } else if (kind == "decoding") {
      jobs_[id].decoding = true;
    } else if (kind == "job_done" || kind == "job_failed" || kind == "job_canceled" || kind == "job_interrupted") {
      if (kind != "job_interrupted" && !(kind == "job_failed" && e.value("will_retry", false))) ++final_events_;
      const int64_t job_run = e.value("run", int64_t{0});
      if (kind == "job_done") done_seen_[job_run].insert(id);
      if (kind == "job_done" && !e.value("reused", false) && jobs_.count(id) && e.contains("seconds")) {
        times_.image_done(jobs_[id].width, jobs_[id].height, e.value("seconds", 0.0));
      }
      jobs_.erase(id);
      started_by_.erase(id);
      refresh();
      if (!ctx_.out_is_tty) {
        ctx_.out << "job " << id << " "
                 << common::printable(kind == "job_done" ? (e.value("reused", false) ? "reused: " : "done: ") + e.value("path", "")
                                      : kind == "job_failed" ? "failed: " + e.value("error", "") +
                                                                   (e.value("will_retry", false) ? " (will retry)" : "")
                                      : kind == "job_interrupted" ? "given back by " + e.value("worker", "") + " (its device failed: " +
                                                                        e.value("error", "") + ")"
                                                                  : "canceled")
                 << "  (" << done_so_far(job_run) << ")\n"
                 << std::flush;
      }
    }
  }

  // Counts, the pause, the jobs in hand (also those of other hosts on a shared queue) and the size
  // mix of what is left, from the daemon; then the ETAs.
  void refresh() {
    last_refresh_ = Clock::now();
    const json status = queries_->call("status");
    if (status.contains("data_dir") && status["data_dir"].is_string()) {
      log_file_ = std::filesystem::path(status["data_dir"].get<std::string>()) / "logs" / "rgbaqd.log";
    }
    view_.paused = status.value("paused", json(false)).is_boolean() && status["paused"].get<bool>();
    json running_params = {{"state", "running"}, {"limit", 100}};
    if (run_) running_params["run"] = run_;
    std::map<int64_t, JobInHand> in_hand;
    // This daemon's workers' jobs: one of its running jobs that none of them holds is past its decode,
    // its PNG being written, and not in hand (the watch may not have read its decode event yet).
    const json workers = status.value("render_workers", json::array());
    std::set<int64_t> held;
    for (const auto& w : workers) {
      if (w.contains("job") && w["job"].is_number_integer()) held.insert(w["job"].get<int64_t>());
    }
    // Jobs are told apart by host: not when another daemon on the queue has this host's name too.
    std::string this_host;
    const json queue_workers = status.value("workers", json::array());
    for (const auto& w : queue_workers) {
      if (w.value("pid", int64_t{-1}) == status.value("pid", int64_t{-2})) this_host = w.value("host", "");
    }
    for (const auto& w : queue_workers) {
      if (w.value("host", "") == this_host && w.value("pid", int64_t{-1}) != status.value("pid", int64_t{-2})) this_host.clear();
    }
    const json running = queries_->call("ls_jobs", running_params);  // named: see ls_runs below
    for (const auto& j : running["jobs"]) {
      const int64_t id = j.value("id", int64_t{0});
      if (!held.count(id) && !this_host.empty() && j.value("host", "") == this_host) continue;
      JobInHand job = jobs_.count(id) ? jobs_[id] : JobInHand{};
      describe(job, id, j);
      // The progress its worker recorded in the queue: all there is of another host's job until the
      // daemon relays its next change, and a start for a local job the watch has no events of yet.
      const int step = j.value("step", 0), steps = j.value("steps", 0);
      const bool decoding = j.value("decoding", false);
      if (steps > 0 && (job.steps == 0 || (decoding && !job.decoding) || (!job.decoding && step > job.step))) {
        job.step = step;
        job.steps = steps;
        job.decoding = decoding;
      }
      in_hand[id] = job;
    }
    // Each local worker's job: its step, when the watch began after its last progress event, and which
    // worker renders it when there are several; the workers without a job get a line of their own.
    const bool several = workers.size() > 1;
    view_.idle_workers.clear();
    for (const auto& w : workers) {
      const std::string label = w.value("label", "");
      if (w.value("state", "") == "out_of_service") {
        view_.idle_workers.push_back({label, "out of service: " + w.value("problem", "")});
        continue;
      }
      const auto it = w["job"].is_number() ? in_hand.find(w["job"].get<int64_t>()) : in_hand.end();
      if (it == in_hand.end()) {
        if (several) view_.idle_workers.push_back({label, "idle"});
        continue;
      }
      if (several) it->second.worker = label;
      if (it->second.steps == 0) {
        it->second.step = w.value("step", 0);
        it->second.steps = w.value("steps", 0);
      }
    }
    jobs_ = std::move(in_hand);

    totals_ = {};
    followed_totals_ = {};
    view_.runs.clear();
    run_counts_.clear();
    const json runs = queries_->call("ls_runs");  // named: a temporary's element would dangle in the loop
    bool found = false;
    for (const auto& r : runs["runs"]) {
      const int64_t id = r.value("id", int64_t{0});
      if (run_ != 0 && id != run_) continue;
      found = true;
      RunInProgress p;
      p.id = id;
      p.name = r.value("name", "");
      p.total = r.value("total", int64_t{0});
      p.done = r["counts"].value("done", int64_t{0});
      p.failed = r["counts"].value("failed", int64_t{0});
      p.canceled = r["counts"].value("canceled", int64_t{0});
      totals_.total += p.total, totals_.done += p.done, totals_.failed += p.failed, totals_.canceled += p.canceled;
      run_counts_[id] = {p.total, p.done, p.failed, p.canceled};
      const bool in_progress = p.done + p.failed + p.canceled < p.total;
      if (in_progress) followed_.insert(id);
      if (followed_.count(id)) {
        followed_totals_.total += p.total, followed_totals_.done += p.done, followed_totals_.failed += p.failed,
            followed_totals_.canceled += p.canceled;
      }
      if (!in_progress && run_ == 0) continue;  // history is `rgbaq ls runs`
      if (in_progress) p.eta_s = eta(p, r["counts"].value("queued", int64_t{0}), p.eta_guessed);
      view_.runs.push_back(p);
    }
    if (run_ != 0 && !found) throw UsageError("there is no run " + std::to_string(run_));
  }

  // The run's jobs in hand to their end, then its queued jobs at the measured time for their sizes
  // (a size not measured yet: scaled from one that was, and `guessed` set).
  std::optional<double> eta(const RunInProgress& run, int64_t queued, bool& guessed) {
    double seconds = 0;
    for (const auto& [id, j] : jobs_) {
      if (j.run != run.id) continue;
      const auto rest = times_.rest_of_job_s(j, &guessed);
      if (!rest) return std::nullopt;
      seconds += *rest;
    }
    if (queued == 0) return seconds;
    auto& mix = size_mix_[run.id];
    if (mix.sizes.empty() || Clock::now() - mix.at > kSizeMixRefresh) {
      mix.sizes.clear();
      mix.at = Clock::now();
      const json sample = queries_->call("ls_jobs", {{"run", run.id}, {"state", "queued"}, {"limit", kSizeSample}});
      for (const auto& j : sample["jobs"]) ++mix.sizes[{j.value("width", 0), j.value("height", 0)}];
    }
    int64_t sampled = 0;
    double per_job = 0;
    for (const auto& [size, n] : mix.sizes) {
      const auto image = times_.image_s(size.first, size.second, &guessed);
      if (!image) return std::nullopt;
      per_job += *image * n;
      sampled += n;
    }
    if (sampled == 0) return std::nullopt;
    return seconds + per_job / sampled * queued;
  }

  void wait_for_daemon() {
    missed_events_ = true;  // those of the time it was away
    const auto since = Clock::now();
    jobs_.clear();
    if (!ctx_.out_is_tty) ctx_.out << "rgbaqd went away; waiting for it to return\n" << std::flush;
    say_last_error();
    for (;;) {
      const auto away = std::chrono::duration<double>(Clock::now() - since).count();
      view_.daemon_gone = "rgbaqd went away " + format_duration(away) + " ago; reconnecting (Ctrl-C to stop)";
      draw();
      try {
        owned_events_ = std::make_unique<DaemonClient>(ctx_.socket);
        events_ = owned_events_.get();
        subscribe();
        view_.daemon_gone.clear();
        if (!ctx_.out_is_tty) ctx_.out << "rgbaqd is back\n" << std::flush;
        draw();
        return;
      } catch (const DaemonUnreachable&) {
      }
      const auto until = Clock::now() + kReconnectEvery;
      while (Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
        if (g_resized) draw();
      }
    }
  }

  void say_last_error() {
    if (log_file_.empty()) return;
    if (const auto line = last_logged_error(log_file_)) ctx_.err << "rgbaqd's last error: " << common::printable(*line) << "\n" << std::flush;
  }

  void draw() {
    if (!ctx_.out_is_tty) return;
    winsize ws{};
    const bool known = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0;
    const int width = known ? ws.ws_col : 80, rows = known && ws.ws_row > 0 ? ws.ws_row : 24;
    view_.jobs.clear();
    for (const auto& [id, j] : jobs_) view_.jobs.push_back(j);
    // One column spare: a line that fills the last column leaves some terminals waiting to wrap.
    const auto lines = render_watch(view_, width - 1, rows - 1);
    std::string frame;
    if (g_resized) {
      // The terminal may have rewrapped what was drawn: start from a clean screen.
      g_resized = 0;
      frame = "\x1b[H\x1b[2J";
    } else if (drawn_lines_ > 1) {
      frame = "\x1b[" + std::to_string(drawn_lines_ - 1) + "A";
    }
    frame += "\r\x1b[J";
    for (size_t i = 0; i < lines.size(); ++i) frame += (i ? "\n" : "") + lines[i];
    ctx_.out << frame << std::flush;
    drawn_lines_ = static_cast<int>(lines.size());
  }

  void end_frame() {
    if (drawn_lines_ > 0) ctx_.out << "\n" << std::flush;  // before any message on stderr
    drawn_lines_ = 0;
  }

  struct SizeMix {
    std::map<std::pair<int, int>, int64_t> sizes;
    Clock::time_point at;
  };

  CliContext& ctx_;
  int64_t run_;
  bool until_done_, reconnect_;
  DaemonClient* events_ = nullptr;
  std::filesystem::path log_file_;  // DATA_DIR/logs/rgbaqd.log, from the status
  std::unique_ptr<DaemonClient> owned_events_, queries_;
  WatchView view_;
  Totals totals_, followed_totals_;
  std::map<int64_t, Totals> run_counts_;                // each run's counts at the last refresh
  std::map<int64_t, int64_t> done_before_;              // each run's done jobs when the watch subscribed
  std::map<int64_t, std::set<int64_t>> done_seen_;      // each run's jobs whose job_done was read since
  std::set<int64_t> followed_;  // the runs seen in progress
  std::map<int64_t, JobInHand> jobs_;
  std::map<int64_t, std::string> started_by_;  // job -> the worker label its job_started named
  std::map<int64_t, SizeMix> size_mix_;
  StepTimes times_;
  Clock::time_point last_refresh_;
  int drawn_lines_ = 0;
  int64_t final_events_ = 0;    // jobs of the run seen done, failed for good or canceled
  bool missed_events_ = false;  // the daemon went away meanwhile: some final events never come
};

}  // namespace

int watch_run(DaemonClient& client, CliContext& ctx, int64_t run, bool until_done, bool reconnect, bool watching_every_run) {
  struct sigaction sa {};
  sa.sa_handler = on_winch;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART keeps a resize from failing a write to the terminal; poll() is not restarted, so a
  // resize still wakes the wait for events and the frame is redrawn at once.
  sa.sa_flags = SA_RESTART;
  sigaction(SIGWINCH, &sa, nullptr);
  Watch watch(ctx, run, until_done, reconnect);
  return watch.follow(client, watching_every_run);
}

int watch_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {}, {"until-done", "no-reconnect"});
  if (a.positionals().size() > 1) throw UsageError("usage: rgbaq watch [RUN] [--until-done] [--no-reconnect]");
  int64_t run = 0;
  if (!a.positionals().empty()) {
    const auto v = parse_u64(a.positionals()[0]);
    if (!v || *v == 0) throw UsageError("run \"" + a.positionals()[0] + "\" is not a positive integer");
    run = static_cast<int64_t>(*v);
  }
  DaemonClient client(ctx.socket);
  return watch_run(client, ctx, run, run != 0 || a.has("until-done"), !a.has("no-reconnect"));
}

}  // namespace rgbaq::cli
