#pragma once
// What `rgbaq watch` draws on a terminal, as lines that fit a width: each job in hand (the worker that
// renders it when there are several, run, name or prompt, seed, size, step or decode), each worker
// without a job (idle, or out of service and why), a bar for each run in progress, a paused queue, the
// ETA from measured per-step times for each image size, and a daemon that went away. No I/O here, so
// the layout is tested for any width without a terminal.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rgbaq::cli {

struct JobInHand {
  int64_t job = 0, run = 0;
  std::string label;  // the job's name, else its prompt
  uint64_t seed = 0;
  int width = 0, height = 0;
  int step = 0, steps = 0;  // steps 0: not reported yet (no step done, or none recorded since the watch began)
  bool decoding = false;
  std::string worker;  // "w1 cuda:0", another host's name; empty when one worker renders everything
};

// A render worker with no job in hand.
struct IdleWorker {
  std::string label;  // "w1 cuda:0"
  std::string state;  // "idle", "out of service: ..."
};

struct RunInProgress {
  int64_t id = 0;
  std::string name;
  int64_t total = 0, done = 0, failed = 0, canceled = 0;
  std::optional<double> eta_s;  // the run's remaining work, from the first step measured on
  bool eta_guessed = false;     // some of it at a size not measured yet, scaled from one that was: "ETA ~"
};

struct WatchView {
  std::string scope;  // "all runs" or "run 3"
  std::vector<JobInHand> jobs;
  std::vector<IdleWorker> idle_workers;
  std::vector<RunInProgress> runs;
  bool paused = false;
  std::string daemon_gone;  // non-empty: the daemon is away, and what the watch does about it
};

// The frame: lines of at most `width` display columns (a wide character counts two), at most
// `max_lines` of them (the last says how many were left out).
std::vector<std::string> render_watch(const WatchView& view, int width, int max_lines);

// Columns `text` takes on a terminal (printable text).
int display_columns(std::string_view text);
// `text` cut to at most `columns` columns, ending in "…" when cut.
std::string fit_columns(std::string_view text, int columns);
// "[####------]": `done` of `total` in `width` cells between the brackets.
std::string progress_bar(int64_t done, int64_t total, int width);
// "45s", "3m20s", "2h05m".
std::string format_duration(double seconds);

// Measured seconds per step, and per image for the rest of its work (encode, decode, write), for each
// image size; from them, the time an image or the rest of a job will take.
class StepTimes {
 public:
  void step(int width, int height, int steps, double step_s);
  void image_done(int width, int height, double seconds);
  // One whole image of this size; nullopt until a step of that size was measured. With `guessed`, a
  // size not measured yet is scaled by its pixels from the nearest one that was (*guessed set true).
  std::optional<double> image_s(int width, int height, bool* guessed = nullptr) const;
  // The rest of a job in hand (its remaining steps and the decode); `guessed` as for image_s.
  std::optional<double> rest_of_job_s(const JobInHand& job, bool* guessed = nullptr) const;

 private:
  struct Size;
  // The measurement of this size, else (with `guessed`) the nearest measured size's and the factor
  // its times scale by; nullptr when there is none.
  const Size* measured(int width, int height, bool* guessed, double& scale) const;
  struct Size {
    double step_s = 0, other_s = 0;
    int steps = 0;
    bool other_measured = false;
  };
  std::map<std::pair<int, int>, Size> sizes_;
};

}  // namespace rgbaq::cli
