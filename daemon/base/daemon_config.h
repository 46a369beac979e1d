#pragma once
// rgbaqd's configuration: command-line flags over an optional JSON config file over defaults. Every
// path can be set, so isolated instances run side by side.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/arguments.h"
#include "engine/engine_options.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon {

struct DaemonConfig {
  std::filesystem::path model_dir;     // empty only when `components` names all three files
  // --dit, --text-encoder, --vae: single files (ComfyUI's) that replace those components of --model;
  // with all three and no --model, the tokenizer is rgbaq's own (own_tokenizer()) and the engine gives
  // the sampler's sigmas.
  engine::ComponentFiles components;
  std::string engine = "auto";         // auto (cuda when a device is visible, else cpu) | cpu | cuda
  int threads = 0;                     // 0: all hardware threads
  int device = 0;                      // cuda: device ordinal
  bool device_set = false;             // --device (or "device") given: one worker, on that device
  // cuda: the devices to render on, one render worker (and session) each: "all", or ordinals "0,2,3"
  // (one listed twice runs two sessions on it); empty: --device's, else every visible device.
  std::string devices;
  int workers = 1;                     // cpu: render workers, each its own session of `threads` threads
  std::string precision = "bf16";      // cuda: bf16 | fp32 | fp8
  std::string gpu_int8 = "widen";      // cuda: widen | keep (an int8 model's Linear weights on the device)
  double gpu_memory_gib = 0;           // cuda: 0 = what the device has
  bool vae_tiles = false;              // cuda: the VAE decoded tile by tile (EngineOptions::vae_tiles)
  std::string attention = "gemm";      // cuda: gemm | fused (EngineOptions::attention)
  bool fused_blocks = false;           // cuda: EngineOptions::fused_blocks
  std::optional<uint64_t> random_weights;  // cuda, a flag only: EngineOptions::random_weights (benchmarks)
  std::filesystem::path socket_path;   // default: paths::default_socket_path()
  std::filesystem::path data_dir;      // queue.db, cache/, logs/; default: paths::default_data_dir()
  std::string queue;                   // the queue's URL (storage/open_queue_store.h); empty: DATA_DIR/queue.db
  int max_attempts = 3;                // renders that failed or crashed the daemon
  int max_interruptions = 100;         // stops (SIGKILL, reboot) under a job before it fails
  int max_deaths = 5;                  // deaths in a row with a job in hand, none other finishing, before it fails
  double lease_s = 60;                 // a claimed job's lease; the heartbeat (every lease/6) extends it
  std::string host_name;               // this host in the queue; empty: the system's host name
  size_t encoder_cache_mb = 1024;      // embeddings kept in memory
  std::optional<uint64_t> encoder_cache_disk_mb;  // and on disk; unset: encoder_cache_disk_bytes()'s default
  std::string log_level = "info";
  // What one client may take (daemon/socket_server.h).
  size_t max_frame_mb = 16;            // a request line, so a submitted file, is at most this
  int max_connections = 64;            // also kept under RLIMIT_NOFILE
  int frame_timeout_s = 30;            // a partial request line must complete within this; output must move
  size_t client_queue_kb = 1024;       // unsent events of a watcher before it is disconnected
  int busy_timeout_ms = 10000;         // how long a database access waits for another process's lock
  int unhealthy_exit_s = 300;          // a queue store failing this long ends the daemon (exit 1)
  bool create_queue = false;           // make a new queue in an existing file that is not one (empty, foreign)
  uint64_t max_jobs_per_submit = 100'000;  // one submit expands to at most this many jobs
  std::vector<std::filesystem::path> lora_dirs;  // where a job's LoRA NAME is NAME.safetensors, searched in order
  size_t lora_cache_mb = 1024;                   // LoRA adapters kept in memory (fp32)
  // HTTP (daemon/http/): ADDR:PORT to listen on, or "off". A port of 0 takes a free one (tests).
  std::string http = "127.0.0.1:7878";
  // Whether `http` was given (flag or config file): only then is an address in use fatal; the default
  // one taken (another rgbaqd on the host) makes the daemon take a free port instead.
  bool http_given = false;
  std::vector<std::string> http_hosts;           // more names the Host header may give (a reverse proxy's)
  std::string http_cors;                         // an origin allowed to call the API from its pages ("" none)
  std::filesystem::path api_out_dir;             // where the image APIs' renders go; default DATA_DIR/api-renders
  size_t thumbnail_cache_mb = 256;               // WebP thumbnails kept on disk
  std::vector<std::filesystem::path> copy_roots; // where the gallery may copy chosen PNGs; default: $HOME
  // When a run ends (daemon/hooks/): the owner's command, run by /bin/sh -c with the run described in
  // RGBAQ_* environment variables ("" none), and its time limit; a URL the run's summary is POSTed to,
  // signed ("" none), and the first wait before a failed delivery is tried again (doubling).
  std::string on_run_done;
  int hook_timeout_s = 300;
  std::string webhook;
  double webhook_backoff_s = 10;

  bool http_enabled() const { return http != "off"; }
  std::filesystem::path api_renders_dir() const { return api_out_dir.empty() ? data_dir / "api-renders" : api_out_dir; }
  std::filesystem::path thumbnail_dir() const { return data_dir / "cache" / "thumbnails"; }
  std::filesystem::path http_token_file() const { return data_dir / "http-token"; }
  std::filesystem::path http_url_file() const { return data_dir / "http-url"; }  // the URL served, for scripts
  std::filesystem::path webhook_secret_file() const { return data_dir / "webhook-secret"; }  // the webhooks' HMAC key
  std::filesystem::path manifests_dir() const { return data_dir / "manifests"; }  // run-N.jsonl for hooks

  // Throws common::UsageError for a bad precision, gpu_int8 or attention.
  engine::EngineOptions engine_options() const;
  // What every queue store of this daemon opens with (the serve loop, the worker, the writer, requests).
  storage::StoreOptions store_options() const;

  std::filesystem::path queue_db() const { return data_dir / "queue.db"; }
  // Notes of PNGs recorded done and not yet renamed into place (daemon/worker/pending_outputs.h).
  std::filesystem::path pending_outputs_dir() const { return data_dir / "pending-outputs"; }
  // The queue every store of this daemon opens: --queue, or the data directory's database.
  std::string queue_url() const { return queue.empty() ? queue_db().string() : queue; }
  std::filesystem::path cache_dir() const { return data_dir / "cache" / "embeddings"; }
  // The embeddings' disk budget: --encoder-cache-disk-mb, else 10 GiB or 5% of the data directory's
  // file system, whichever is smaller (a 100,000-prompt run alone would need 100-650 GB).
  uint64_t encoder_cache_disk_bytes() const;
  std::filesystem::path log_file() const { return data_dir / "logs" / "rgbaqd.log"; }
};

// A component file's flag and config key, and its field in engine::ComponentFiles.
struct ComponentFlag {
  const char* flag;  // "dit", "text-encoder", "vae" (as --FLAG)
  const char* key;   // "dit", "text_encoder", "vae" (the config file's)
  std::filesystem::path engine::ComponentFiles::*file;
};
inline constexpr ComponentFlag kComponentFlags[] = {{"dit", "dit", &engine::ComponentFiles::dit},
                                                    {"text-encoder", "text_encoder", &engine::ComponentFiles::text_encoder},
                                                    {"vae", "vae", &engine::ComponentFiles::vae}};

// read_component_flags: --dit, --text-encoder and --vae from `a` into `files` (absolute).
// check_component_files: with `model` (the --model DIR, perhaps empty), each file given must be a
// regular file, and without a model all three must be given. Throws common::UsageError naming the flag
// and the file.
void read_component_flags(const common::Arguments& a, engine::ComponentFiles& files);
void check_component_files(const engine::ComponentFiles& files, const std::filesystem::path& model);
// `message` (an engine error) with "--FLAG: " before it when it names one of the component files (by
// its name) and does not begin with the flag already: the engine names the file, the user typed the flag.
std::string name_component_flag(const std::string& message, const engine::ComponentFiles& files);
// rgbaq's own tokenizer.json (installed beside the binaries, or the source tree's): what a session with
// no model directory tokenizes with (EngineOptions::tokenizer).
std::filesystem::path own_tokenizer();

// The help text for `rgbaqd --help`, flags and config file both.
extern const char* const kDaemonHelp;

// Throws common::UsageError on an unknown flag, a bad value, a missing --model, or a malformed config file
// (naming the file and field). Relative paths become absolute.
DaemonConfig parse_daemon_config(const std::vector<std::string>& args);

// For a --model DIR that holds no model (no model_index.json): how to get one, the tiny test model
// and the real weights; "" when DIR has one (its problem is another, named by the check).
std::string how_to_get_a_model(const std::filesystem::path& dir);

// "--gpu-memory 22.5" -> 22.5 (GiB); throws common::UsageError for anything but a non-negative number.
double parse_gpu_memory(const std::string& text);

inline constexpr int kMostWorkers = 64;  // render workers in one daemon, --devices and --workers alike

// "0,2,3" -> {0, 2, 3} (repeats kept); "all" or "" -> nullopt (every visible device). Throws
// common::UsageError naming the text for anything else, or more than kMostWorkers devices.
std::optional<std::vector<int>> parse_device_list(const std::string& text);

}  // namespace rgbaq::daemon
