// OpenAI's Images API: POST /v1/images/generations (and GET /v1/models, which its clients ask first),
// rendered through the queue (image_apis.h). Every field of OpenAI's request is either taken, or refused
// with a 400 that names it, or listed in the answer's `warnings` when it changes nothing worth refusing
// (quality, style: this model has one of each); a field OpenAI does not have is refused as OpenAI
// refuses it. Errors come in OpenAI's shape: {"error": {"message", "type", "param", "code"}}.
#include <chrono>
#include <set>

#include "daemon/http/http_api.h"
#include "daemon/http/image_apis.h"
#include "daemon/http/image_encoding.h"
#include "storage/png_file.h"

namespace rgbaq::daemon::http {
namespace {

using nlohmann::json;

constexpr int64_t kUrlLifetimeSeconds = 3600;  // as OpenAI's image URLs

const std::set<std::string> kFields = {"prompt",     "model",      "n",                  "quality",       "response_format",
                                       "size",       "style",      "user",               "background",    "moderation",
                                       "output_format", "output_compression", "partial_images", "stream", "seed"};

Response openai_error(const RouteCall& call, beast_http::status status, std::string_view code, const std::string& message,
                      const json& details) {
  const std::string param = refused_field(details);
  const json error = {{"message", message},
                      {"type", static_cast<int>(status) >= 500 ? "server_error" : "invalid_request_error"},
                      {"param", param.empty() ? json(nullptr) : json(param)},
                      {"code", code}};
  return call.make_response(status, "application/json", json({{"error", error}}).dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
}

// One of `allowed`, or absent (nullopt); anything else refused naming the field and the choices.
std::optional<std::string> choice(const json& body, const std::string& key, std::initializer_list<const char*> allowed) {
  const auto v = string_field(body, key);
  if (!v) return std::nullopt;
  std::string list;
  for (const char* a : allowed) {
    if (*v == a) return v;
    list += std::string(list.empty() ? "" : ", ") + a;
  }
  refuse_field(key, "\"" + key + "\" \"" + *v + "\" is not one of " + list);
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
  refuse_field("size", "\"size\" \"" + size + "\" is not WIDTHxHEIGHT (e.g. 1024x1024) nor auto");
}

struct Answer {
  std::string format = "png";      // png | webp
  std::string response = "b64_json";
  bool opaque = false;             // composited on white
  int quality = 100;               // webp: 100 lossless, else lossy at this quality
  json warnings = json::array();
};

// The image as the request asked for it, from the PNG as written.
std::string image_bytes(const Answer& a, const std::string& png, const std::string& name) {
  if (a.format == "png" && !a.opaque) return png;
  storage::PngImage image = storage::read_png_bytes(png, name);
  if (a.opaque) image.rgba = composite_on_white(image.rgba);
  if (a.format == "webp") return encode_webp_rgba(image.rgba, image.width, image.height, a.quality);
  std::vector<storage::PngText> texts;
  for (const auto& [key, value] : image.texts) texts.push_back({key, value});
  return encode_png_rgb(image.rgba, image.width, image.height, texts);
}

}  // namespace

void route_openai_generate(const std::shared_ptr<RouteCall>& call) {
  call->set_error_shape(openai_error);
  const json body = call->json_body();
  std::vector<std::string> unknown;
  for (const auto& [key, value] : body.items()) {
    if (!kFields.count(key)) unknown.push_back(key);
  }
  if (!unknown.empty()) {
    std::string names;
    for (const auto& u : unknown) names += (names.empty() ? "" : ", ") + u;
    refuse_field(unknown.front(), std::string("Unrecognized request argument") + (unknown.size() > 1 ? "s" : "") + " supplied: " + names);
  }
  Generation g;
  g.api = "openai";
  g.prompt = string_field(body, "prompt").value_or("");
  g.count = static_cast<int>(integer_field(body, "n", 1, kMaxImagesPerRequest, false).value_or(1));
  std::tie(g.width, g.height) = openai_size(string_field(body, "size").value_or("auto"));
  check_api_size(g.width, g.height, "size");
  const auto seed = integer_field(body, "seed", 0, std::numeric_limits<int64_t>::max() - kMaxImagesPerRequest, false);
  g.seed = seed ? static_cast<uint64_t>(*seed) : random_seed();

  Answer a;
  a.response = choice(body, "response_format", {"b64_json", "url"}).value_or("b64_json");
  a.format = choice(body, "output_format", {"png", "webp", "jpeg"}).value_or("png");
  if (a.format == "jpeg") {
    refuse_field("output_format", "\"output_format\" \"jpeg\" is not written here: png or webp (both keep the alpha; "
                                  "\"background\": \"opaque\" composites on white)");
  }
  a.opaque = choice(body, "background", {"auto", "transparent", "opaque"}).value_or("auto") == "opaque";
  if (const auto compression = integer_field(body, "output_compression", 0, 100, false)) {
    if (a.format != "webp") refuse_field("output_compression", "\"output_compression\" applies to output_format webp, not " + a.format);
    a.quality = static_cast<int>(*compression);
  }
  if (a.response == "url" && (a.format != "png" || a.opaque)) {
    refuse_field("response_format", "\"response_format\" \"url\" gives the PNG as written (RGBA); output_format " + a.format +
                                        (a.opaque ? " and background opaque come" : " comes") + " as b64_json");
  }
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) refuse_field("stream", "\"stream\" must be true or false");
    if (body["stream"].get<bool>()) refuse_field("stream", "\"stream\": rgbaqd does not stream image generations; it answers once they are done");
  }
  if (integer_field(body, "partial_images", 0, 3, false).value_or(0) > 0) {
    refuse_field("partial_images", "\"partial_images\" needs \"stream\", which rgbaqd does not do");
  }
  // Taken with nothing to do: this model has one quality and one style (8 steps, no CFG), no moderation.
  const std::string model = string_field(body, "model").value_or("");
  if (!model.empty() && model != call->context.model_name) {
    a.warnings.push_back("model \"" + model + "\": rgbaqd serves one model, " + call->context.model_name + "; the images are its");
  }
  if (const auto quality = choice(body, "quality", {"auto", "standard", "hd", "low", "medium", "high"}); quality && *quality != "auto") {
    a.warnings.push_back("quality \"" + *quality + "\": not used; this model renders at one quality (8 steps)");
  }
  if (const auto style = choice(body, "style", {"vivid", "natural"})) {
    a.warnings.push_back("style \"" + *style + "\": not used; this model has no style setting (say it in the prompt)");
  }
  if (choice(body, "moderation", {"auto", "low"}).value_or("auto") == "low") {
    a.warnings.push_back("moderation \"low\": not used; rgbaqd does not moderate prompts or images");
  }
  if (const auto user = string_field(body, "user")) g.recorded["user"] = *user;  // kept with the run (rgbaq ls runs --json)
  read_idempotency(*call, body, g);

  const std::string base = call->context.base_url;
  generate(call, g, [call, a, base](const Generated& done) {
    json data = json::array(), ids = json::array(), seeds = json::array();
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (size_t i = 0; i < done.jobs.size(); ++i) {
      const int64_t id = done.jobs[i].value("id", 0);
      json item = {{"revised_prompt", done.jobs[i].at("prompt")}};
      if (a.response == "url") {
        item["url"] = base + "/api/v1/jobs/" + std::to_string(id) + "/image?" + call->context.guard.job_image_query(id, now + kUrlLifetimeSeconds);
      } else {
        item["b64_json"] = base64(image_bytes(a, done.pngs[i], done.jobs[i].value("output", "")));
      }
      data.push_back(item);
      ids.push_back(id);
      seeds.push_back(done.jobs[i].at("seed"));
    }
    json rgbaq = {{"run", done.run}, {"jobs", ids}, {"seeds", seeds}, {"attached", done.attached}};
    if (a.response == "url") rgbaq["url_expires_at"] = now + kUrlLifetimeSeconds;
    return call->make_response(beast_http::status::ok, "application/json",
                               json({{"created", now},
                                     {"data", data},
                                     {"background", a.opaque ? "opaque" : "transparent"},
                                     {"output_format", a.format},
                                     {"warnings", a.warnings},
                                     {"rgbaq", rgbaq}})
                                       .dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
  });
}

void route_openai_models(const std::shared_ptr<RouteCall>& call) {
  call->set_error_shape(openai_error);
  call->respond_json({{"object", "list"},
                      {"data", json::array({{{"id", call->context.model_name}, {"object", "model"}, {"created", 0},
                                             {"owned_by", "rgbaq"}}})}});
}

}  // namespace rgbaq::daemon::http
