// The image APIs (OpenAI's and AUTOMATIC1111's) through a real rgbaqd on the tiny model: the official
// OpenAI client's retries queue one run, and a client that gives up leaves nothing queued (a running job
// finishes); an Idempotency-Key answers from its first run, also after a restart; every OpenAI field
// taken (an opaque background's pixels, WebP decoded by libwebp), warned about or refused by name;
// signed image addresses checked with openssl's HMAC; A1111's lenient numbers, its start-up routes,
// interrupt, and both APIs' error shapes; the api-renders PNGs private from the start.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <webp/decode.h>

#include <cmath>
#include <cstring>
#include <future>
#include <set>

#include "storage/png_file.h"
#include "tests/daemon/http_client.h"
#include "tools/tiny_model.h"

namespace rgbaq {
namespace {

const fs::path kOracle = fs::path(RGBAQ_SOURCE_DIR_PATH) / "tests/oracle";

std::string unbase64(const std::string& in) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (const char c : in) {
    const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char* at = std::strchr(table, c);
    if (c == '=' || !at || !c) break;
    buffer = buffer << 6 | static_cast<uint32_t>(at - table);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

std::string base_url(const HttpDaemon& h) { return "http://127.0.0.1:" + std::to_string(h.port); }

// The official client, as tests/oracle/openai_call.mjs runs it: {"attempts", "response" | "error"}.
json openai_call(const HttpDaemon& h, const json& client_options, const json& params) {
  const auto r = run_process({"/usr/bin/env", "node", (kOracle / "openai_call.mjs").string(), base_url(h), h.token, client_options.dump(),
                              params.dump()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return json::parse(r.out, nullptr, false);
}

json run_jobs(const HttpDaemon& h, int64_t run) { return h.get("/api/v1/runs/" + std::to_string(run) + "/jobs").json_body()["jobs"]; }

// Waits (up to a minute) until `done(jobs)` holds for the run's jobs; returns them.
json wait_for_jobs(const HttpDaemon& h, int64_t run, const std::function<bool(const json&)>& done) {
  json jobs;
  for (int i = 0; i < 600 * test_time_scale(); ++i) {
    jobs = run_jobs(h, run);
    if (done(jobs)) return jobs;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "run " << run << "'s jobs never got there: " << jobs.dump() << "\n" << log_tail(h.d);
  return jobs;
}

bool all_in(const json& jobs, std::set<std::string> states) {
  for (const auto& j : jobs) {
    if (!states.count(j["state"].get<std::string>())) return false;
  }
  return !jobs.empty();
}

// A request sent on a raw connection whose client then gives up (closes it) after `wait_ms`.
void give_up_after(int port, const std::string& path, const json& body, const std::vector<Header>& headers, int wait_ms) {
  const int fd = tcp_connect(port);
  std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nContent-Type: application/json\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  const std::string text = body.dump();
  req += "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  const std::string reply = read_some(fd, wait_ms);
  EXPECT_EQ(reply, "") << "answered before the client gave up";
  ::close(fd);
}

// HMAC-SHA256 by openssl, as hex: the independent implementation the signatures are held to.
std::string openssl_hmac(const std::string& key, const std::string& message) {
  const auto r = run_process({"/usr/bin/openssl", "dgst", "-sha256", "-hmac", key}, message);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto at = r.out.rfind("= ");
  return at == std::string::npos ? "" : r.out.substr(at + 2, 64);
}

// Far more than the 512 tokens a prompt may have.
std::string long_prompt() {
  std::string p;
  for (int i = 0; i < 300; ++i) p += "a red fox jumps over the lazy dog, ";
  return p;
}

int64_t unix_now() { return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(); }

bool has_warning(const json& warnings, const std::string& field) {
  for (const auto& w : warnings) {
    if (w.get<std::string>().rfind(field, 0) == 0) return true;
  }
  return false;
}

TEST(DaemonImageApi, TheOpenAiClientsRetriesQueueOneRunAndGivingUpCancelsIt) {
  ASSERT_TRUE(fs::exists(kOracle / "node_modules/openai")) << "the openai client is not installed: run scripts/setup";
  HttpDaemon h;
  ASSERT_EQ(h.post_json("/api/v1/pause", json::object()).status, 200);
  // The client: a 2 s timeout and the default 2 retries, against a queue that renders nothing.
  json out = openai_call(h, {{"timeout", 2000}}, {{"prompt", "a patient fox"}, {"n", 2}, {"size", "128x128"}, {"seed", 3}});
  EXPECT_EQ(out["attempts"], 3) << out;
  EXPECT_EQ(out["error"]["name"], "APIConnectionTimeoutError") << out;
  json runs = h.get("/api/v1/runs").json_body()["runs"];
  ASSERT_EQ(runs.size(), 1u) << "every retry of the same request attaches to the first one's run: " << runs.dump();
  // Nobody waits any more: nothing of it stays queued, and nothing ran.
  json jobs = wait_for_jobs(h, runs[0]["id"], [](const json& j) { return all_in(j, {"canceled"}); });
  EXPECT_EQ(jobs.size(), 2u);
  for (const auto& j : jobs) EXPECT_TRUE(j["started_at"].is_null() || j["started_at"] == 0) << j;
}

TEST(DaemonImageApi, AnIdempotencyKeyAnswersFromTheFirstRunAlsoAfterARestart) {
  TempDir dir;
  json body = {{"prompt", "a kept promise"}, {"n", 2}, {"size", "128x128"}, {"seed", 40}};
  const Header key = {"Idempotency-Key", "retry-me-7"};
  json first;
  {
    HttpDaemon h;  // a daemon of its own for the abandoned request, then one on `dir` for the restart
    ASSERT_EQ(h.post_json("/api/v1/pause", json::object()).status, 200);
    give_up_after(h.port, "/v1/images/generations", body, {h.bearer(), key}, 1500);
    const int64_t run = h.get("/api/v1/runs").json_body()["runs"][0]["id"];
    wait_for_jobs(h, run, [](const json& j) { return all_in(j, {"canceled"}); });
    // The key's retry queues what was canceled again and answers from that run.
    ASSERT_EQ(h.post_json("/api/v1/resume", json::object()).status, 200);
    const auto again = h.post_json("/v1/images/generations", body, {key});
    ASSERT_EQ(again.status, 200) << again.body;
    EXPECT_EQ(again.json_body()["rgbaq"]["run"], run);
    EXPECT_EQ(again.json_body()["rgbaq"]["attached"], true);
    ASSERT_EQ(again.json_body()["data"].size(), 2u);
    EXPECT_EQ(h.get("/api/v1/runs").json_body()["runs"].size(), 1u);
    // The same key for another request is refused, in OpenAI's shape.
    json other = body;
    other["prompt"] = "another request";
    const auto refused = h.post_json("/v1/images/generations", other, {key});
    EXPECT_EQ(refused.status, 422) << refused.body;
    EXPECT_EQ(refused.json_body()["error"]["param"], "Idempotency-Key") << refused.body;
  }
  // Across a restart: the key is kept with the run.
  const auto start = [&] { return std::make_unique<DaemonProcess>(kRgbaqd, model().dir(), dir.path(), DaemonProcess::Options{.extra_args = with_http()}); };
  auto d = start();
  auto post = [&](const DaemonProcess& p, const json& b) {
    const int port = http_port(p);  // serving HTTP: its token is made
    return http_request(port, "POST", "/v1/images/generations",
                        {{"Authorization", "Bearer " + http_token(p)}, {"Content-Type", "application/json"}, key}, b.dump());
  };
  const auto made = post(*d, body);
  ASSERT_EQ(made.status, 200) << made.body;
  first = made.json_body();
  EXPECT_EQ(first["rgbaq"]["attached"], false);
  d->signal(SIGTERM);
  ASSERT_EQ(d->wait_exit(), 0);
  d = start();
  const auto after = post(*d, body);
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.json_body()["rgbaq"]["run"], first["rgbaq"]["run"]);
  EXPECT_EQ(after.json_body()["rgbaq"]["jobs"], first["rgbaq"]["jobs"]);
  EXPECT_EQ(after.json_body()["data"][0]["b64_json"], first["data"][0]["b64_json"]);
  const auto runs = rgbaq(*d, {"ls", "runs", "--json"});
  EXPECT_EQ(json::parse(runs.out)["runs"].size(), 1u) << runs.out;
}

TEST(DaemonImageApi, AClientThatHangsUpLeavesNoQueuedJobAndTheRunningOneFinishes) {
  HttpDaemon h;
  const int fd = tcp_connect(h.port);
  const std::string text = json({{"prompt", "a long wait"}, {"n", 8}, {"size", "512x512"}, {"seed", 1}}).dump();
  const std::string req = "POST /v1/images/generations HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(h.port) + "\r\nAuthorization: Bearer " +
                          h.token + "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  // Hang up as soon as its first job renders.
  json jobs;
  for (int i = 0; i < 600 && !(jobs.is_array() && !jobs.empty() && jobs[0]["state"] != "queued"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto runs = h.get("/api/v1/runs").json_body()["runs"];
    if (!runs.empty()) jobs = run_jobs(h, runs[0]["id"]);
  }
  ::close(fd);
  ASSERT_TRUE(jobs.is_array() && !jobs.empty()) << log_tail(h.d);
  jobs = wait_for_jobs(h, jobs[0]["run"], [](const json& j) { return all_in(j, {"done", "canceled"}); });
  int done = 0, canceled = 0;
  for (const auto& j : jobs) {
    if (j["state"] == "done") ++done;
    if (j["state"] == "canceled") {
      ++canceled;
      EXPECT_TRUE(j["started_at"].is_null() || j["started_at"] == 0) << "a job canceled after it began rendering: " << j;
    }
  }
  EXPECT_GE(done, 1) << "the job rendering when the client hung up finishes: " << jobs.dump();
  EXPECT_GE(canceled, 1) << "the queued ones are canceled: " << jobs.dump();
  EXPECT_EQ(done + canceled, 8);
}

TEST(DaemonImageApi, OpenAiFieldsAreTakenWarnedAboutOrRefusedByName) {
  HttpDaemon h;
  json base = {{"prompt", "a glass apple"}, {"size", "128x128"}, {"seed", 5}};
  const auto generate = [&](json extra) {
    json b = base;
    b.update(extra);
    return h.post_json("/v1/images/generations", b);
  };
  const auto plain = generate({{"user", "user-17"}});
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.json_body()["warnings"], json::array());
  const auto png = storage::read_png_bytes(unbase64(plain.json_body()["data"][0]["b64_json"]), "plain");
  ASSERT_EQ(png.channels, 4);
  // `user` is kept with the run.
  json run = h.get("/api/v1/runs/" + std::to_string(plain.json_body()["rgbaq"]["run"].get<int64_t>())).json_body();
  EXPECT_EQ(run["options"]["defaults"]["image_api"]["user"], "user-17") << run;

  // background opaque: composited on white, as RGB; the parameters kept.
  const auto opaque = generate({{"background", "opaque"}});
  ASSERT_EQ(opaque.status, 200) << opaque.body;
  EXPECT_EQ(opaque.json_body()["background"], "opaque");
  const auto flat = storage::read_png_bytes(unbase64(opaque.json_body()["data"][0]["b64_json"]), "opaque");
  EXPECT_EQ(flat.channels, 3);
  EXPECT_EQ(flat.texts.count("parameters"), 1u);
  ASSERT_EQ(flat.rgba.size(), png.rgba.size());
  int worst = 0, translucent = 0, see_through = 0;
  for (size_t i = 0; i < png.rgba.size(); i += 4) {
    const double a = png.rgba[i + 3] / 255.0;
    translucent += png.rgba[i + 3] < 255;
    see_through += flat.rgba[i + 3] != 255;
    for (int c = 0; c < 3; ++c) worst = std::max(worst, static_cast<int>(std::lround(std::fabs(flat.rgba[i + c] - (png.rgba[i + c] * a + 255 * (1 - a))))));
  }
  EXPECT_LE(worst, 1) << "each colour c * a + 255 * (1 - a)";
  EXPECT_EQ(see_through, 0);
  EXPECT_GT(translucent, 0) << "the tiny model's image has alpha to composite";

  // output_format webp: lossless with its alpha; with output_compression, lossy colour and exact alpha.
  for (const int quality : {100, 80}) {
    const auto webp = generate(quality == 100 ? json{{"output_format", "webp"}} : json{{"output_format", "webp"}, {"output_compression", quality}});
    ASSERT_EQ(webp.status, 200) << webp.body;
    EXPECT_EQ(webp.json_body()["output_format"], "webp");
    const std::string bytes = unbase64(webp.json_body()["data"][0]["b64_json"]);
    WebPBitstreamFeatures features;
    ASSERT_EQ(WebPGetFeatures(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &features), VP8_STATUS_OK);
    EXPECT_TRUE(features.has_alpha);
    EXPECT_EQ(features.format, quality == 100 ? 2 : 1);  // lossless, lossy
    int w = 0, hgt = 0;
    uint8_t* rgba = WebPDecodeRGBA(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &w, &hgt);
    ASSERT_NE(rgba, nullptr);
    ASSERT_EQ(w, 128);
    ASSERT_EQ(hgt, 128);
    int alpha_off = 0, colour_off = 0;
    for (size_t i = 0; i < png.rgba.size(); ++i) (i % 4 == 3 ? alpha_off : colour_off) += rgba[i] != png.rgba[i];
    WebPFree(rgba);
    EXPECT_EQ(alpha_off, 0) << "quality " << quality;
    if (quality == 100) {
      EXPECT_EQ(colour_off, 0);
    }
  }

  // Taken, with nothing to do: said in `warnings`.
  const auto warned = generate({{"quality", "hd"}, {"style", "vivid"}, {"model", "dall-e-3"}, {"moderation", "low"}});
  ASSERT_EQ(warned.status, 200) << warned.body;
  for (const char* field : {"quality", "style", "model", "moderation"}) EXPECT_TRUE(has_warning(warned.json_body()["warnings"], field)) << field << warned.body;

  // Refused, naming the field, in OpenAI's error shape.
  for (const auto& [extra, field, says] : std::vector<std::tuple<json, std::string, std::string>>{
           {{{"output_format", "jpeg"}}, "output_format", "png or webp"},
           {{{"foo", 1}}, "foo", "Unrecognized request argument supplied: foo"},
           {{{"response_format", "url"}, {"output_format", "webp"}}, "response_format", "b64_json"},
           {{{"response_format", "url"}, {"background", "opaque"}}, "response_format", "b64_json"},
           {{{"output_compression", 50}}, "output_compression", "webp"},
           {{{"stream", true}}, "stream", "stream"},
           {{{"background", "checkered"}}, "background", "opaque"},
           {{{"size", "500x500"}}, "size", "496x496, 496x512, 512x496 or 512x512"},
           {{{"size", "1536x1024"}}, "size", "1248x832"},
           {{{"prompt", long_prompt()}}, "prompt", "prompt"}}) {
    const auto r = generate(extra);
    EXPECT_EQ(r.status, 400) << extra << r.body;
    json error = r.json_body()["error"];
    EXPECT_EQ(error["param"], field) << r.body;
    EXPECT_EQ(error["type"], "invalid_request_error") << r.body;
    EXPECT_NE(error["message"].get<std::string>().find(says), std::string::npos) << r.body;
    EXPECT_EQ(error["message"].get<std::string>().find("openai:1"), std::string::npos) << r.body;
  }
  // The official client reads the refusal as OpenAI's own.
  json refused = openai_call(h, {{"maxRetries", 0}}, {{"prompt", "x"}, {"size", "500x500"}});
  EXPECT_EQ(refused["error"]["name"], "BadRequestError") << refused;
  EXPECT_EQ(refused["error"]["param"], "size") << refused;
}

TEST(DaemonImageApi, AResponseUrlIsSignedForItsJobAloneAndExpires) {
  HttpDaemon h;
  const auto r = h.post_json("/v1/images/generations", {{"prompt", "a signed letter"}, {"n", 2}, {"size", "128x128"}, {"seed", 9},
                                                        {"response_format", "url"}});
  ASSERT_EQ(r.status, 200) << r.body;
  json data = r.json_body()["data"];
  ASSERT_EQ(data.size(), 2u);
  const std::string prefix = base_url(h);
  std::vector<std::tuple<int64_t, std::string, std::string>> signed_jobs;  // job, expires, signature
  for (const auto& item : data) {
    const std::string url = item["url"];
    ASSERT_EQ(url.rfind(prefix + "/api/v1/jobs/", 0), 0u) << url;
    const std::string target = url.substr(prefix.size());
    const int64_t job = std::stoll(target.substr(std::string("/api/v1/jobs/").size()));
    const auto e = target.find("expires="), s = target.find("&signature=");
    ASSERT_NE(e, std::string::npos);
    ASSERT_NE(s, std::string::npos);
    const std::string expires = target.substr(e + 8, s - e - 8), signature = target.substr(s + 11);
    EXPECT_NEAR(std::stoll(expires) - unix_now(), 3600, 60) << "an hour, as OpenAI's";
    EXPECT_EQ(signature, openssl_hmac(h.token, "rgbaq job image " + std::to_string(job) + " " + expires));
    // Without the token: the image, as the token gets it.
    const auto anonymous = http_request(h.port, "GET", target);
    EXPECT_EQ(anonymous.status, 200) << anonymous.body;
    EXPECT_EQ(anonymous.headers["content-type"], "image/png");
    EXPECT_TRUE(anonymous.body == h.get("/api/v1/jobs/" + std::to_string(job) + "/image").body);
    signed_jobs.emplace_back(job, expires, signature);
  }
  const auto [job, expires, signature] = signed_jobs[0];
  const auto [other, other_expires, other_signature] = signed_jobs[1];
  const auto get = [&](const std::string& target) { return http_request(h.port, "GET", target).status; };
  const std::string image = "/api/v1/jobs/" + std::to_string(job) + "/image";
  // Another job's signature, a forged one, the thumbnail, no signature: refused.
  EXPECT_EQ(get(image + "?expires=" + other_expires + "&signature=" + other_signature), 401);
  std::string forged = signature;
  forged[0] = forged[0] == 'a' ? 'b' : 'a';
  EXPECT_EQ(get(image + "?expires=" + expires + "&signature=" + forged), 401);
  EXPECT_EQ(get(image + "?expires=" + std::to_string(std::stoll(expires) + 1) + "&signature=" + signature), 401);
  EXPECT_EQ(get("/api/v1/jobs/" + std::to_string(job) + "/thumbnail?expires=" + expires + "&signature=" + signature), 401);
  EXPECT_EQ(get("/api/v1/jobs/" + std::to_string(job) + "?expires=" + expires + "&signature=" + signature), 401);
  EXPECT_EQ(get(image), 401);
  // Expired: refused even when correctly signed (openssl signs it); one that has not, taken.
  const std::string past = std::to_string(unix_now() - 5), soon = std::to_string(unix_now() + 60);
  EXPECT_EQ(get(image + "?expires=" + past + "&signature=" + openssl_hmac(h.token, "rgbaq job image " + std::to_string(job) + " " + past)), 401);
  EXPECT_EQ(get(image + "?expires=" + soon + "&signature=" + openssl_hmac(h.token, "rgbaq job image " + std::to_string(job) + " " + soon)), 200);
  EXPECT_NE(other, job);
}

TEST(DaemonImageApi, A1111TakesWhatA1111TakesAndNamesWhatItDoesNot) {
  HttpDaemon h;
  const auto r = h.post_json("/sdapi/v1/txt2img", {{"prompt", "a blue bird"}, {"seed", "42"}, {"width", 128.0}, {"height", "128"},
                                                   {"batch_size", 1}, {"steps", 20}, {"cfg_scale", 7}, {"sampler_name", "Euler a"},
                                                   {"negative_prompt", "blurry"}, {"save_images", false}, {"enable_hr", false},
                                                   {"override_settings", {{"CLIP_stop_at_last_layers", 2}}}, {"distilled_cfg_scale", 3.5}});
  ASSERT_EQ(r.status, 200) << r.body;
  json info = json::parse(r.json_body()["info"].get<std::string>());
  EXPECT_EQ(info["all_seeds"], json::array({42}));
  EXPECT_EQ(info["width"], 128);
  ASSERT_EQ(r.json_body()["images"].size(), 1u);
  json warnings = r.json_body()["warnings"];
  for (const char* field : {"steps", "cfg_scale", "sampler_name", "negative_prompt", "save_images", "override_settings.CLIP_stop_at_last_layers",
                            "distilled_cfg_scale"}) {
    EXPECT_TRUE(has_warning(warnings, field)) << field << " " << warnings;
  }
  EXPECT_FALSE(has_warning(warnings, "enable_hr")) << warnings;
  EXPECT_EQ(info["rgbaq"]["warnings"], warnings);
  // send_images false: the answer without the images, as A1111's.
  const auto quiet = h.post_json("/sdapi/v1/txt2img", {{"prompt", "a blue bird"}, {"seed", 42}, {"width", 128}, {"height", 128}, {"send_images", false}});
  ASSERT_EQ(quiet.status, 200) << quiet.body;
  EXPECT_EQ(quiet.json_body()["images"], json::array());
  // Refused with FastAPI's 422, naming the field.
  for (const auto& [body, field, says] : std::vector<std::tuple<json, std::string, std::string>>{
           {{{"width", 500}, {"height", 128}}, "width", "496x128 or 512x128"},
           {{{"width", 512.5}}, "width", "integer"},
           {{{"seed", "forty"}}, "seed", "integer"},
           {{{"alwayson_scripts", {{"controlnet", {{"args", json::array()}}}}}}, "alwayson_scripts", "controlnet"},
           {{{"override_settings", {{"sd_model_checkpoint", "sdxl.safetensors"}}}}, "override_settings", "sd_model_checkpoint"},
           {{{"enable_hr", true}}, "enable_hr", "hires"},
           {{{"tiling", true}}, "tiling", "tileable"},
           {{{"prompt", long_prompt()}}, "prompt", "prompt"}}) {
    json b = {{"prompt", "a blue bird"}, {"width", 128}, {"height", 128}};
    b.update(body);
    const auto refused = h.post_json("/sdapi/v1/txt2img", b);
    EXPECT_EQ(refused.status, 422) << b << refused.body;
    json detail = refused.json_body()["detail"];
    ASSERT_TRUE(detail.is_array() && detail.size() == 1u) << refused.body;
    EXPECT_EQ(detail[0]["loc"], json::array({"body", field})) << refused.body;
    EXPECT_NE(detail[0]["msg"].get<std::string>().find(says), std::string::npos) << refused.body;
    EXPECT_EQ(detail[0]["msg"].get<std::string>().find("a1111:1"), std::string::npos) << refused.body;
  }
}

TEST(DaemonImageApi, TheA1111StartUpRoutesAnswerAndInterruptCancelsTheApiJobAlone) {
  TempDir loras;
  tools::write_tiny_loras(loras.path(), tools::tiny_dit_config());
  HttpDaemon h({"--lora-dir", loras.path().string()});
  const auto get = [&](const std::string& path) {
    const auto r = h.get(path);
    EXPECT_EQ(r.status, 200) << path << " " << r.body;
    return r.json_body();
  };
  EXPECT_EQ(get("/sdapi/v1/samplers")[0]["name"], "Euler");
  EXPECT_EQ(get("/sdapi/v1/schedulers")[0]["label"], "FlowMatch");
  std::set<std::string> names;
  for (const auto& l : get("/sdapi/v1/loras")) names.insert(l["name"].get<std::string>());
  EXPECT_TRUE(names.count("detail")) << get("/sdapi/v1/loras");
  EXPECT_EQ(get("/sdapi/v1/sd-vae"), json::array());
  EXPECT_EQ(get("/sdapi/v1/upscalers")[0]["name"], "None");
  EXPECT_EQ(get("/sdapi/v1/cmd-flags")["api"], true);
  EXPECT_EQ(get("/internal/ping"), json::object());

  // A batch run queued behind an A1111 request of 8 images; interrupt while the latter renders.
  const auto batch = h.post_json("/api/v1/runs", {{"rows", {{{"prompt", "a batch cat"}, {"seed", "1-2"}, {"size", "128"}}}},
                                                  {"out_dir", (h.dir.path() / "out").string()}});
  ASSERT_EQ(batch.status, 200) << batch.body;
  auto answer = std::async(std::launch::async, [&] {
    return h.post_json("/sdapi/v1/txt2img", {{"prompt", "an interrupted owl"}, {"seed", 3}, {"width", 512}, {"height", 512}, {"batch_size", 8}});
  });
  int64_t api_run = 0;
  std::string seen;
  for (int i = 0; i < 1500 && api_run == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto running = h.get("/api/v1/jobs?state=running");
    seen = running.body;
    json listed = running.json_body();
    for (const auto& j : listed["jobs"]) {
      if (j["prompt"] == "an interrupted owl") api_run = j["run"];
    }
  }
  ASSERT_NE(api_run, 0) << seen << log_tail(h.d);
  const auto interrupted = h.post_json("/sdapi/v1/interrupt", json::object());
  EXPECT_EQ(interrupted.status, 200) << interrupted.body;
  const auto r = answer.get();
  ASSERT_EQ(r.status, 200) << r.body;
  json info = json::parse(r.json_body()["info"].get<std::string>());
  EXPECT_EQ(info["rgbaq"]["interrupted"], true);
  EXPECT_LT(r.json_body()["images"].size(), 8u);
  json jobs = run_jobs(h, api_run);
  EXPECT_TRUE(all_in(jobs, {"done", "canceled"})) << jobs;
  EXPECT_FALSE(all_in(jobs, {"done"})) << jobs;
  // The batch run is not the API's to interrupt.
  wait_until_idle(h.d);
  EXPECT_TRUE(all_in(run_jobs(h, batch.json_body()["run"]), {"done"}));
}

TEST(DaemonImageApi, TheApiRendersArePrivateAndAStartLeavesThemAsTheyAre) {
  TempDir dir;
  const DaemonProcess::Options options{.extra_args = with_http()};
  std::uintmax_t log_before = 0;
  fs::path png;
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), options);
    const int port = http_port(d);  // serving HTTP: its token is made
    const auto r = http_request(port, "POST", "/v1/images/generations",
                                {{"Authorization", "Bearer " + http_token(d)}, {"Content-Type", "application/json"}},
                                json({{"prompt", "a private fox"}, {"size", "128x128"}, {"seed", 2}}).dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const auto pngs = pngs_in(d.data_dir() / "api-renders");
    ASSERT_EQ(pngs.size(), 1u);
    png = pngs[0];
    struct stat st {};
    ASSERT_EQ(stat(png.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << "the data directory's own images are private like the rest of it";
    ASSERT_EQ(stat(png.parent_path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    d.signal(SIGTERM);
    ASSERT_EQ(d.wait_exit(), 0);
    log_before = fs::file_size(d.log());
  }
  DaemonProcess again(kRgbaqd, model().dir(), dir.path(), options);
  status(again);
  const std::string log = read_text(again.log()).substr(log_before);
  EXPECT_EQ(log.find("tightened"), std::string::npos) << log;
}

}  // namespace
}  // namespace rgbaq
