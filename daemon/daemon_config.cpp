#include "daemon/daemon_config.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/arguments.h"
#include "daemon/socket_paths.h"

namespace rgbaq::daemon {

const char* const kDaemonHelp = R"(usage: rgbaqd [serve] --model DIR [options]
       rgbaqd render --model DIR --prompt TEXT -o FILE.png [...]   (one image, no queue; see rgbaqd render --help)

Serves the render queue: takes jobs from the queue database, renders them with one persistent engine
session, writes the PNGs, and answers `rgbaq` over a Unix socket. Normally started by the service
(`rgbaq service install`); it runs in the foreground and logs to stderr and a rotating file.

options (each may also be set in the config file; flags win):
  --model DIR             diffusers-layout model directory (required)
  --engine auto|cpu|cuda  backend (default auto: cuda when a CUDA device is visible, else cpu)
  --threads N             CPU threads (default: all)
  --device N              cuda: the device ordinal (default 0)
  --precision bf16|fp32   cuda: bf16 GEMMs with fp32 accumulation (default), or fp32 throughout
  --gpu-memory GIB        cuda: device memory the session may use (default: all the device has); when
                          the weights do not fit, DiT blocks stream from pinned host memory
  --socket PATH           Unix socket (default $XDG_RUNTIME_DIR/rgbaq/rgbaqd.sock, or $RGBAQ_SOCKET)
  --data-dir DIR          queue.db, cache/embeddings/, logs/rgbaqd.log (default ~/.local/share/rgbaq)
  --max-attempts N        tries per job before it fails (default 3)
  --encoder-cache-mb N    prompt embeddings kept in memory (default 1024); they are also kept on disk
  --log-level LEVEL       trace, debug, info, warn, error (default info)
  --config FILE           a JSON file with any of: {"model", "engine", "threads", "device", "precision",
                          "gpu_memory_gib", "socket", "data_dir", "max_attempts", "encoder_cache_mb",
                          "log_level"}

signals: SIGTERM or SIGINT stop claiming, return the current job to the queue at its next step, finish
the PNGs already rendered, and exit 0. SIGKILL loses nothing: the next start resumes.
)";

namespace {

std::filesystem::path made_absolute(const std::filesystem::path& p) {
  return p.empty() ? p : std::filesystem::absolute(p).lexically_normal();
}

void apply_file(DaemonConfig& c, const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw common::UsageError("--config " + file.string() + ": cannot open");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw common::UsageError(file.string() + ": not valid JSON: " + e.what());
  }
  if (!doc.is_object()) throw common::UsageError(file.string() + ": expected a JSON object");
  const auto base = file.parent_path();
  for (const auto& [key, value] : doc.items()) {
    auto text = [&] {
      if (!value.is_string()) throw common::UsageError(file.string() + ": \"" + key + "\" must be a string");
      return value.get<std::string>();
    };
    auto number = [&] {
      if (!value.is_number_integer() || value.get<int64_t>() < 0) {
        throw common::UsageError(file.string() + ": \"" + key + "\" must be a non-negative integer");
      }
      return value.get<int64_t>();
    };
    auto path = [&] { return made_absolute(base / text()); };  // relative to the config file
    if (key == "model") c.model_dir = path();
    else if (key == "engine") c.engine = text();
    else if (key == "threads") c.threads = static_cast<int>(number());
    else if (key == "device") c.device = static_cast<int>(number());
    else if (key == "precision") c.precision = text();
    else if (key == "gpu_memory_gib") {
      if (!value.is_number() || value.get<double>() < 0) {
        throw common::UsageError(file.string() + ": \"gpu_memory_gib\" must be a non-negative number");
      }
      c.gpu_memory_gib = value.get<double>();
    }
    else if (key == "socket") c.socket_path = path();
    else if (key == "data_dir") c.data_dir = path();
    else if (key == "max_attempts") c.max_attempts = static_cast<int>(number());
    else if (key == "encoder_cache_mb") c.encoder_cache_mb = static_cast<size_t>(number());
    else if (key == "log_level") c.log_level = text();
    else throw common::UsageError(file.string() + ": unknown setting \"" + key + "\"");
  }
}

}  // namespace

double parse_gpu_memory(const std::string& text) {
  size_t used = 0;
  double gib = -1;
  try {
    gib = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || !(gib >= 0)) throw common::UsageError("--gpu-memory \"" + text + "\" is not a number of GiB");
  return gib;
}

engine::EngineOptions DaemonConfig::engine_options() const {
  engine::EngineOptions o;
  o.backend = engine;
  o.threads = threads;
  o.device = device;
  o.gpu_memory_gib = gpu_memory_gib;
  try {
    o.precision = engine::parse_precision(precision);
  } catch (const std::invalid_argument& e) {
    throw common::UsageError(std::string("--precision: ") + e.what());
  }
  return o;
}

DaemonConfig parse_daemon_config(const std::vector<std::string>& args) {
  const common::Arguments a(args,
                         {"model", "engine", "threads", "device", "precision", "gpu-memory", "socket", "data-dir", "max-attempts", "encoder-cache-mb",
                          "log-level", "config"},
                         {});
  if (!a.positionals().empty()) throw common::UsageError("unexpected argument \"" + a.positionals()[0] + "\"");
  DaemonConfig c;
  if (const auto file = a.get("config")) apply_file(c, made_absolute(*file));
  if (const auto v = a.get("model")) c.model_dir = made_absolute(*v);
  if (const auto v = a.get("engine")) c.engine = *v;
  c.threads = a.get_int("threads", c.threads);
  c.device = a.get_int("device", c.device);
  if (const auto v = a.get("precision")) c.precision = *v;
  if (const auto v = a.get("gpu-memory")) c.gpu_memory_gib = parse_gpu_memory(*v);
  if (const auto v = a.get("socket")) c.socket_path = made_absolute(*v);
  if (const auto v = a.get("data-dir")) c.data_dir = made_absolute(*v);
  c.max_attempts = a.get_int("max-attempts", c.max_attempts);
  c.encoder_cache_mb = static_cast<size_t>(a.get_int("encoder-cache-mb", static_cast<int>(c.encoder_cache_mb)));
  if (const auto v = a.get("log-level")) c.log_level = *v;
  if (c.model_dir.empty()) throw common::UsageError("--model DIR is required (a diffusers-layout model directory)");
  if (c.socket_path.empty()) c.socket_path = paths::default_socket_path();
  if (c.data_dir.empty()) c.data_dir = paths::default_data_dir();
  if (c.threads < 0) throw common::UsageError("--threads must be 0 or more");
  if (c.device < 0) throw common::UsageError("--device must be 0 or more");
  if (c.engine != "auto" && c.engine != "cpu" && c.engine != "cuda") {
    throw common::UsageError("--engine \"" + c.engine + "\" is not one of auto, cpu, cuda");
  }
  c.engine_options();  // checks --precision
  if (c.max_attempts < 1) throw common::UsageError("--max-attempts must be at least 1");
  for (const char* level : {"trace", "debug", "info", "warn", "error"}) {
    if (c.log_level == level) return c;
  }
  throw common::UsageError("--log-level \"" + c.log_level + "\" is not one of trace, debug, info, warn, error");
}

}  // namespace rgbaq::daemon
