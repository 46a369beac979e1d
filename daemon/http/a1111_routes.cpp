// AUTOMATIC1111's API as its front ends use it: POST /sdapi/v1/txt2img through the queue (image_apis.h),
// and what they ask at start (models, options, samplers, schedulers, LoRAs, VAEs, upscalers, flags,
// progress, ping) and interrupt. txt2img takes what A1111 takes ("seed": "42", "width": 512.0 as
// pydantic does); a field that would change the picture in a way this model cannot (hires fix, tiling,
// scripts, another checkpoint) is refused with a 422 naming it; one that changes nothing worth refusing
// (steps, cfg_scale, sampler, negative prompt...) is listed in the answer's `warnings`. Errors come in
// A1111's shapes: FastAPI's {"detail": [{"loc", "msg", "type"}]} for a field, A1111's {"error",
// "detail", "body", "errors"} otherwise.
#include <algorithm>
#include <cctype>
#include <set>

#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including <utility>

#include <boost/asio/post.hpp>

#include "common/trusted_folder.h"
#include "daemon/http/http_api.h"
#include "daemon/http/image_apis.h"
#include "daemon/http/image_encoding.h"

namespace rgbaq::daemon::http {
namespace {

using nlohmann::json;

constexpr const char* kSampler = "Euler";       // FlowMatch Euler, as the PNG's parameters say
constexpr const char* kSchedule = "FlowMatch";  // the Turbo model's fixed 8-step grid
constexpr int kSteps = 8;

// StableDiffusionTxt2ImgProcessingAPI's fields (A1111 1.10): one of these that this file does not take
// or warn about by name is listed as not used; any other is listed as unknown.
const std::set<std::string> kKnownFields = {
    "prompt", "negative_prompt", "styles", "seed", "subseed", "subseed_strength", "seed_resize_from_h", "seed_resize_from_w",
    "sampler_name", "sampler_index", "scheduler", "batch_size", "n_iter", "steps", "cfg_scale", "width", "height",
    "restore_faces", "tiling", "do_not_save_samples", "do_not_save_grid", "eta", "denoising_strength", "s_min_uncond",
    "s_churn", "s_tmax", "s_tmin", "s_noise", "override_settings", "override_settings_restore_afterwards",
    "refiner_checkpoint", "refiner_switch_at", "disable_extra_networks", "firstpass_image", "comments", "enable_hr",
    "firstphase_width", "firstphase_height", "hr_scale", "hr_upscaler", "hr_second_pass_steps", "hr_resize_x", "hr_resize_y",
    "hr_checkpoint_name", "hr_sampler_name", "hr_scheduler", "hr_prompt", "hr_negative_prompt", "force_task_id",
    "script_name", "script_args", "send_images", "save_images", "alwayson_scripts", "infotext"};

// Fields that only matter with enable_hr (A1111 ignores them without it too), and ones that never
// change what this daemon does.
const std::set<std::string> kQuietFields = {
    "denoising_strength", "firstphase_width", "firstphase_height", "hr_scale", "hr_upscaler", "hr_second_pass_steps",
    "hr_resize_x", "hr_resize_y", "hr_checkpoint_name", "hr_sampler_name", "hr_scheduler", "hr_prompt", "hr_negative_prompt",
    "override_settings_restore_afterwards", "refiner_switch_at", "subseed"};

Response a1111_error(const RouteCall& call, beast_http::status status, std::string_view code, const std::string& message,
                     const json& details) {
  const std::string field = refused_field(details);
  json body;
  if (status == beast_http::status::bad_request || status == beast_http::status::unprocessable_entity) {
    // As FastAPI answers a request its model refuses.
    status = beast_http::status::unprocessable_entity;
    json loc = json::array({"body"});
    if (!field.empty()) loc.push_back(field);
    body = {{"detail", json::array({{{"loc", loc}, {"msg", message}, {"type", "value_error"}}})}};
  } else {
    body = {{"error", static_cast<int>(status) >= 500 ? "RuntimeError" : "HTTPException"}, {"detail", message}, {"body", ""}, {"errors", message}};
  }
  return call.make_response(status, "application/json", body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool present(const json& body, const char* key) { return body.contains(key) && !body[key].is_null(); }

bool flag(const json& body, const char* key) {
  if (!present(body, key)) return false;
  if (!body[key].is_boolean()) refuse_field(key, std::string("\"") + key + "\" must be true or false");
  return body[key].get<bool>();
}

// A number field's value when it is one; refuses another type.
std::optional<double> number(const json& body, const char* key) {
  if (!present(body, key)) return std::nullopt;
  if (!body[key].is_number()) refuse_field(key, std::string("\"") + key + "\" must be a number");
  return body[key].get<double>();
}

// Whether `name` names this daemon's checkpoint as A1111 lists it ("NAME [HASH]", NAME, HASH, or the
// full SHA-256; ".safetensors" allowed at its end).
bool our_checkpoint(const HttpContext& c, std::string name) {
  if (name.size() > 12 && name.substr(name.size() - 12) == ".safetensors") name.resize(name.size() - 12);
  return name == c.model_name || name == c.model_name + " [" + model_hash(c) + "]" || name == model_hash(c) || name == c.model_identity;
}

// What the body asks that this model cannot do: refused, naming the field; what it cannot honour but
// may ignore: warnings.
json screen_fields(const HttpContext& c, const json& body) {
  const auto refuse_if = [&](bool cond, const char* field, const std::string& why) {
    if (cond) refuse_field(field, std::string(field) + ": " + why, "unprocessable");
  };
  refuse_if(flag(body, "enable_hr"), "enable_hr", "this model has no hires fix; ask for the size you want (up to 1024x1024 in area)");
  refuse_if(flag(body, "tiling"), "tiling", "this model does not render tileable images");
  refuse_if(string_field(body, "script_name").value_or("") != "", "script_name", "rgbaqd runs no A1111 scripts");
  refuse_if(present(body, "script_args") && !(body["script_args"].is_array() && body["script_args"].empty()), "script_args",
            "rgbaqd runs no A1111 scripts");
  if (present(body, "alwayson_scripts")) {
    if (!body["alwayson_scripts"].is_object()) refuse_field("alwayson_scripts", "\"alwayson_scripts\" must be an object", "unprocessable");
    std::string names;
    for (const auto& [name, args] : body["alwayson_scripts"].items()) names += (names.empty() ? "" : ", ") + name;
    refuse_if(!names.empty(), "alwayson_scripts", "rgbaqd runs no A1111 scripts (" + names + ")");
  }
  refuse_if(string_field(body, "refiner_checkpoint").value_or("") != "", "refiner_checkpoint", "this model has no refiner");
  refuse_if(present(body, "firstpass_image"), "firstpass_image", "rgbaqd renders from noise only");

  json warnings = json::array();
  const auto warn = [&](const std::string& text) { warnings.push_back(text); };
  std::set<std::string> handled = {"prompt", "seed", "width", "height", "batch_size", "n_iter", "send_images", "enable_hr", "tiling",
                                   "script_name", "script_args", "alwayson_scripts", "refiner_checkpoint", "firstpass_image"};
  const auto note = [&](const char* key) { handled.insert(key); };
  if (const auto v = string_field(body, "negative_prompt"); v && !v->empty()) warn("negative_prompt: not used; this model takes no negative prompt");
  note("negative_prompt");
  if (present(body, "styles") && !(body["styles"].is_array() && body["styles"].empty())) warn("styles: not used; rgbaqd has no prompt styles");
  note("styles");
  if (const auto v = integer_field(body, "steps", 1, 10000, true); v && *v != kSteps) {
    warn("steps " + std::to_string(*v) + ": not used; this model always takes " + std::to_string(kSteps));
  }
  note("steps");
  if (const auto v = number(body, "cfg_scale"); v && *v != 1.0) warn("cfg_scale " + body["cfg_scale"].dump() + ": not used; this model takes no CFG (1)");
  note("cfg_scale");
  for (const char* key : {"sampler_name", "sampler_index"}) {
    if (const auto v = string_field(body, key); v && !v->empty() && lower(*v) != lower(kSampler)) {
      warn(std::string(key) + " \"" + *v + "\": not used; this model's one sampler is " + kSampler + " (" + kSchedule + ")");
    }
    note(key);
  }
  if (const auto v = string_field(body, "scheduler"); v && !v->empty() && lower(*v) != "automatic" && lower(*v) != lower(kSchedule)) {
    warn("scheduler \"" + *v + "\": not used; this model's schedule is its fixed " + kSchedule + " grid");
  }
  note("scheduler");
  if (number(body, "subseed_strength").value_or(0) != 0) warn("subseed_strength: not used; no variation seeds here");
  note("subseed_strength");
  for (const char* key : {"seed_resize_from_h", "seed_resize_from_w"}) {
    if (number(body, key).value_or(0) > 0) warn(std::string(key) + ": not used");
    note(key);
  }
  if (flag(body, "restore_faces")) warn("restore_faces: not used; rgbaqd has no face restoration");
  note("restore_faces");
  const bool kept = present(body, "save_images") ? flag(body, "save_images") : true;
  if (!kept || flag(body, "do_not_save_samples")) warn("save_images: rgbaqd keeps every image it renders (DATA_DIR/api-renders; rgbaq rm RUN --delete-images)");
  for (const char* key : {"save_images", "do_not_save_samples", "do_not_save_grid"}) note(key);
  // Sampler tuning, not used by FlowMatch Euler: quiet at A1111's defaults.
  for (const auto& [key, neutral] : std::vector<std::pair<const char*, double>>{
           {"eta", 0}, {"s_min_uncond", 0}, {"s_churn", 0}, {"s_tmax", 0}, {"s_tmin", 0}, {"s_noise", 1}}) {
    if (const auto v = number(body, key); v && *v != neutral) warn(std::string(key) + ": not used by this model's sampler");
    note(key);
  }
  if (present(body, "override_settings")) {
    if (!body["override_settings"].is_object()) refuse_field("override_settings", "\"override_settings\" must be an object", "unprocessable");
    for (const auto& [key, value] : body["override_settings"].items()) {
      if (key == "sd_model_checkpoint") {
        if (!value.is_string() || !our_checkpoint(c, value.get<std::string>())) {
          refuse_field("override_settings", "override_settings.sd_model_checkpoint " + value.dump() + ": rgbaqd serves one checkpoint, " +
                                                c.model_name + " [" + model_hash(c) + "]", "unprocessable");
        }
      } else if (!(key == "samples_format" && value == "png")) {
        warn("override_settings." + key + ": not used by rgbaqd");
      }
    }
  }
  note("override_settings");
  if (flag(body, "disable_extra_networks")) warn("disable_extra_networks: not used; <lora:NAME:WEIGHT> tags in the prompt are applied");
  note("disable_extra_networks");
  for (const char* key : {"comments", "force_task_id", "infotext"}) {
    if (present(body, key) && body[key] != json("") && body[key] != json::object()) warn(std::string(key) + ": not used by rgbaqd");
    note(key);
  }
  for (const auto& [key, value] : body.items()) {
    if (handled.count(key) || kQuietFields.count(key)) continue;
    warn(key + (kKnownFields.count(key) ? ": not used by rgbaqd" : ": not a field of A1111's txt2img; not used"));
  }
  return warnings;
}

}  // namespace

void route_a1111_txt2img(const std::shared_ptr<RouteCall>& call) {
  call->set_error_shape(a1111_error);
  const json body = call->json_body();
  HttpContext& c = call->context;
  Generation g;
  g.api = "a1111";
  g.answer_when_canceled = true;  // interrupt: the images done, as A1111 answers
  g.prompt = string_field(body, "prompt").value_or("");
  g.width = static_cast<int>(integer_field(body, "width", 1, 1 << 14, true).value_or(512));
  g.height = static_cast<int>(integer_field(body, "height", 1, 1 << 14, true).value_or(512));
  check_api_size(g.width, g.height, g.width % 16 != 0 ? "width" : "height");
  const auto batch = integer_field(body, "batch_size", 1, kMaxImagesPerRequest, true).value_or(1);
  const auto iterations = integer_field(body, "n_iter", 1, kMaxImagesPerRequest, true).value_or(1);
  if (batch * iterations > kMaxImagesPerRequest) {
    refuse_field("batch_size", "batch_size x n_iter is " + std::to_string(batch * iterations) + "; at most " +
                                   std::to_string(kMaxImagesPerRequest) + " images in one request");
  }
  g.count = static_cast<int>(batch * iterations);
  const int64_t seed = integer_field(body, "seed", -1, (int64_t{1} << 32) - 1, true).value_or(-1);
  g.seed = seed < 0 ? random_seed() : static_cast<uint64_t>(seed);
  const bool send_images = present(body, "send_images") ? flag(body, "send_images") : true;
  const json warnings = screen_fields(c, body);
  read_idempotency(*call, body, g);
  generate(call, g, [call, body, g, batch, warnings, send_images, &c](const Generated& done) {
    json images = json::array(), seeds = json::array(), prompts = json::array(), infotexts = json::array(), ids = json::array();
    for (size_t i = 0; i < done.jobs.size(); ++i) {
      if (send_images) images.push_back(base64(done.pngs[i]));
      seeds.push_back(done.jobs[i].at("seed"));
      prompts.push_back(done.jobs[i].at("prompt"));
      ids.push_back(done.jobs[i].at("id"));
      infotexts.push_back(done.parameters[i]);
    }
    const json info = {{"prompt", g.prompt},
                       {"all_prompts", prompts},
                       {"negative_prompt", ""},
                       {"seed", g.seed},
                       {"all_seeds", seeds},
                       {"subseed", -1},
                       {"width", g.width},
                       {"height", g.height},
                       {"sampler_name", kSampler},
                       {"cfg_scale", 1},
                       {"steps", kSteps},
                       {"batch_size", batch},
                       {"sd_model_name", c.model_name},
                       {"sd_model_hash", model_hash(c)},
                       {"infotexts", infotexts},
                       {"rgbaq", {{"run", done.run}, {"jobs", ids}, {"attached", done.attached}, {"interrupted", done.interrupted},
                                  {"warnings", warnings}}}};
    return call->make_response(beast_http::status::ok, "application/json",
                               json({{"images", images}, {"parameters", body}, {"info", info.dump()}, {"warnings", warnings}})
                                       .dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
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
                      {"samples_format", "png"},
                      {"sd_vae", "Automatic"},
                      {"CLIP_stop_at_last_layers", 1}});
}

void route_a1111_samplers(const std::shared_ptr<RouteCall>& call) {
  call->respond_json(json::array({{{"name", kSampler}, {"aliases", {"euler", "flowmatch_euler"}}, {"options", json::object()}}}));
}

void route_a1111_schedulers(const std::shared_ptr<RouteCall>& call) {
  call->respond_json(json::array({{{"name", lower(kSchedule)}, {"label", kSchedule}, {"aliases", {"automatic"}}, {"default_rho", -1},
                                   {"need_inner_model", false}}}));
}

// The LoRAs a prompt may name (<lora:NAME:WEIGHT>): NAME.safetensors in the --lora-dir folders, the
// first folder that has a name winning, as a job finds them.
void route_a1111_loras(const std::shared_ptr<RouteCall>& call) {
  json out = json::array();
  std::set<std::string> seen;
  for (const auto& dir : call->context.config.lora_dirs) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".safetensors" && e.is_regular_file(ec)) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const std::string name = f.stem().string();
      if (!seen.insert(name).second) continue;
      out.push_back({{"name", name}, {"alias", name}, {"path", f.string()}, {"metadata", json::object()}});
    }
  }
  call->respond_json(out);
}

// The VAE is the model's own: no other to choose.
void route_a1111_vaes(const std::shared_ptr<RouteCall>& call) { call->respond_json(json::array()); }

void route_a1111_upscalers(const std::shared_ptr<RouteCall>& call) {
  call->respond_json(json::array(
      {{{"name", "None"}, {"model_name", nullptr}, {"model_path", nullptr}, {"model_url", nullptr}, {"scale", 1}}}));
}

void route_a1111_cmd_flags(const std::shared_ptr<RouteCall>& call) {
  const auto& config = call->context.config;
  call->respond_json({{"api", true},
                      {"nowebui", true},
                      {"ckpt_dir", config.model_dir.string()},
                      {"lora_dir", config.lora_dirs.empty() ? json(nullptr) : json(config.lora_dirs.front().string())},
                      {"data_dir", config.data_dir.string()}});
}

// A1111's interrupt ends the generation in hand: here, every A1111 run with a job rendering is canceled
// (its running job stops at its next step, its queued ones are dropped), and the txt2img waiting on it
// answers with the images done. Batch runs and the OpenAI API's runs are left alone.
void route_a1111_interrupt(const std::shared_ptr<RouteCall>& call) {
  call->set_error_shape(a1111_error);
  call->on_lane(call->context.lanes.bulk, [call](RequestHandler& h) {
    std::filesystem::path api_dir = call->context.config.api_renders_dir();
    try {
      api_dir = common::resolve_folder(api_dir);  // as the submit recorded the run's folder
    } catch (const common::FolderError&) {
    }
    std::set<int64_t> runs;
    const json running = h.handle("ls_jobs", {{"state", "running"}});
    for (const auto& j : running.at("jobs")) runs.insert(j.at("run").get<int64_t>());
    for (const int64_t run : runs) {
      const json r = h.handle("show_run", {{"run", run}});
      if (r.value("name", "") == "a1111" && r.value("out_dir", "") == api_dir.string()) h.handle("cancel", {{"run", run}});
    }
    return json::object();
  });
}

void route_a1111_ping(const std::shared_ptr<RouteCall>& call) { call->respond_json(json::object()); }

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
