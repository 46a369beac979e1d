// Render workers in one rgbaqd: the same run through a daemon of one worker and through one of two, in
// the same invocation, as images per hour (submit .. run done) and their ratio.
//   cpu (the default): --workers 1 --threads 1 against --workers 2 --threads 1, on the tiny model (or
//   --model DIR); on an idle 2-core machine the two workers should approach 2x. The CPU seconds an
//   image and the load average, and two independent `rgbaqd render` processes at once against one
//   after the other, say what the machine gave: the ceiling on a machine shared with other work.
//   cuda: --devices 0 against --devices 0,0 (two sessions on one GPU) at 256 and 1024 px (or --size),
//   on --model DIR (a real-size one from `make_tiny_model DIR --dims real`, else the tiny model).
// usage: workers_bench [--engine cpu|cuda] [--images N] [--size PX] [--model DIR]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/daemon/daemon_process.h"
#include "tests/engine/tiny_model_fixture.h"
#include "tests/run_process.h"

using Clock = std::chrono::steady_clock;
using namespace rgbaq;

namespace {

// The process's user + system CPU seconds (Linux /proc; 0 elsewhere).
double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
    if (i == 15) break;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The 1-minute load average: a machine shared with other work shows it here.
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "?" : one;
}

struct Result {
  double seconds = 0, cpu_s = 0;
  std::string load_before, load_after;
  int images = 0;
  int encoder_runs = 0;
  std::vector<int> per_worker;
  double per_hour() const { return seconds > 0 ? images * 3600.0 / seconds : 0; }
};

// One daemon with `worker_args` and a fresh data directory; for each size in turn a run submitted and
// waited for (the daemon starts once: on a GPU, loading real weights takes longer than a run).
std::vector<Result> through_daemon(const std::filesystem::path& model, const std::vector<std::string>& worker_args, int images,
                                   const std::vector<int>& sizes) {
  TempDir dir;
  DaemonProcess::Options o;
  o.extra_args = worker_args;
  DaemonProcess d(RGBAQD_PATH, model, dir.path(), o);
  const std::vector<std::string> prompts = {"a red fox, game asset", "an isometric castle", "a glass teapot", "a paper crane"};
  const auto status = [&] {
    return nlohmann::json::parse(run_process({RGBAQ_CLI_PATH, "--socket", d.socket().string(), "status", "--json"}).out);
  };
  nlohmann::json before = status();  // answered: the sessions are open
  std::vector<Result> results;
  for (const int size : sizes) {
    std::string csv = "prompt,seed\n";
    for (int i = 0; i < images; ++i) {
      csv += "\"" + prompts[static_cast<size_t>(i) % prompts.size()] + "\"," + std::to_string(size * 1000 + i + 1) + "\n";
    }
    Result result;
    result.load_before = load_average();
    const double cpu0 = cpu_seconds(d.pid());
    const auto t0 = Clock::now();
    const auto r = run_process({RGBAQ_CLI_PATH, "--socket", d.socket().string(), "submit", "-", "--size", std::to_string(size),
                                "--out", (dir.path() / ("out" + std::to_string(size))).string(), "--wait"},
                               csv);
    result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    result.cpu_s = cpu_seconds(d.pid()) - cpu0;
    result.load_after = load_average();
    if (r.exit_code != 0) {
      std::fprintf(stderr, "submit failed: %s %s\n", r.out.c_str(), r.err.c_str());
      std::exit(1);
    }
    const nlohmann::json after = status();
    result.images = after["counters"]["images_rendered"].get<int>() - before["counters"]["images_rendered"].get<int>();
    result.encoder_runs = after["counters"]["encoder_runs"].get<int>() - before["counters"]["encoder_runs"].get<int>();
    for (size_t w = 0; w < after["render_workers"].size(); ++w) {
      result.per_worker.push_back(after["render_workers"][w]["images_done"].get<int>() -
                                  before["render_workers"][w]["images_done"].get<int>());
    }
    before = after;
    results.push_back(result);
  }
  return results;
}

// What the machine gives two independent renders now (two `rgbaqd render` processes at once against
// one after the other): the ceiling for two workers, which a machine shared with other work lowers.
double parallel_ceiling(const std::filesystem::path& model, int size) {
  TempDir dir;
  const auto render = [&](int seed) {
    const auto r = run_process({RGBAQD_PATH, "render", "--model", model.string(), "--engine", "cpu", "--threads", "1", "--prompt",
                                "a red fox", "--seed", std::to_string(seed), "--size", std::to_string(size), "-o",
                                (dir.path() / (std::to_string(seed) + ".png")).string()});
    if (r.exit_code != 0) {
      std::fprintf(stderr, "rgbaqd render failed: %s\n", r.err.c_str());
      std::exit(1);
    }
  };
  auto t0 = Clock::now();
  render(1);
  render(2);
  const double sequential = std::chrono::duration<double>(Clock::now() - t0).count();
  t0 = Clock::now();
  std::thread other([&] { render(3); });
  render(4);
  other.join();
  const double parallel = std::chrono::duration<double>(Clock::now() - t0).count();
  return sequential / parallel;
}

void print(const char* what, const Result& r) {
  std::string split;
  for (const int n : r.per_worker) split += (split.empty() ? "" : " + ") + std::to_string(n);
  std::printf("  %-30s %7.2f s  %8.0f images/hour  (%s images; %d encoder runs; %.2f CPU s an image; load %s -> %s)\n", what,
              r.seconds, r.per_hour(), split.c_str(), r.encoder_runs, r.images ? r.cpu_s / r.images : 0.0, r.load_before.c_str(),
              r.load_after.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string engine = "cpu", model_arg, random_weights;
  int images = 0, size = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--engine") == 0) engine = argv[i + 1];
    else if (std::strcmp(argv[i], "--images") == 0) images = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--size") == 0) size = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--model") == 0) model_arg = argv[i + 1];
    else if (std::strcmp(argv[i], "--random-weights") == 0) random_weights = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: workers_bench [--engine cpu|cuda] [--images N] [--size PX] [--model DIR] "
                           "[--random-weights SEED (cuda; a hollow model)]\n");
      return 2;
    }
  }
  std::unique_ptr<TinyModel> tiny;
  std::filesystem::path model = model_arg;
  if (model.empty()) {
    tiny = std::make_unique<TinyModel>();
    model = tiny->dir();
  }
  if (engine == "cpu") {
    if (images == 0) images = 24;
    if (size == 0) size = 512;
    std::printf("%d images at %dx%d, cpu engine, 1 thread per worker (%s)\n", images, size, size, model.string().c_str());
    const Result one = through_daemon(model, {"--engine", "cpu", "--workers", "1", "--threads", "1"}, images, {size})[0];
    print("--workers 1 --threads 1", one);
    const Result two = through_daemon(model, {"--engine", "cpu", "--workers", "2", "--threads", "1"}, images, {size})[0];
    print("--workers 2 --threads 1", two);
    std::printf("two workers / one: %.2fx images per hour\n", two.per_hour() / one.per_hour());
    std::printf("the machine now: two independent `rgbaqd render` processes at once run %.2fx one after the other\n",
                parallel_ceiling(model, size));
    return 0;
  }
  if (engine != "cuda") {
    std::fprintf(stderr, "workers_bench: --engine must be cpu or cuda\n");
    return 2;
  }
  if (images == 0) images = 16;
  const std::vector<int> sizes = size ? std::vector<int>{size} : std::vector<int>{256, 1024};
  std::printf("%d images a size, cuda engine, device 0 (%s)\n", images, model.string().c_str());
  std::vector<std::string> args = {"--engine", "cuda"};
  if (!random_weights.empty()) args.insert(args.end(), {"--random-weights", random_weights});
  auto with = [&](const char* devices) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--devices", devices});
    return a;
  };
  const auto one = through_daemon(model, with("0"), images, sizes);
  const auto two = through_daemon(model, with("0,0"), images, sizes);
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::printf("%dx%d:\n", sizes[i], sizes[i]);
    print("--devices 0", one[i]);
    print("--devices 0,0 (two sessions)", two[i]);
    std::printf("two sessions / one at %d px: %.2fx images per hour\n", sizes[i], two[i].per_hour() / one[i].per_hour());
  }
  return 0;
}
