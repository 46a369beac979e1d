#include "daemon/base/daemon_config.h"

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/arguments.h"
#include "common/data_files.h"
#include "daemon/socket_paths.h"
#include "engine/model/hf_cache.h"
#include "engine/model/model_directory.h"
#include "storage/open_queue_store.h"

namespace rgbaq::daemon {

const char* const kDaemonHelp = R"(usage: rgbaqd [serve] --model DIR|REPO [--dit FILE] [--text-encoder FILE] [--vae FILE] [options]
       rgbaqd [serve] --dit FILE --text-encoder FILE --vae FILE [options]
       rgbaqd render --model DIR --prompt TEXT -o FILE.png [...]   (one image, no queue; see rgbaqd render --help)

Serves the render queue: takes jobs from the queue database, renders them with persistent engine
sessions (one render worker per GPU, or --workers on the CPU), writes the PNGs, and answers `rgbaq`
over a Unix socket. Normally started by the service (`rgbaq service install`); it runs in the
foreground and logs to stderr and a rotating file.

options (each may also be set in the config file; flags win):
  --model DIR|REPO        diffusers-layout model directory, or a Hugging Face repo id ORG/NAME[@REV]
                          read from the huggingface_hub cache (see rgbaq model pull) (required,
                          unless --dit, --text-encoder and --vae are all given)
  --dit FILE              a single .safetensors file as the DiT (ComfyUI's models/diffusion_models/:
                          bf16, FP8 scaled or INT8 ConvRot, keys with or without their
                          model.diffusion_model. prefix), replacing --model's transformer
  --text-encoder FILE     a single file as the text encoder (ComfyUI's models/text_encoders/)
  --vae FILE              a single file as the VAE (ComfyUI's models/vae/). With --model each file
                          must match its config.json for that component; with all three and no
                          --model, the tokenizer is rgbaq's own and the sigmas the Turbo's published ones
  --engine auto|cpu|cuda  backend (default auto: cuda when a CUDA device is visible, else cpu)
  --threads N             CPU threads of each worker (default: all, shared out between --workers)
  --workers N             cpu: N render workers, each its own session, all on the one queue
                          (default 1; at most 64)
  --devices all|LIST      cuda: one render worker per device, each its own session on its own device,
                          all on the one queue: "all" (the default: every visible device) or ordinals
                          "0,2,3"; a device listed twice runs two sessions on it. A worker whose device
                          fails gives its job back and opens its session again, or goes out of service
                          (see `rgbaq status`) while the others go on
  --device N              cuda: one device, the same as --devices N
  --precision bf16|fp32|fp8
                          cuda: bf16 GEMMs with fp32 accumulation (default), fp32 throughout, or
                          fp8 (sm_89 and later: the big Linear weights FP8 E4M3 with a scale per
                          row, inputs quantized per token; never run on a GPU yet, see README)
  --gpu-int8 widen|keep|w8a8
                          cuda, with an int8 model (rgbaq model quantize): its Linear weights widened
                          to the GEMM type at upload (default), or kept int8 on the device, half the
                          memory; w8a8: a ConvRot file's Linears kept int8 and run as int8 x int8
                          GEMMs (never run on a GPU yet, see README)
  --vae-tiles on|off      cuda: decode the VAE tile by tile, exact (a halo per tile), its workspace
                          within 1 GiB at 1024x1024 where untiled it takes 4.7 GiB at the real dims;
                          off by default (never run on a GPU yet, see README). The cpu engine tiles
                          its VAE by itself past 1 GiB of feature maps
  --attention gemm|fused  cuda: the DiT's and the encoder's attention as query chunks through GEMMs
                          (default) or one fused kernel with no score matrix (bf16 only; never run
                          on a GPU yet, see README)
  --fused-blocks on|off   cuda: each DiT block's to_q|to_k|to_v and MLP gate|up as one GEMM each, and
                          each gated residual with the norm after it as one pass; off by default
                          (never run on a GPU yet, see README)
  --gpu-memory GIB        cuda: device memory each session may use (default: what the device has
                          free, shared out equally between the sessions on it); when the weights do
                          not fit, DiT blocks stream from pinned host memory. At start each session
                          allocates its largest render's workspace; one that does not fit exits 2
  --random-weights SEED   cuda, for speed measurements only (a flag, not in the config file): every
                          weight random, made on the device (see rgbaqd render --help); its images
                          are noise, and the model identity (outputs, the encoder cache) is marked
                          with the seed
  --socket PATH           Unix socket (default $XDG_RUNTIME_DIR/rgbaq/rgbaqd.sock, or $RGBAQ_SOCKET)
  --data-dir DIR          queue.db, cache/embeddings/, logs/rgbaqd.log (default ~/.local/share/rgbaq)
  --queue URL             the job queue: a path or sqlite:PATH (default DATA_DIR/queue.db), or
                          postgresql://[user@]host[:port]/db (one queue shared by daemons on many
                          hosts; the password comes from ~/.pgpass or PGPASSWORD, never logged)
  --max-attempts N        tries per job before it fails (default 3): renders that failed, or that
                          crashed the daemon (a crash signal while the job was in hand)
  --max-interruptions N   times a job may be cut off by a stop that is not its fault (SIGKILL, a
                          reboot) before it fails (default 100); these do not spend attempts
  --max-deaths N          times in a row the daemon may die with a job in hand, at whatever steps,
                          with no other job finishing in between, before that job fails as their
                          cause (default 5, at least 2): an OOM killer or a watchdog that ends every
                          try of it. A job finishing, the job failing or a clean stop ends a row
  --lease-s N             a running job's lease in the queue (default 60); the heartbeat renews it every
                          N/6 s and at each step; a job whose lease runs out (its host died) is
                          taken back and counted as an interruption
  --host NAME             this host's name in the queue (default: the system's host name)
  --encoder-cache-mb N    prompt embeddings kept in memory (default 1024); they are also kept on disk
  --encoder-cache-disk-mb N
                          the embeddings kept on disk under DATA_DIR/cache/embeddings (default: 10 GiB
                          or 5% of its file system, whichever is smaller); past it, another model's
                          entries go first, then the least recently used
  --log-level LEVEL       trace, debug, info, warn, error (default info)
  --max-frame-mb N        longest request line, so largest submitted file (default 16)
  --max-connections N     clients served at once (default 64; kept under the descriptor limit)
  --frame-timeout-s N     a partial request line must complete, and a client must take some of its
                          pending output, within N seconds (default 30)
  --client-queue-kb N     unsent events a watch client may have queued before it is dropped (default 1024)
  --lora-dir DIR          a folder of LoRA files (repeatable; searched in order): a job's LoRA NAME is
                          DIR/NAME.safetensors, found at submit or the submit is refused
  --lora-cache-mb N       LoRA adapters kept in memory between jobs (default 1024)
  --http ADDR:PORT|off    the HTTP API and the image APIs (default 127.0.0.1:7878; port 0 takes a free
                          one). Every request needs the token in DATA_DIR/http-token. An address that
                          is not loopback is served as asked, with a warning: put TLS in front of it
                          (a reverse proxy); rgbaqd speaks plain HTTP only
  --http-host NAME        another name the Host header may give (repeatable; a reverse proxy's name)
  --http-cors ORIGIN      let pages of ORIGIN (e.g. http://localhost:3000) call the API (default: none)
  --api-out DIR           where images made through the OpenAI and A1111 APIs go (default DATA_DIR/api-renders)
  --thumbnail-cache-mb N  WebP thumbnails kept on disk under DATA_DIR/cache/thumbnails (default 256)
  --copy-root DIR         the gallery copies chosen PNGs only into folders under DIR (repeatable;
                          default: your home folder)
  --on-run-done COMMAND   run COMMAND with /bin/sh -c once each time a run ends (every job done,
                          failed or canceled), in a session of its own; the run is described only in
                          the environment (RGBAQ_RUN, RGBAQ_RUN_NAME, RGBAQ_OUT, RGBAQ_DONE,
                          RGBAQ_FAILED, RGBAQ_CANCELED, RGBAQ_MANIFEST: its JSONL export), never in
                          the command line. Its output goes to the log; its outcome to the run
                          (rgbaq ls runs). Owed in the queue when the run ends: a daemon killed
                          before it ran runs it after its restart; one that started is never re-run
  --hook-timeout-s N      the hook's process group is killed after N seconds (default 300)
  --webhook URL           POST the run's summary JSON to URL (http:// or https://) each time a run
                          ends, signed: X-Rgbaq-Signature-256: sha256=HMAC-SHA256 of the body, keyed
                          by DATA_DIR/webhook-secret (made on first use). A network error or an
                          answer that is not 2xx is tried again, waiting 10 s, 20 s, ... (at most
                          10 min) for up to an hour after the end; each attempt recorded on the run
  --webhook-backoff-s S   the first wait before a failed delivery is tried again (default 10; tests)
  --busy-timeout-ms N     how long a queue database access waits for a lock (default 10000)
  --unhealthy-exit-s N    exit 1 when the queue database keeps failing for N seconds (default 300)
  --max-jobs-per-submit N one submit may expand to at most N jobs (default 100000); a client's
                          --max-jobs cannot exceed it
  --create-queue          when DATA_DIR/queue.db exists but is not an rgbaq queue (empty, or another
                          database), make a new queue in it instead of refusing to start
  --config FILE           a JSON file with any of: {"model", "dit", "text_encoder", "vae", "engine", "threads", "workers", "device",
                          "devices" ("all", "0,2" or a list of ordinals), "precision", "gpu_int8",
                          "vae_tiles" and "fused_blocks" (true or false), "attention", "gpu_memory_gib", "socket", "data_dir", "queue", "lease_s", "host", "max_attempts", "max_interruptions", "max_deaths",
                          "encoder_cache_mb", "encoder_cache_disk_mb", "log_level", "max_frame_mb", "max_connections", "frame_timeout_s",
                          "client_queue_kb", "busy_timeout_ms", "unhealthy_exit_s", "max_jobs_per_submit",
                          "create_queue", "lora_dirs" (a list of folders), "lora_cache_mb", "http", "http_hosts"
                          (a list), "http_cors", "api_out", "thumbnail_cache_mb", "copy_roots" (a list),
                          "on_run_done", "hook_timeout_s", "webhook", "webhook_backoff_s"}

signals: SIGTERM, SIGINT or SIGHUP (a closed terminal, a service manager's reload) stop claiming, return
the current job to the queue at its next step without spending an attempt, finish the PNGs already
rendered, and exit 0 (the log file needs no reopening: it rotates itself). SIGKILL loses nothing: the
next start resumes.
)";

namespace {

// A SQLite queue's relative path is taken from `base` (the working directory, or the config file's folder).
std::string queue_url_from(const std::string& url, const std::filesystem::path& base, const std::string& where) {
  try {
    const auto q = storage::parse_queue_url(url);
    if (q.kind != storage::QueueKind::kSqlite) return url;
    return std::filesystem::absolute(base / q.target).lexically_normal().string();
  } catch (const std::invalid_argument& e) {
    throw common::UsageError(where + e.what());
  }
}

std::filesystem::path made_absolute(const std::filesystem::path& p) {
  return p.empty() ? p : std::filesystem::absolute(p).lexically_normal();
}

// --model's folder: a directory (relative to `base`), or a Hugging Face repo id's cached snapshot.
std::filesystem::path model_folder(const std::string& text, const std::filesystem::path& base, const std::string& where) {
  std::error_code ec;
  if (std::filesystem::is_directory(base / text, ec) || !engine::parse_hub_repo_ref(text)) return made_absolute(base / text);
  try {
    return made_absolute(engine::resolve_model_argument(text));
  } catch (const engine::InvalidModel& e) {
    throw common::UsageError(where + e.what());
  }
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
  if (doc.contains("device") && doc.contains("devices")) {
    throw common::UsageError(file.string() + ": \"device\" and \"devices\" both name devices; keep \"devices\"");
  }
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
    auto texts = [&](const char* what) {  // a list of strings ("folders", "names")
      std::vector<std::string> out;
      const auto refuse = [&] { throw common::UsageError(file.string() + ": \"" + key + "\" must be a list of " + what); };
      if (!value.is_array()) refuse();
      for (const auto& v : value) {
        if (!v.is_string()) refuse();
        out.push_back(v.get<std::string>());
      }
      return out;
    };
    if (key == "model") c.model_dir = model_folder(text(), base, file.string() + ": \"model\": ");
    else if (key == "dit" || key == "text_encoder" || key == "vae") {
      const auto& flag = *std::find_if(std::begin(kComponentFlags), std::end(kComponentFlags), [&](const ComponentFlag& f) { return key == f.key; });
      c.components.*flag.file = path();
      std::error_code ec;
      if (!std::filesystem::is_regular_file(c.components.*flag.file, ec)) {
        throw common::UsageError(file.string() + ": \"" + key + "\": " + (c.components.*flag.file).string() + ": no such file");
      }
    }
    else if (key == "engine") c.engine = text();
    else if (key == "threads") c.threads = static_cast<int>(number());
    else if (key == "device") {
      c.device = static_cast<int>(number());
      c.device_set = true;
    }
    else if (key == "devices") {
      if (value.is_array()) {
        c.devices.clear();
        for (const auto& d : value) {
          if (!d.is_number_integer() || d.get<int64_t>() < 0) {
            throw common::UsageError(file.string() + ": \"devices\" must be \"all\", \"0,2,...\" or a list of device ordinals");
          }
          c.devices += (c.devices.empty() ? "" : ",") + std::to_string(d.get<int64_t>());
        }
        if (c.devices.empty()) throw common::UsageError(file.string() + ": \"devices\" is an empty list");
      } else {
        c.devices = text();
      }
      try {
        parse_device_list(c.devices);
      } catch (const common::UsageError& e) {
        throw common::UsageError(file.string() + ": \"devices\": " + e.what());
      }
    }
    else if (key == "workers") c.workers = static_cast<int>(number());
    else if (key == "precision") c.precision = text();
    else if (key == "gpu_int8") c.gpu_int8 = text();
    else if (key == "attention") c.attention = text();
    else if (key == "vae_tiles") {
      if (!value.is_boolean()) throw common::UsageError(file.string() + ": \"vae_tiles\" must be true or false");
      c.vae_tiles = value.get<bool>();
    } else if (key == "fused_blocks") {
      if (!value.is_boolean()) throw common::UsageError(file.string() + ": \"fused_blocks\" must be true or false");
      c.fused_blocks = value.get<bool>();
    }
    else if (key == "gpu_memory_gib") {
      if (!value.is_number() || value.get<double>() < 0) {
        throw common::UsageError(file.string() + ": \"gpu_memory_gib\" must be a non-negative number");
      }
      c.gpu_memory_gib = value.get<double>();
    }
    else if (key == "socket") c.socket_path = path();
    else if (key == "data_dir") c.data_dir = path();
    else if (key == "queue") c.queue = queue_url_from(text(), base, file.string() + ": \"queue\": ");
    else if (key == "max_attempts") c.max_attempts = static_cast<int>(number());
    else if (key == "max_interruptions") c.max_interruptions = static_cast<int>(number());
    else if (key == "max_deaths") c.max_deaths = static_cast<int>(number());
    else if (key == "lease_s") {
      if (!value.is_number() || value.get<double>() <= 0) throw common::UsageError(file.string() + ": \"lease_s\" must be a positive number");
      c.lease_s = value.get<double>();
    }
    else if (key == "host") c.host_name = text();
    else if (key == "encoder_cache_mb") c.encoder_cache_mb = static_cast<size_t>(number());
    else if (key == "encoder_cache_disk_mb") c.encoder_cache_disk_mb = static_cast<uint64_t>(number());
    else if (key == "log_level") c.log_level = text();
    else if (key == "max_frame_mb") c.max_frame_mb = static_cast<size_t>(number());
    else if (key == "max_connections") c.max_connections = static_cast<int>(number());
    else if (key == "frame_timeout_s") c.frame_timeout_s = static_cast<int>(number());
    else if (key == "client_queue_kb") c.client_queue_kb = static_cast<size_t>(number());
    else if (key == "busy_timeout_ms") c.busy_timeout_ms = static_cast<int>(number());
    else if (key == "unhealthy_exit_s") c.unhealthy_exit_s = static_cast<int>(number());
    else if (key == "max_jobs_per_submit") c.max_jobs_per_submit = static_cast<uint64_t>(number());
    else if (key == "lora_dirs") for (const auto& d : texts("folders")) c.lora_dirs.push_back(made_absolute(base / d));
    else if (key == "lora_cache_mb") c.lora_cache_mb = static_cast<size_t>(number());
    else if (key == "http") {
      c.http = text();
      c.http_given = true;
    }
    else if (key == "http_hosts") c.http_hosts = texts("names");
    else if (key == "http_cors") c.http_cors = text();
    else if (key == "api_out") c.api_out_dir = path();
    else if (key == "thumbnail_cache_mb") c.thumbnail_cache_mb = static_cast<size_t>(number());
    else if (key == "copy_roots") for (const auto& d : texts("folders")) c.copy_roots.push_back(made_absolute(base / d));
    else if (key == "on_run_done") c.on_run_done = text();
    else if (key == "hook_timeout_s") c.hook_timeout_s = static_cast<int>(std::min<int64_t>(number(), INT32_MAX));
    else if (key == "webhook") c.webhook = text();
    else if (key == "webhook_backoff_s") {
      if (!value.is_number() || !(value.get<double>() > 0)) {
        throw common::UsageError(file.string() + ": \"webhook_backoff_s\" must be a positive number");
      }
      c.webhook_backoff_s = value.get<double>();
    }
    else if (key == "create_queue") {
      if (!value.is_boolean()) throw common::UsageError(file.string() + ": \"create_queue\" must be true or false");
      c.create_queue = value.get<bool>();
    }
    else throw common::UsageError(file.string() + ": unknown setting \"" + key + "\"");
  }
}

}  // namespace

uint64_t DaemonConfig::encoder_cache_disk_bytes() const {
  if (encoder_cache_disk_mb) return std::min(*encoder_cache_disk_mb, UINT64_MAX >> 20) << 20;
  constexpr uint64_t kMost = 10ull << 30;
  std::error_code ec;
  const auto space = std::filesystem::space(data_dir, ec);
  return ec ? kMost : std::min(kMost, space.capacity / 20);
}

void read_component_flags(const common::Arguments& a, engine::ComponentFiles& files) {
  for (const auto& f : kComponentFlags) {
    if (const auto v = a.get(f.flag)) files.*f.file = made_absolute(*v);
  }
}

void check_component_files(const engine::ComponentFiles& files, const std::filesystem::path& model) {
  std::string missing;
  for (const auto& f : kComponentFlags) {
    const auto& file = files.*f.file;
    if (file.empty()) {
      missing += std::string(missing.empty() ? "" : ", ") + "--" + f.flag;
      continue;
    }
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) throw common::UsageError(std::string("--") + f.flag + " " + file.string() + ": no such file");
    if (!std::filesystem::is_regular_file(file, ec)) {
      throw common::UsageError(std::string("--") + f.flag + " " + file.string() + ": not a file (a single .safetensors file)");
    }
  }
  if (model.empty() && !missing.empty()) {
    throw common::UsageError("without --model, every component needs its file: " + missing + " not given");
  }
}

std::string name_component_flag(const std::string& message, const engine::ComponentFiles& files) {
  for (const auto& f : kComponentFlags) {
    const auto& file = files.*f.file;
    if (file.empty() || message.find(file.filename().string()) == std::string::npos) continue;
    const std::string flag = std::string("--") + f.flag;
    return message.rfind(flag, 0) == 0 ? message : flag + ": " + message;
  }
  return message;
}

std::filesystem::path own_tokenizer() { return common::data_file("tokenizer/qwen3/tokenizer.json", RGBAQ_DEFAULT_TOKENIZER); }

std::string how_to_get_a_model(const std::filesystem::path& dir) {
  std::error_code ec;
  if (dir.empty()) return "";  // single component files, no model directory
  if (std::filesystem::exists(dir / "model_index.json", ec)) return "";
  return dir.string() + " holds no model. To try rgbaq, write the tiny test model there: `tools/make_tiny_model " +
         dir.string() + "` in a build (`rgbaq-make-tiny-model` installed); for real images, `rgbaq model pull` fetches "
         "Qwen/Qwen-Image-2.1-Turbo (then --model Qwen/Qwen-Image-2.1-Turbo), or give a diffusers folder of it.";
}

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

std::optional<std::vector<int>> parse_device_list(const std::string& text) {
  if (text.empty() || text == "all") return std::nullopt;
  std::vector<int> devices;
  size_t begin = 0;
  for (;;) {
    const size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    const auto n = common::parse_u64(item);
    if (!n || *n > 1023) {
      throw common::UsageError("--devices \"" + text + "\": \"" + item + "\" is not a device ordinal (say \"all\" or e.g. \"0,2,3\")");
    }
    devices.push_back(static_cast<int>(*n));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (devices.size() > static_cast<size_t>(kMostWorkers)) {
    throw common::UsageError("--devices \"" + text + "\" lists " + std::to_string(devices.size()) + " devices; at most " +
                             std::to_string(kMostWorkers) + " render workers");
  }
  return devices;
}

engine::EngineOptions DaemonConfig::engine_options() const {
  engine::EngineOptions o;
  o.backend = engine;
  o.threads = threads;
  o.device = device;
  o.gpu_memory_gib = gpu_memory_gib;
  o.vae_tiles = vae_tiles;
  o.fused_blocks = fused_blocks;
  o.random_weights = random_weights;
  o.lora_cache_bytes = lora_cache_mb << 20;
  o.components = components;
  if (model_dir.empty()) o.tokenizer = own_tokenizer();
  o.precision = common::parse_option("precision", precision, engine::parse_precision);
  o.gpu_int8 = common::parse_option("gpu-int8", gpu_int8, engine::parse_gpu_int8);
  o.attention = common::parse_option("attention", attention, engine::parse_attention_kernel);
  return o;
}

storage::StoreOptions DaemonConfig::store_options() const {
  storage::StoreOptions o;
  o.max_attempts = max_attempts;
  o.max_interruptions = max_interruptions;
  o.max_deaths = max_deaths;
  o.busy_timeout_ms = busy_timeout_ms;
  o.create_over_invalid = create_queue;
  o.lease_seconds = lease_s;
  o.owe_hook = !on_run_done.empty();
  o.owe_webhook = !webhook.empty();
  return o;
}

DaemonConfig parse_daemon_config(const std::vector<std::string>& args) {
  const common::Arguments a(args,
                         {"model", "dit", "text-encoder", "vae", "engine", "threads", "workers", "device", "devices", "precision", "gpu-int8", "vae-tiles", "attention", "fused-blocks", "gpu-memory", "socket", "data-dir",
                          "queue", "max-attempts", "encoder-cache-mb", "encoder-cache-disk-mb", "log-level", "config", "max-frame-mb", "max-connections",
                          "frame-timeout-s", "client-queue-kb", "busy-timeout-ms", "unhealthy-exit-s",
                          "max-jobs-per-submit", "max-interruptions", "max-deaths", "lora-dir", "lora-cache-mb", "lease-s", "host",
                          "http", "http-host", "http-cors", "api-out", "thumbnail-cache-mb", "copy-root", "random-weights",
                          "on-run-done", "hook-timeout-s", "webhook", "webhook-backoff-s"},
                         {"create-queue"});
  if (!a.positionals().empty()) throw common::UsageError("unexpected argument \"" + a.positionals()[0] + "\"");
  DaemonConfig c;
  if (const auto file = a.get("config")) apply_file(c, made_absolute(*file));
  if (const auto v = a.get("model")) c.model_dir = model_folder(*v, std::filesystem::current_path(), "--model ");
  read_component_flags(a, c.components);
  if (const auto v = a.get("engine")) c.engine = *v;
  c.threads = a.get_int("threads", c.threads);
  c.workers = a.get_int("workers", c.workers);
  if (a.has("device") && a.has("devices")) {
    throw common::UsageError("--device and --devices both name devices; --devices N alone is --device N");
  }
  if (a.has("device")) {  // flags win over the file's "devices"
    c.device = a.get_int("device", c.device);
    c.device_set = true;
    c.devices.clear();
  }
  if (const auto v = a.get("devices")) {
    c.devices = *v;
    c.device_set = false;
    parse_device_list(c.devices);
  }
  if (const auto v = a.get("precision")) c.precision = *v;
  if (const auto v = a.get("gpu-int8")) c.gpu_int8 = *v;
  if (const auto v = a.get("attention")) c.attention = *v;
  if (const auto v = a.get("vae-tiles")) c.vae_tiles = common::parse_option("vae-tiles", *v, engine::parse_on_off);
  if (const auto v = a.get("fused-blocks")) c.fused_blocks = common::parse_option("fused-blocks", *v, engine::parse_on_off);
  if (const auto v = a.get("gpu-memory")) c.gpu_memory_gib = parse_gpu_memory(*v);
  if (a.has("random-weights")) c.random_weights = a.get_u64("random-weights", 0);
  if (const auto v = a.get("socket")) c.socket_path = made_absolute(*v);
  if (const auto v = a.get("data-dir")) c.data_dir = made_absolute(*v);
  if (const auto v = a.get("queue")) c.queue = queue_url_from(*v, std::filesystem::current_path(), "--queue: ");
  c.max_attempts = a.get_int("max-attempts", c.max_attempts);
  c.max_interruptions = a.get_int("max-interruptions", c.max_interruptions);
  c.max_deaths = a.get_int("max-deaths", c.max_deaths);
  if (const auto v = a.get("lease-s")) {
    try {
      c.lease_s = std::stod(*v);
    } catch (const std::exception&) {
      c.lease_s = -1;
    }
    if (!(c.lease_s > 0)) throw common::UsageError("--lease-s \"" + *v + "\" is not a positive number of seconds");
  }
  if (const auto v = a.get("host")) c.host_name = *v;
  c.encoder_cache_mb = static_cast<size_t>(a.get_int("encoder-cache-mb", static_cast<int>(c.encoder_cache_mb)));
  if (a.has("encoder-cache-disk-mb")) c.encoder_cache_disk_mb = a.get_u64("encoder-cache-disk-mb", 0);
  if (const auto v = a.get("log-level")) c.log_level = *v;
  c.max_frame_mb = static_cast<size_t>(a.get_int("max-frame-mb", static_cast<int>(c.max_frame_mb)));
  c.max_connections = a.get_int("max-connections", c.max_connections);
  c.frame_timeout_s = a.get_int("frame-timeout-s", c.frame_timeout_s);
  c.client_queue_kb = static_cast<size_t>(a.get_int("client-queue-kb", static_cast<int>(c.client_queue_kb)));
  c.busy_timeout_ms = a.get_int("busy-timeout-ms", c.busy_timeout_ms);
  c.unhealthy_exit_s = a.get_int("unhealthy-exit-s", c.unhealthy_exit_s);
  c.max_jobs_per_submit = a.get_u64("max-jobs-per-submit", c.max_jobs_per_submit);
  if (a.has("create-queue")) c.create_queue = true;
  if (a.has("lora-dir")) c.lora_dirs.clear();  // flags win over the config file's list
  for (const auto& d : a.get_all("lora-dir")) c.lora_dirs.push_back(made_absolute(d));
  c.lora_cache_mb = static_cast<size_t>(a.get_int("lora-cache-mb", static_cast<int>(c.lora_cache_mb)));
  if (const auto v = a.get("http")) {
    c.http = *v;
    c.http_given = true;
  }
  if (a.has("http-host")) c.http_hosts = a.get_all("http-host");
  if (const auto v = a.get("http-cors")) c.http_cors = *v;
  if (const auto v = a.get("api-out")) c.api_out_dir = made_absolute(*v);
  c.thumbnail_cache_mb = static_cast<size_t>(a.get_int("thumbnail-cache-mb", static_cast<int>(c.thumbnail_cache_mb)));
  if (a.has("copy-root")) c.copy_roots.clear();
  for (const auto& d : a.get_all("copy-root")) c.copy_roots.push_back(made_absolute(d));
  if (const auto v = a.get("on-run-done")) c.on_run_done = *v;
  c.hook_timeout_s = a.get_int("hook-timeout-s", c.hook_timeout_s);
  if (const auto v = a.get("webhook")) c.webhook = *v;
  if (const auto v = a.get("webhook-backoff-s")) {
    try {
      c.webhook_backoff_s = std::stod(*v);
    } catch (const std::exception&) {
      c.webhook_backoff_s = -1;
    }
    if (!(c.webhook_backoff_s > 0)) throw common::UsageError("--webhook-backoff-s \"" + *v + "\" is not a positive number of seconds");
  }
  if (c.copy_roots.empty()) {
    if (const char* home = std::getenv("HOME"); home && *home) c.copy_roots.push_back(home);
  }
  if (c.model_dir.empty() && c.components.empty()) {
    throw common::UsageError("--model DIR is required (a diffusers-layout model directory), unless --dit, --text-encoder and "
                             "--vae name all three components");
  }
  check_component_files(c.components, c.model_dir);  // without --model: names the files missing
  if (c.socket_path.empty()) c.socket_path = paths::default_socket_path();
  if (c.data_dir.empty()) c.data_dir = paths::default_data_dir();
  if (c.threads < 0) throw common::UsageError("--threads must be 0 or more");
  if (c.device < 0) throw common::UsageError("--device must be 0 or more");
  if (c.workers < 1 || c.workers > kMostWorkers) {
    throw common::UsageError("--workers must be from 1 to " + std::to_string(kMostWorkers));
  }
  if (c.engine != "auto" && c.engine != "cpu" && c.engine != "cuda") {
    throw common::UsageError("--engine \"" + c.engine + "\" is not one of auto, cpu, cuda");
  }
  if (c.random_weights && c.engine != "cuda") {
    throw common::UsageError("--random-weights takes --engine cuda (speed measurements on a hollow model), not \"" + c.engine +
                             "\"");
  }
  if (c.precision == "fp8" && c.engine == "cpu") {
    throw common::UsageError("--precision fp8 is the cuda engine's (FP8 tensor cores), not \"cpu\", which computes in fp32");
  }
  c.engine_options();  // checks --precision, --gpu-int8 and --attention
  if (c.max_attempts < 1) throw common::UsageError("--max-attempts must be at least 1");
  if (c.max_frame_mb < 1 || c.max_frame_mb > 1024) throw common::UsageError("--max-frame-mb must be from 1 to 1024");
  if (c.max_connections < 1) throw common::UsageError("--max-connections must be at least 1");
  if (c.frame_timeout_s < 1) throw common::UsageError("--frame-timeout-s must be at least 1");
  if (c.client_queue_kb < 1) throw common::UsageError("--client-queue-kb must be at least 1");
  if (c.busy_timeout_ms < 0) throw common::UsageError("--busy-timeout-ms must be 0 or more");
  if (c.unhealthy_exit_s < 1) throw common::UsageError("--unhealthy-exit-s must be at least 1");
  if (c.max_interruptions < 1) throw common::UsageError("--max-interruptions must be at least 1");
  if (c.max_deaths < 2) throw common::UsageError("--max-deaths must be at least 2: a single death is no job's fault");
  if (c.hook_timeout_s < 1) throw common::UsageError("--hook-timeout-s must be at least 1");
  if (!c.webhook.empty() && c.webhook.rfind("http://", 0) != 0 && c.webhook.rfind("https://", 0) != 0) {
    throw common::UsageError("--webhook \"" + c.webhook + "\" is not an http:// or https:// URL");
  }
  if (c.max_jobs_per_submit < 1) throw common::UsageError("--max-jobs-per-submit must be at least 1");
  for (const auto& d : c.lora_dirs) {
    if (!std::filesystem::is_directory(d)) throw common::UsageError("--lora-dir " + d.string() + " is not a folder");
  }
  for (const char* level : {"trace", "debug", "info", "warn", "error"}) {
    if (c.log_level == level) return c;
  }
  throw common::UsageError("--log-level \"" + c.log_level + "\" is not one of trace, debug, info, warn, error");
}

}  // namespace rgbaq::daemon
