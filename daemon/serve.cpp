#include "daemon/serve.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#ifdef __linux__
#include <malloc.h>
#endif
#include <thread>

#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including <utility>

#include <boost/asio.hpp>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/arguments.h"
#include "common/printable_text.h"
#include "daemon/worker/crash_record.h"
#include "daemon/base/daemon_config.h"
#include "daemon/data_dir_lock.h"
#include "daemon/base/daemon_state.h"
#include "daemon/base/render_record.h"
#include "daemon/base/event_hub.h"
#include "daemon/http/http_api.h"
#include "daemon/http/http_server.h"
#include "daemon/http/thumbnails.h"
#include "daemon/base/private_files.h"
#include "daemon/base/service_notify.h"
#include "daemon/hooks/run_hook_runner.h"
#include "daemon/hooks/webhook_sender.h"
#include "daemon/socket/listen_socket.h"
#include "daemon/worker/pending_outputs.h"
#include "daemon/worker/remote_progress.h"
#include "daemon/worker/render_worker.h"
#include "daemon/api/request_handler.h"
#include "daemon/socket/socket_server.h"
#include "daemon/worker/shared_encoder_cache.h"
#include "daemon/worker/stale_temporaries.h"
#include "daemon/worker/worker_heartbeat.h"
#include "daemon/worker/worker_plan.h"
#include "engine/backend_registry.h"
#include "engine/model/hf_cache.h"
#include "engine/model/model_directory.h"
#include "engine/model/model_identity.h"
#include "engine/render_memory.h"
#include "storage/open_queue_store.h"

namespace rgbaq::daemon {
namespace {

namespace asio = boost::asio;

// A log line's message with its control characters escaped (common/printable_text.h): text from a
// client or a file in it (an output path, a LoRA key, a prompt) can neither drive the terminal that
// shows the log nor forge a line of it.
class PrintableMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string text = common::printable(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<PrintableMessage>(); }
};

void setup_logging(const DaemonConfig& c) {
  std::filesystem::create_directories(c.log_file().parent_path());
  auto file = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(c.log_file().string(), 10u << 20, 3);
  auto err = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("rgbaqd", spdlog::sinks_init_list{file, err});
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<PrintableMessage>('*').set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%^%l%$] %*");  // spdlog's own, %v escaped
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::from_str(c.log_level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

// What each cpu worker's session adds at the largest size (1024x1024): its copies of weights and its
// work buffers; 0 when no worker runs on the cpu.
uint64_t cpu_session_bytes(const DaemonConfig& config, const std::vector<WorkerPlan>& plans) {
  for (const auto& p : plans) {
    if (p.options.backend != "cpu") continue;
    for (const auto& m : engine::estimate_render_memory(engine::ModelDirectory::open(config.model_dir, config.components, p.options.tokenizer),
                                                        p.options.threads)) {
      if (m.engine == "cpu" && m.size == 1024) return m.per_session();
    }
  }
  return 0;
}

// The device's memory now; for tests, RGBAQ_TEST_MEMORY_AVAILABLE_MB stands for the machine's.
engine::DeviceMemory memory_of(const WorkerPlan& plan) {
  const char* test = std::getenv("RGBAQ_TEST_MEMORY_AVAILABLE_MB");
  if (test && plan.options.backend == "cpu") {
    const uint64_t bytes = std::strtoull(test, nullptr, 10) << 20;
    return {bytes, bytes};
  }
  return engine::resolve_backend(plan.options).device_memory(plan.options.backend == "cpu" ? 0 : plan.options.device);
}

// The plan's session, with its largest render's buffers allocated: one that cannot hold them refuses
// the start (MemoryDoesNotFit), naming its device.
std::unique_ptr<engine::Session> open_worker_session(const DaemonConfig& config, const WorkerPlan& plan, size_t on_device) {
  std::unique_ptr<engine::Session> session = engine::Session::open(config.model_dir, plan.options);
  try {
    reserve_largest_render(*session);
  } catch (const engine::DeviceFault& e) {
    if (e.kind() != engine::DeviceFaultKind::kOutOfMemory) throw;
    throw MemoryDoesNotFit(plan.device + ": worker " + std::to_string(plan.index) + " (" + std::to_string(on_device) +
                           " on this device) cannot hold the largest render (1024x1024): " + e.what() +
                           "; list the device fewer times in --devices or give it more --gpu-memory");
  }
  return session;
}

}  // namespace

int run_serve_command(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kDaemonHelp;
      return 0;
    }
  }
  DaemonConfig config;
  try {
    config = parse_daemon_config(args);
  } catch (const common::UsageError& e) {
    std::cerr << "rgbaqd: " << e.what() << "\n(see rgbaqd --help)\n";
    return 2;
  }
  // Before any thread or file: the data directory's files are private; outputs keep the user's umask.
  make_created_files_private();
  std::optional<boost::asio::ip::tcp::endpoint> http_endpoint;
  if (config.http_enabled()) {
    try {
      http_endpoint = http::parse_http_address(config.http);
    } catch (const std::invalid_argument& e) {
      std::cerr << "rgbaqd: --http " << e.what() << "\n(see rgbaqd --help)\n";
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the daemon
#ifdef __GLIBC__
  // A fixed threshold (glibc raises it after each large free otherwise): a client's big request line
  // lives in its own mapping, and its memory goes back to the system when the line is done with.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
#endif

  int listen_fd = -1;
  bool bound_here = false;
  std::vector<WorkerPlan> plans;
  std::vector<std::unique_ptr<engine::Session>> sessions;  // one per render worker, in plan order
  std::string identity;
  std::unique_ptr<DataDirLock> data_dir_lock;  // held until the process ends
  storage::WorkerInfo me;
  std::vector<std::filesystem::path> stale_folders;  // scanned in the background once the daemon answers
  std::filesystem::file_time_type stale_before;
  try {
    setup_logging(config);
    make_data_dir_private(config.data_dir);  // one from before, 0755 with 0644 files, is tightened (logged)
    spdlog::info("rgbaqd {} starting: model {}, engine {}, data {}", storage::kRgbaqVersion, config.model_dir.string(),
                 config.engine, config.data_dir.string());
    for (const auto& f : kComponentFlags) {
      if (!(config.components.*f.file).empty()) spdlog::info("{}: {}", f.key, (config.components.*f.file).string());
    }
    if (const auto fd = activated_listen_socket()) {
      listen_fd = *fd;
      spdlog::info("using the socket the service manager opened");
    } else {
      listen_fd = open_listen_socket(config.socket_path);  // first: a second daemon is refused at once
      bound_here = true;
      spdlog::info("listening on {}", config.socket_path.string());
    }
    data_dir_lock = std::make_unique<DataDirLock>(config.data_dir);
    try {
      plans = plan_workers(config);
      share_device_memory(plans, cpu_session_bytes(config, plans), memory_of);
      for (const auto& plan : plans) {
        const auto on_device = std::count_if(plans.begin(), plans.end(), [&](const WorkerPlan& p) { return p.device == plan.device; });
        sessions.push_back(open_worker_session(config, plan, static_cast<size_t>(on_device)));
        spdlog::info("worker {}: engine {} on {}", plan.index, sessions.back()->backend_name(), sessions.back()->device_description());
      }
      for (const auto& note : sessions.front()->model_notes()) spdlog::info("model: {}", note);
    } catch (const std::exception& e) {
      // --engine cuda on a machine without a device, devices that are not there, workers that do not
      // fit their device, a model directory it cannot use: usage or bad input, not a failure of the daemon.
      // A component file it cannot use (named by the engine) is bad input too.
      const std::string message = name_component_flag(e.what(), config.components);
      const bool usage = dynamic_cast<const engine::BackendUnavailable*>(&e) || dynamic_cast<const common::UsageError*>(&e) ||
                         dynamic_cast<const MemoryDoesNotFit*>(&e) || dynamic_cast<const engine::InvalidModel*>(&e) ||
                         message != e.what();
      if (!usage) throw;
      spdlog::error("cannot start: {}", message);
      const std::string hint = message == e.what() ? how_to_get_a_model(config.model_dir) : "";
      std::cerr << "rgbaqd: " << message << (hint.empty() ? "" : "\n" + hint) << "\n";
      if (bound_here) unlink(config.socket_path.c_str());
      return 2;
    }
    identity = engine::model_identity(config.model_dir, config.components, config.engine_options().tokenizer) + engine::random_weights_mark(config.engine_options());
    const auto store = storage::open_queue_store(config.queue_url(), config.store_options());
    spdlog::info("queue {}", store->location());
    me = this_worker(config, sessions.front()->backend_name(), sessions.front()->device_description());
    // This host's dead workers (an earlier run of this daemon) give their jobs back now; other hosts'
    // only when their leases run out.
    expire_dead_local_workers(*store, me);
    const auto recovered = store->recover(take_crash_record(config.data_dir));
    if (recovered.requeued || recovered.failed) {
      spdlog::info("recovered after a stop: {} job(s) back in the queue, {} failed after too many interruptions",
                   recovered.requeued, recovered.failed);
    }
    // Before the stale temporaries go: a PNG recorded done when a crash came, not yet in place.
    settle_pending_outputs(*store, config.pending_outputs_dir());
    stale_folders = unfinished_output_folders(store->list_runs());
    // A temporary written since this start is a live writer's; on a shared queue the folder is shared
    // too, and another host may be writing one right now: only old ones go there.
    const bool shared_queue = storage::parse_queue_url(config.queue_url()).kind == storage::QueueKind::kPostgres;
    stale_before = std::filesystem::file_time_type::clock::now() - (shared_queue ? std::chrono::minutes(10) : std::chrono::minutes(0));
  } catch (const std::exception& e) {
    spdlog::error("cannot start: {}", e.what());
    std::cerr << "rgbaqd: " << e.what() << "\n";
    if (bound_here) unlink(config.socket_path.c_str());
    return 1;
  }

  // Declared in the order they depend on each other, so they are destroyed the other way round: the
  // connections (destroyed with the io_context or a request lane) still find the hub and the handlers.
  DaemonState state;
  std::vector<const std::atomic<int64_t>*> jobs_in_hand;
  for (const auto& plan : plans) jobs_in_hand.push_back(&state.add_worker(plan.index, plan.device).job);
  try {
    install_crash_record(config.data_dir, jobs_in_hand);
  } catch (const std::exception& e) {
    spdlog::error("cannot start: {}", e.what());
    if (bound_here) unlink(config.socket_path.c_str());
    return 1;
  }
  EventHub events;
  SharedEncoderCache encoder_cache(
      engine::text_encoder_identity(config.model_dir, config.components) + engine::random_weights_mark(config.engine_options()) +
          sessions.front()->embedding_mark(),
      config.encoder_cache_mb << 20, config.cache_dir(), config.encoder_cache_disk_bytes(), state.counters);
  // Submits tokenize with the first session's tokenizer, which a reopen of its backend leaves alone.
  RequestHandler quick_handler(config, *sessions.front(), identity, state);
  RequestHandler bulk_handler(config, *sessions.front(), identity, state);
  asio::io_context io;
  asio::thread_pool quick_lane(1), bulk_lane(1);
  const ServerLimits limits{.max_frame_bytes = config.max_frame_mb << 20,
                            .max_output_bytes = config.client_queue_kb << 10,
                            .frame_timeout = std::chrono::seconds(config.frame_timeout_s),
                            .max_connections = config.max_connections};
  SocketServer server(io, listen_fd, {quick_handler, quick_lane.get_executor()}, {bulk_handler, bulk_lane.get_executor()},
                      events, limits);
  spdlog::info("serving at most {} connections, request lines up to {} MiB", server.connection_limit(), config.max_frame_mb);
  server.start();

  // HTTP: its own thread, its own lanes (so neither transport's long request delays the other's).
  asio::io_context http_io;
  std::unique_ptr<RequestHandler> http_quick, http_bulk, http_media;
  asio::thread_pool http_quick_lane(1), http_bulk_lane(1), http_media_lane(1);
  std::unique_ptr<http::HttpGuard> http_guard;
  std::unique_ptr<http::ThumbnailCache> thumbnails;
  std::unique_ptr<http::HttpContext> http_context;
  std::unique_ptr<http::HttpApi> http_api;
  std::unique_ptr<http::HttpServer> http_server;
  if (http_endpoint) {
    try {
      const auto token = http::load_or_create_http_token(config.http_token_file());
      std::filesystem::create_directories(config.api_renders_dir());
      http_quick = std::make_unique<RequestHandler>(config, *sessions.front(), identity, state);
      http_bulk = std::make_unique<RequestHandler>(config, *sessions.front(), identity, state);
      http_media = std::make_unique<RequestHandler>(config, *sessions.front(), identity, state);
      thumbnails = std::make_unique<http::ThumbnailCache>(config.thumbnail_dir(), uint64_t{config.thumbnail_cache_mb} << 20);
      const auto listen = [&](const boost::asio::ip::tcp::endpoint& endpoint) {
        return std::make_unique<http::HttpServer>(
            http_io, endpoint, [&](const http::Request& header) { return http_api->screen(header); },
            [&](const std::shared_ptr<http::HttpExchange>& e) { http_api->handle(e); },
            http::HttpLimits{.max_body_bytes = config.max_frame_mb << 20,
                             .timeout = std::chrono::seconds(config.frame_timeout_s),
                             .max_connections = std::min(config.max_connections, std::max(1, server.connection_limit())),
                             .max_stream_bytes = config.client_queue_kb << 10});
      };
      try {
        http_server = listen(*http_endpoint);
      } catch (const http::HttpBindError& e) {
        // The default address, taken (another rgbaqd on this host, another user's): a free port of the
        // same address instead, which `rgbaq http-url` and the data directory's http-url name. An address
        // given on purpose stays fatal.
        if (!e.in_use() || config.http_given) throw;
        http_server = listen({http_endpoint->address(), 0});
        spdlog::warn("HTTP: {}:{} is taken (another rgbaqd?); serving on port {} instead (rgbaq http-url names it)",
                     http_endpoint->address().to_string(), http_endpoint->port(), http_server->local_endpoint().port());
      }
      const auto bound = http_server->local_endpoint();
      const std::string port = std::to_string(bound.port());
      std::vector<std::string> hosts;
      const auto& address = bound.address();
      if (address.is_loopback() || address.is_unspecified()) {
        hosts = {"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port};
      } else {
        hosts = {(address.is_v6() ? "[" + address.to_string() + "]" : address.to_string()) + ":" + port};
      }
      for (const auto& h : config.http_hosts) {
        hosts.push_back(h);
        if (h.find(':') == std::string::npos) hosts.push_back(h + ":" + port);
      }
      if (!address.is_loopback()) {
        std::string names;
        for (const auto& h : hosts) names += (names.empty() ? "" : ", ") + h;
        spdlog::warn("HTTP listens on {}, not on loopback: anyone who can reach it and holds the token can use the queue. "
                     "rgbaqd speaks plain HTTP: put TLS in front of it (a reverse proxy). Host names answered: {}",
                     address.to_string() + ":" + port, names);
      }
      http_guard = std::make_unique<http::HttpGuard>(token, hosts, config.http_cors);
      http_context = std::make_unique<http::HttpContext>(http::HttpContext{
          .config = config,
          .lanes = {{*http_quick, http_quick_lane.get_executor()}, {*http_bulk, http_bulk_lane.get_executor()},
                    {*http_media, http_media_lane.get_executor()}},
          .events = events,
          .state = state,
          .guard = *http_guard,
          .thumbnails = *thumbnails,
          .base_url = "http://" + hosts.front(),
          .model_name = config.model_dir.empty() ? config.components.dit.stem().string() : engine::model_folder_name(config.model_dir),
          .model_identity = identity});
      http_api = std::make_unique<http::HttpApi>(*http_context);
      state.http_url = http_context->base_url;
      write_private_file(config.http_url_file(), state.http_url + "\n");  // for scripts; rgbaq asks the daemon
      http_server->start();
      spdlog::info("HTTP on {} (token in {})", state.http_url, config.http_token_file().string());
    } catch (const std::exception& e) {
      spdlog::error("cannot start: {}", e.what());
      std::cerr << "rgbaqd: " << e.what() << "\n";
      state.request_stop();
      server.stop();
      if (bound_here) unlink(config.socket_path.c_str());
      return 1;
    }
  }
  std::thread http_thread;
  // SIGHUP too: a daemon started from a terminal that closes, or a reload by a service manager, stops
  // cleanly (the job in hand goes back to the queue unpunished) rather than dying mid-step.
  asio::signal_set signals(io, SIGTERM, SIGINT, SIGHUP);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    spdlog::info("signal {}: stopping", signo);
    sd_notify("STOPPING=1");
    state.request_stop();
    server.stop();
    if (http_server) asio::post(http_io, [&] { http_server->stop(); });
  });
  // The systemd watchdog, when the unit asks for one: pet it at half the interval.
  asio::steady_timer watchdog(io);
  std::function<void()> pet;
  if (const char* usec = std::getenv("WATCHDOG_USEC"); usec && std::atoll(usec) > 0) {
    const auto interval = std::chrono::microseconds(std::atoll(usec) / 2);
    pet = [&, interval] {
      sd_notify("WATCHDOG=1");
      watchdog.expires_after(interval);
      watchdog.async_wait([&](const boost::system::error_code& ec) {
        if (!ec) pet();
      });
    };
    pet();
  }
  const auto start_io = [&] {
    return std::thread([&] {
      pthread_setname_np(pthread_self(), "rgbaqd-io");  // tests measure this thread's CPU time by name
      io.run();
    });
  };
  std::thread io_thread;
  std::thread stale_scan;

  std::atomic<int> code = 0;
  try {
    RemoteProgress remote_progress(config, events, state);  // other workers' steps, for watchers
    std::vector<std::unique_ptr<RenderWorker>> workers;
    const nlohmann::json components = describe_component_files(config.components);
    for (size_t i = 0; i < plans.size(); ++i) {
      workers.push_back(std::make_unique<RenderWorker>(config, *sessions[i], identity, components, state, *state.workers()[i], events,
                                                       encoder_cache,
                                                       this_worker(config, sessions[i]->backend_name(), sessions[i]->device_description())));
    }
    // Run ends' hooks and webhooks (daemon/hooks/), claimed under a render worker's registration in the
    // queue, which lives as long as the daemon does.
    const auto registration = [&state] {
      for (const auto& w : state.workers()) {
        if (!w->out_of_service() && w->queue_id.load() != 0) return w->queue_id.load();
      }
      return int64_t{0};
    };
    std::unique_ptr<hooks::RunHookRunner> hook_runner;
    std::unique_ptr<hooks::WebhookSender> webhook_sender;
    if (!config.on_run_done.empty()) {
      hook_runner = std::make_unique<hooks::RunHookRunner>(config, events, registration);
      spdlog::info("each run end runs the hook (--on-run-done, {} s limit)", config.hook_timeout_s);
    }
    if (!config.webhook.empty()) {
      webhook_sender = std::make_unique<hooks::WebhookSender>(config, events, registration);
      spdlog::info("each run end is POSTed to the webhook (--webhook), signed with the key in {}",
                   config.webhook_secret_file().string());
    }
    // Ready, and answering, once the workers' own connections to the queue are open: a client that has
    // its first reply (a test that then locks the database) cannot catch a worker still opening them.
    io_thread = start_io();
    if (http_server) {
      http_thread = std::thread([&] {
        pthread_setname_np(pthread_self(), "rgbaqd-http");
        http_io.run();
      });
    }
    sd_notify("READY=1");
    spdlog::info("ready: {} render worker{}", workers.size(), workers.size() == 1 ? "" : "s");
    stale_scan = std::thread([&] {
      pthread_setname_np(pthread_self(), "rgbaqd-scan");
      const StaleScan scan = remove_stale_temporaries(stale_folders, stale_before, state);
      spdlog::info("scanned {} output folder{} of unfinished runs for stale temporary files: {} removed", scan.folders,
                   scan.folders == 1 ? "" : "s", scan.removed);
    });
    std::vector<std::thread> threads;
    for (size_t i = 0; i < workers.size(); ++i) {
      threads.emplace_back([&, i] {
        pthread_setname_np(pthread_self(), ("rgbaqd-w" + std::to_string(i)).c_str());
        try {
          workers[i]->run();
        } catch (const std::exception& e) {
          // A queue that keeps failing: the daemon stops, so a service manager restarts it.
          spdlog::critical("worker {} stopped: {}", i, e.what());
          std::cerr << "rgbaqd: stopping: " << e.what() << "\n";
          code = 1;
          state.request_stop();
        }
        const bool none_left = std::all_of(state.workers().begin(), state.workers().end(),
                                           [](const auto& w) { return w->out_of_service().has_value(); });
        if (none_left && !state.stopping()) {
          spdlog::critical("every render worker is out of service: stopping");
          std::cerr << "rgbaqd: stopping: every render worker is out of service (see the log)\n";
          code = 1;
          state.request_stop();
        }
      });
    }
    for (auto& t : threads) t.join();
  } catch (const std::exception& e) {
    spdlog::critical("the workers stopped: {}", e.what());
    std::cerr << "rgbaqd: stopping: " << e.what() << "\n";
    code = 1;
  }
  if (!io_thread.joinable()) io_thread = start_io();  // to run the stop below
  state.request_stop();
  if (stale_scan.joinable()) stale_scan.join();
  asio::post(io, [&] {
    server.stop();
    signals.cancel();
    watchdog.cancel();
    io.stop();
  });
  io_thread.join();
  if (http_thread.joinable()) {
    asio::post(http_io, [&] {
      http_server->stop();
      http_io.stop();
    });
    http_thread.join();
  }
  http_quick_lane.join();
  http_bulk_lane.join();
  http_media_lane.join();
  if (bound_here) unlink(config.socket_path.c_str());
  spdlog::info("stopped");
  return code.load();
}

}  // namespace rgbaq::daemon
