// The image APIs other tools speak: OpenAI's POST /v1/images/generations and AUTOMATIC1111's
// POST /sdapi/v1/txt2img (with the GETs their clients probe first). Both go through the durable queue:
// the request becomes a run at high priority with its outputs in DATA_DIR/api-renders, the answer
// waits for its jobs, then carries the PNGs as written (metadata and all). A crash meanwhile loses
// nothing, and a client that hangs up leaves its run to finish (it is in `rgbaq ls runs`).
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "daemon/http/http_api.h"
#include "daemon/protocol.h"
#include "storage/png_file.h"

namespace rgbaq::daemon::http {
namespace {

using nlohmann::json;
namespace ec = protocol::error_code;

constexpr int kApiPriority = 1000;      // ahead of batch runs (default 0): someone waits for these
constexpr int kMaxImagesPerRequest = 16;
constexpr auto kPollInterval = std::chrono::milliseconds(200);

std::string base64(const std::string& bytes) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = static_cast<uint8_t>(bytes[i]) << 16 | static_cast<uint8_t>(bytes[i + 1]) << 8 | static_cast<uint8_t>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += table[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? table[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

uint64_t random_seed() {
  std::random_device device;
  return device();  // 32 bits, as A1111's seeds
}

int64_t int_field(const json& body, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) throw RequestError(ec::kBadRequest, std::string("\"") + key + "\" must be an integer");
  const auto v = it->get<int64_t>();
  if (v < lo || v > hi) {
    throw RequestError(ec::kBadRequest, std::string("\"") + key + "\" is " + it->dump() + "; it must be from " + std::to_string(lo) +
                                            " to " + std::to_string(hi));
  }
  return v;
}

std::string text_field(const json& body, const char* key, const std::string& fallback) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_string()) throw RequestError(ec::kBadRequest, std::string("\"") + key + "\" must be a string");
  return it->get<std::string>();
}

struct Generation {
  std::string api;  // "openai" | "a1111": the run's name
  std::string prompt;
  uint64_t seed = 0;
  int count = 1;
  int width = 0, height = 0;
};

// A finished generation: its jobs (with metadata) and their PNG files' bytes, in seed order.
struct Generated {
  int64_t run = 0;
  std::vector<json> jobs;
  std::vector<std::string> pngs;
  std::vector<std::string> parameters;  // each PNG's A1111 `parameters` text
};

using Finish = std::function<Response(const Generated&)>;

void wait_for_run(const std::shared_ptr<RouteCall>& call, int64_t run, int count, Finish finish);

// Queues the generation as a run (bulk lane), waits for its jobs (quick lane, every kPollInterval), reads
// the PNGs (media lane) and answers with `finish`.
void generate(const std::shared_ptr<RouteCall>& call, const Generation& g, Finish finish) {
  if (g.prompt.find_first_not_of(" \t\r\n") == std::string::npos) throw RequestError(ec::kBadRequest, "\"prompt\" is required");
  json row = {{"prompt", g.prompt},
              {"seed", g.count == 1 ? std::to_string(g.seed) : std::to_string(g.seed) + "-" + std::to_string(g.seed + g.count - 1)},
              {"size", std::to_string(g.width) + "x" + std::to_string(g.height)}};
  const json params = {{"file", row.dump() + "\n"},
                       {"format", "jsonl"},
                       {"file_name", g.api},
                       {"name", g.api},
                       {"out_dir", call->context.config.api_renders_dir().string()},
                       {"defaults", {{"priority", kApiPriority}}}};
  const int count = g.count;
  boost::asio::post(call->context.lanes.bulk.executor, [call, params, count, finish = std::move(finish)] {
    try {
      const json result = call->context.lanes.bulk.handler.handle("submit", params);
      if (!result["run"].is_number_integer()) throw RequestError(ec::kInternal, "the submit queued no run");
      wait_for_run(call, result["run"].get<int64_t>(), count, finish);
    } catch (const std::exception& e) {
      call->respond_exception(e);
    }
  });
}

void wait_for_run(const std::shared_ptr<RouteCall>& call, int64_t run, int count, Finish finish) {
  auto timer = std::make_shared<boost::asio::steady_timer>(call->context.lanes.quick.executor, kPollInterval);
  timer->async_wait([call, run, count, finish = std::move(finish), timer](const boost::system::error_code& error) mutable {
    if (error || call->exchange()->hung_up()) return;  // nobody is left to answer
    try {
      if (call->context.state.stopping()) {
        throw RequestError("unavailable", "rgbaqd is stopping; run " + std::to_string(run) + " stays queued and finishes after its restart");
      }
      const json listed = call->context.lanes.quick.handler.handle("ls_jobs", {{"run", run}, {"limit", count}});
      bool finished = true;
      for (const auto& j : listed["jobs"]) {
        const std::string state = j.value("state", "");
        if (state == "failed") {
          throw RequestError(ec::kInternal, "job " + std::to_string(j.value("id", 0)) + " of run " + std::to_string(run) +
                                                " failed: " + j.value("error", ""));
        }
        if (state == "canceled") throw RequestError("conflict", "run " + std::to_string(run) + " was canceled");
        finished = finished && state == "done";
      }
      if (!finished || static_cast<int>(listed["jobs"].size()) < count) return wait_for_run(call, run, count, std::move(finish));
      boost::asio::post(call->context.lanes.media.executor, [call, run, listed, finish = std::move(finish)] {
        try {
          Generated g;
          g.run = run;
          for (const auto& j : listed["jobs"]) {
            auto& h = call->context.lanes.media.handler;
            g.jobs.push_back(h.handle("show_job", {{"job", j["id"]}}));
            const auto png = served_job_output(h, j["id"].get<int64_t>());
            g.pngs.push_back(png->read());
            g.parameters.push_back(storage::read_png_bytes(g.pngs.back(), png->path(), false).texts["parameters"]);
          }
          call->respond(finish(g));
        } catch (const std::exception& e) {
          call->respond_exception(e);
        }
      });
    } catch (const std::exception& e) {
      call->respond_exception(e);
    }
  });
}

// "1024x768" -> {1024, 768}; "auto" -> the model's native 1024x1024.
std::pair<int, int> openai_size(const std::string& size) {
  if (size == "auto" || size.empty()) return {1024, 1024};
  const auto x = size.find('x');
  try {
    size_t used_w = 0, used_h = 0;
    const int w = std::stoi(size.substr(0, x), &used_w);
    const std::string h_text = x == std::string::npos ? "" : size.substr(x + 1);
    const int h = std::stoi(h_text, &used_h);
    if (used_w == x && used_h == h_text.size()) return {w, h};
  } catch (const std::exception&) {
  }
  throw RequestError(ec::kBadRequest, "\"size\" \"" + size + "\" is not WIDTHxHEIGHT (e.g. 1024x1024) nor auto");
}

std::string model_hash(const HttpContext& c) { return c.model_identity.substr(0, 10); }

}  // namespace

void route_openai_generate(const std::shared_ptr<RouteCall>& call) {
  const json body = call->json_body();
  Generation g;
  g.api = "openai";
  g.prompt = text_field(body, "prompt", "");
  g.count = static_cast<int>(int_field(body, "n", 1, 1, kMaxImagesPerRequest));
  std::tie(g.width, g.height) = openai_size(text_field(body, "size", "auto"));
  g.seed = body.contains("seed") && !body["seed"].is_null()
               ? static_cast<uint64_t>(int_field(body, "seed", 0, 0, std::numeric_limits<int64_t>::max() - kMaxImagesPerRequest))
               : random_seed();
  const std::string format = text_field(body, "response_format", "b64_json");
  if (format != "b64_json" && format != "url") throw RequestError(ec::kBadRequest, "\"response_format\" must be b64_json or url");
  const std::string base = call->context.base_url;
  generate(call, g, [call, format, base](const Generated& done) {
    json data = json::array();
    json ids = json::array(), seeds = json::array();
    for (size_t i = 0; i < done.jobs.size(); ++i) {
      const int64_t id = done.jobs[i].value("id", 0);
      if (format == "url") {
        data.push_back({{"url", base + "/api/v1/jobs/" + std::to_string(id) + "/image"}, {"revised_prompt", done.jobs[i]["prompt"]}});
      } else {
        data.push_back({{"b64_json", base64(done.pngs[i])}, {"revised_prompt", done.jobs[i]["prompt"]}});
      }
      ids.push_back(id);
      seeds.push_back(done.jobs[i]["seed"]);
    }
    const auto created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    return call->make_response(beast_http::status::ok, "application/json",
                               json({{"created", created}, {"data", data}, {"output_format", "png"},
                                     {"rgbaq", {{"run", done.run}, {"jobs", ids}, {"seeds", seeds}}}}).dump() + "\n");
  });
}

void route_openai_models(const std::shared_ptr<RouteCall>& call) {
  call->respond_json({{"object", "list"},
                      {"data", json::array({{{"id", call->context.model_name}, {"object", "model"}, {"created", 0},
                                             {"owned_by", "rgbaq"}}})}});
}

void route_a1111_txt2img(const std::shared_ptr<RouteCall>& call) {
  const json body = call->json_body();
  Generation g;
  g.api = "a1111";
  g.prompt = text_field(body, "prompt", "");
  g.width = static_cast<int>(int_field(body, "width", 512, 1, 1 << 14));
  g.height = static_cast<int>(int_field(body, "height", 512, 1, 1 << 14));
  const auto batch = int_field(body, "batch_size", 1, 1, kMaxImagesPerRequest);
  const auto iterations = int_field(body, "n_iter", 1, 1, kMaxImagesPerRequest);
  if (batch * iterations > kMaxImagesPerRequest) {
    throw RequestError(ec::kBadRequest, "batch_size x n_iter is " + std::to_string(batch * iterations) + "; at most " +
                                            std::to_string(kMaxImagesPerRequest) + " images in one request");
  }
  g.count = static_cast<int>(batch * iterations);
  const int64_t seed = int_field(body, "seed", -1, -1, (int64_t{1} << 32) - 1);
  g.seed = seed < 0 ? random_seed() : static_cast<uint64_t>(seed);
  // What this model does not use, said back in `info` rather than silently dropped.
  json not_used = json::array();
  for (const char* key : {"negative_prompt", "steps", "cfg_scale", "sampler_name", "sampler_index", "scheduler", "restore_faces",
                          "tiling", "enable_hr", "denoising_strength", "styles", "subseed", "subseed_strength"}) {
    if (body.contains(key)) not_used.push_back(key);
  }
  HttpContext& c = call->context;
  generate(call, g, [call, body, g, not_used, &c](const Generated& done) {
    json images = json::array(), seeds = json::array(), prompts = json::array(), infotexts = json::array(), ids = json::array();
    for (size_t i = 0; i < done.jobs.size(); ++i) {
      images.push_back(base64(done.pngs[i]));
      seeds.push_back(done.jobs[i]["seed"]);
      prompts.push_back(done.jobs[i]["prompt"]);
      ids.push_back(done.jobs[i]["id"]);
      infotexts.push_back(done.parameters[i]);
    }
    const json info = {{"prompt", g.prompt},
                       {"all_prompts", prompts},
                       {"negative_prompt", body.value("negative_prompt", "")},
                       {"seed", g.seed},
                       {"all_seeds", seeds},
                       {"subseed", -1},
                       {"width", g.width},
                       {"height", g.height},
                       {"batch_size", body.value("batch_size", 1)},
                       {"steps", 8},
                       {"sd_model_name", c.model_name},
                       {"sd_model_hash", model_hash(c)},
                       {"infotexts", infotexts},
                       {"rgbaq", {{"run", done.run}, {"jobs", ids}, {"not_used_by_this_model", not_used}}}};
    return call->make_response(beast_http::status::ok, "application/json",
                               json({{"images", images}, {"parameters", body}, {"info", info.dump()}}).dump() + "\n");
  });
}

void route_a1111_models(const std::shared_ptr<RouteCall>& call) {
  const auto& c = call->context;
  call->respond_json(json::array({{{"title", c.model_name + " [" + model_hash(c) + "]"},
                                   {"model_name", c.model_name},
                                   {"hash", model_hash(c)},
                                   {"sha256", c.model_identity},
                                   {"filename", c.model_name},
                                   {"config", nullptr}}}));
}

void route_a1111_options(const std::shared_ptr<RouteCall>& call) {
  const auto& c = call->context;
  call->respond_json({{"sd_model_checkpoint", c.model_name + " [" + model_hash(c) + "]"},
                      {"sd_checkpoint_hash", c.model_identity},
                      {"samples_format", "png"}});
}

void route_a1111_progress(const std::shared_ptr<RouteCall>& call) {
  call->on_lane(call->context.lanes.quick, [](RequestHandler& h) {
    const json s = h.handle("status", json::object());
    const json current = s.value("current", json(nullptr));
    const int step = current.is_object() ? current.value("step", 0) : 0;
    const int steps = current.is_object() ? current.value("steps", 0) : 0;
    const json counts = s.value("jobs", json(nullptr));
    const int64_t waiting = counts.is_object() ? counts.value("queued", int64_t{0}) + counts.value("running", int64_t{0}) : 0;
    return json({{"progress", steps > 0 ? static_cast<double>(step) / steps : 0.0},
                 {"eta_relative", 0.0},
                 {"state", {{"skipped", false}, {"interrupted", false}, {"job", current.is_object() ? std::to_string(current.value("job", 0)) : ""},
                            {"job_count", waiting}, {"job_timestamp", "0"}, {"job_no", 0}, {"sampling_step", step},
                            {"sampling_steps", steps}}},
                 {"current_image", nullptr},
                 {"textinfo", nullptr}});
  });
}

}  // namespace rgbaq::daemon::http
