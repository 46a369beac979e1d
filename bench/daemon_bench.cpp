// The daemon's overhead: the same jobs rendered through rgbaqd (submit, queue, claim, render, PNG
// writer thread, completion) against direct rendering in this process (the `rgbaqd render` path: one
// session, each prompt encoded once, each PNG written), in the same run, on the tiny model.
// usage: daemon_bench [--images-per-prompt N] [--size PX]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/session.h"
#include "storage/png_file.h"
#include "storage/render_metadata.h"
#include "tests/daemon/daemon_process.h"
#include "tests/engine/tiny_model_fixture.h"
#include "tests/run_process.h"

using Clock = std::chrono::steady_clock;
using namespace rgbaq;

static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
  int per_prompt = 8, size = 256;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--images-per-prompt") == 0) per_prompt = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--size") == 0) size = std::atoi(argv[i + 1]);
  }
  const std::vector<std::string> prompts = {"a red fox, game asset", "an isometric castle", "a glass teapot", "a paper crane"};
  const int images = static_cast<int>(prompts.size()) * per_prompt;
  TinyModel model;
  TempDir dir;

  // Direct: one session, embeddings per prompt, PNGs written, all on this thread.
  double direct = 0;
  {
    auto session = engine::Session::open(model.dir(), "cpu", 2);
    const auto t0 = Clock::now();
    for (const auto& p : prompts) {
      const engine::Tensor embeds = session->encode(session->tokenize(p));
      for (int s = 1; s <= per_prompt; ++s) {
        const auto r = session->render_embedded(embeds, {p, static_cast<uint64_t>(s), {size, size}}, {});
        storage::RenderMetadata m;
        m.prompt = p;
        m.seed = static_cast<uint64_t>(s);
        m.width = m.height = size;
        storage::write_png_atomic(dir.path() / ("direct_" + std::to_string(&p - prompts.data()) + "_" + std::to_string(s) + ".png"),
                                  r.rgba.data(), size, size, storage::png_texts(m));
      }
    }
    direct = seconds_since(t0);
  }

  // Through the daemon: submit, then wait for the run to finish.
  DaemonProcess d(RGBAQD_PATH, model.dir(), dir.path(), {});
  std::string csv = "prompt,seed\n";
  for (const auto& p : prompts) csv += "\"" + p + "\",1-" + std::to_string(per_prompt) + "\n";
  // Warm: the first request waits for the model to load.
  run_process({RGBAQ_CLI_PATH, "--socket", d.socket().string(), "status"});
  const auto t0 = Clock::now();
  const auto r = run_process({RGBAQ_CLI_PATH, "--socket", d.socket().string(), "submit", "-", "--size", std::to_string(size), "--out",
                              (dir.path() / "daemon").string(), "--wait"},
                             csv);
  const double through_daemon = seconds_since(t0);
  if (r.exit_code != 0) {
    std::fprintf(stderr, "submit failed: %s %s\n", r.out.c_str(), r.err.c_str());
    return 1;
  }
  const auto status = nlohmann::json::parse(run_process({RGBAQ_CLI_PATH, "--socket", d.socket().string(), "status", "--json"}).out);
  std::printf("%d images at %dx%d on the tiny model, 2 threads\n", images, size, size);
  std::printf("direct (one session, PNGs written):  %.3f s  %.2f images/s\n", direct, images / direct);
  std::printf("through rgbaqd (submit .. run done): %.3f s  %.2f images/s\n", through_daemon, images / through_daemon);
  std::printf("daemon overhead: %+.1f%% of the direct render time (encoder runs %d, images rendered %d)\n",
              100.0 * (through_daemon / direct - 1.0), status["counters"]["encoder_runs"].get<int>(),
              status["counters"]["images_rendered"].get<int>());
  return 0;
}
