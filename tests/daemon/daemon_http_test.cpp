// rgbaqd over HTTP, as real processes: the token, Host and Origin checks (and another uid with the port
// but not the token), the official OpenAI client and an A1111-style client rendering what `rgbaqd
// render` renders, an event stream resumed with Last-Event-ID, hostile clients (a 100 MB body, 200 idle
// connections, the oldest closed to make room, a never-ending header, a stalled one) bounded with the
// daemon still answering, and the OpenAPI document held against the routes the server answers.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "daemon/http/http_api.h"
#include "storage/png_file.h"
#include "tests/daemon/http_client.h"

namespace rgbaq {
namespace {


TEST(DaemonHttp, TheTokenHostAndOriginAreChecked) {
  HttpDaemon h;
  ASSERT_EQ(rgbaq(h.d, {"submit", "--prompt", "a secret fox", "--seeds", "1", "--size", "128", "--out", (h.dir.path() / "out").string()}).exit_code, 0);
  // The token file is the owner's alone.
  struct stat st {};
  ASSERT_EQ(stat((h.d.data_dir() / "http-token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(h.token.size(), 64u);

  for (const auto& headers : std::vector<std::vector<Header>>{{}, {{"Authorization", "Bearer wrong"}},
                                                              {{"Authorization", "Basic dXNlcjp3cm9uZw=="}},
                                                              {{"Cookie", "rgbaq_token_" + std::to_string(h.port) + "=nope"}}}) {
    const auto r = http_request(h.port, "GET", "/api/v1/runs", headers);
    EXPECT_EQ(r.status, 401);
    EXPECT_EQ(r.body.find("secret"), std::string::npos) << r.body;  // learns nothing of the queue
    EXPECT_NE(r.headers["www-authenticate"].find("Bearer"), std::string::npos);
  }
  EXPECT_EQ(h.get("/api/v1/runs").status, 200);
  EXPECT_NE(h.get("/api/v1/runs").body.find("a secret fox"), std::string::npos);
  // HTTP Basic with the token as the password, as A1111 clients send it: "user:TOKEN".
  std::string basic;
  {
    const std::string raw = "anyone:" + h.token;
    static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < raw.size(); i += 3) {
      uint32_t v = static_cast<uint8_t>(raw[i]) << 16;
      if (i + 1 < raw.size()) v |= static_cast<uint8_t>(raw[i + 1]) << 8;
      if (i + 2 < raw.size()) v |= static_cast<uint8_t>(raw[i + 2]);
      basic += t[v >> 18 & 63];
      basic += t[v >> 12 & 63];
      basic += i + 1 < raw.size() ? t[v >> 6 & 63] : '=';
      basic += i + 2 < raw.size() ? t[v & 63] : '=';
    }
  }
  EXPECT_EQ(http_request(h.port, "GET", "/api/v1/status", {{"Authorization", "Basic " + basic}}).status, 200);

  // The browser's login: the token in the address once, then moved into the fragment (which no request
  // carries) for the page to keep; no cookie, which a browser would send to every port of this host.
  const auto login = http_request(h.port, "GET", "/?token=" + h.token);
  EXPECT_EQ(login.status, 303);
  EXPECT_EQ(login.headers["location"], "/#token=" + h.token);
  EXPECT_EQ(login.headers.count("set-cookie"), 0u);
  EXPECT_EQ(http_request(h.port, "GET", "/?token=wrong").status, 401);
  // `rgbaq http-url` prints exactly that address.
  const auto url = rgbaq(h.d, {"http-url"});
  EXPECT_EQ(url.out, "http://127.0.0.1:" + std::to_string(h.port) + "/?token=" + h.token + "\n") << url.err;
  EXPECT_EQ(rgbaq(h.d, {"gallery", "--print"}).out, url.out);
  // `rgbaq gallery` hands the browser a private page that forwards there: never the token on a command line.
  const fs::path bin = h.dir.path() / "bin";
  fs::create_directories(bin);
  write_file(bin / "xdg-open", "#!/bin/sh\necho \"$@\" > " + (bin / "opened").string() + "\n");
  fs::permissions(bin / "xdg-open", fs::perms::owner_all);
  const auto opened = run_process({"/usr/bin/env", "PATH=" + bin.string(), kRgbaq, "--socket", h.d.socket().string(), "gallery"});
  EXPECT_EQ(opened.exit_code, 0) << opened.err;
  std::ifstream arg(bin / "opened");
  std::string target;
  std::getline(arg, target);
  EXPECT_EQ(target, "file://" + (h.d.data_dir() / "open-gallery.html").string());
  EXPECT_EQ(target.find(h.token), std::string::npos);
  std::ifstream page(h.d.data_dir() / "open-gallery.html");
  const std::string html((std::istreambuf_iterator<char>(page)), {});
  EXPECT_NE(html.find("url=http://127.0.0.1:" + std::to_string(h.port) + "/?token=" + h.token), std::string::npos) << html;
  struct stat page_stat {};
  ASSERT_EQ(stat((h.d.data_dir() / "open-gallery.html").c_str(), &page_stat), 0);
  EXPECT_EQ(page_stat.st_mode & 0777, 0600u);

  // DNS rebinding: a Host we do not serve, even with the token.
  EXPECT_EQ(http_request(h.port, "GET", "/api/v1/status", {{"Host", "evil.example:" + std::to_string(h.port)}, h.bearer()}).status, 403);
  // A page of another origin cannot act, even with the token; no CORS header is ever sent.
  const auto cross = http_request(h.port, "POST", "/api/v1/pause", {{"Origin", "http://evil.example"}, h.bearer()});
  EXPECT_EQ(cross.status, 403);
  EXPECT_EQ(cross.headers.count("access-control-allow-origin"), 0u);
  const auto fetch_cross = http_request(h.port, "POST", "/api/v1/pause", {{"Sec-Fetch-Site", "cross-site"}, h.bearer()});
  EXPECT_EQ(fetch_cross.status, 403);
  EXPECT_EQ(status(h.d)["paused"], false);
  // Our own origin may.
  EXPECT_EQ(http_request(h.port, "POST", "/api/v1/pause", {{"Origin", "http://127.0.0.1:" + std::to_string(h.port)}, h.bearer()}).status, 200);
  EXPECT_EQ(status(h.d)["paused"], true);
}

TEST(DaemonHttp, AnotherUidWithThePortButNotTheTokenGets401) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a client as uid 65534";
  HttpDaemon h;
  const std::string url = "http://127.0.0.1:" + std::to_string(h.port) + "/api/v1/runs";
  const auto as_nobody = [](std::vector<std::string> cmd) {
    cmd.insert(cmd.begin(), {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
    return run_process(cmd);
  };
  const auto curl = as_nobody({"/usr/bin/curl", "-s", "-w", "\n%{http_code}", url});
  EXPECT_NE(curl.out.find("\n401"), std::string::npos) << curl.out << curl.err;
  EXPECT_NE(as_nobody({"/bin/cat", (h.d.data_dir() / "http-token").string()}).exit_code, 0);  // nor can it read the token
}

// The official openai npm client, and an A1111-style client, through a running rgbaqd: the PNGs they get
// decode as RGBA and their pixels are those of `rgbaqd render` for the same prompts and seeds.
TEST(DaemonHttp, TheOpenAiAndA1111ClientsGetWhatRgbaqdRenderRenders) {
  const fs::path oracle = fs::path(RGBAQ_SOURCE_DIR_PATH) / "tests/oracle";
  ASSERT_TRUE(fs::exists(oracle / "node_modules/openai")) << "the openai client is not installed: run scripts/setup";
  HttpDaemon h;
  const fs::path got = h.dir.path() / "got";
  fs::create_directories(got);
  const std::string base = "http://127.0.0.1:" + std::to_string(h.port);
  const auto openai = run_process({"/usr/bin/env", "node", (oracle / "openai_images.mjs").string(), base, h.token, got.string(),
                                   "a red fox", "11", "2", "256x256"});
  ASSERT_EQ(openai.exit_code, 0) << openai.out << openai.err << log_tail(h.d);
  const auto openai_out = json::parse(openai.out);
  EXPECT_EQ(openai_out["count"], 2);
  EXPECT_EQ(openai_out["rgbaq"]["seeds"], json::array({11, 12}));
  const auto a1111 = run_process({"/usr/bin/env", "node", (oracle / "a1111_client.mjs").string(), base, h.token, got.string(),
                                  "a blue bird", "5", "1", "256", "256"});
  ASSERT_EQ(a1111.exit_code, 0) << a1111.out << a1111.err << log_tail(h.d);
  const auto info = json::parse(a1111.out);
  EXPECT_EQ(info["all_seeds"], json::array({5}));
  // What this model does not use is said, each naming its field.
  const json warnings = info["rgbaq"]["warnings"];
  ASSERT_EQ(warnings.size(), 4u) << warnings;
  for (const char* field : {"negative_prompt", "steps", "cfg_scale", "sampler_name"}) {
    EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [&](const json& w) { return w.get<std::string>().rfind(field, 0) == 0; }))
        << field << " " << warnings;
  }
  EXPECT_NE(info["infotexts"][0].get<std::string>().find("Seed: 5"), std::string::npos) << info;

  const auto expect_same = [&](const fs::path& png, const std::string& prompt, const std::string& seed) {
    const fs::path reference = h.dir.path() / ("ref-" + seed + ".png");
    const auto r = run_process({kRgbaqd, "render", "--model", model().dir().string(), "--prompt", prompt, "--seed", seed, "--size", "256",
                                "-o", reference.string(), "--threads", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto a = storage::read_png(png), b = storage::read_png(reference);
    EXPECT_EQ(a.channels, 4);
    EXPECT_EQ(a.width, 256);
    EXPECT_EQ(a.height, 256);
    EXPECT_TRUE(a.rgba == b.rgba) << png;
    EXPECT_NE(a.texts.count("parameters"), 0u);  // the PNG as written, metadata and all
  };
  expect_same(got / "openai-0.png", "a red fox", "11");
  expect_same(got / "openai-1.png", "a red fox", "12");
  expect_same(got / "a1111-0.png", "a blue bird", "5");
  // Both went through the durable queue: runs like any other, outputs in DATA_DIR/api-renders.
  const auto runs = h.get("/api/v1/runs").json_body()["runs"];
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["out_dir"], (h.d.data_dir() / "api-renders").string());
}

// Reads SSE events ("id", "event", "data") from a raw connection until `stop` says so or time runs out.
struct SseEvent {
  std::string id, event;
  json data;
};
std::vector<SseEvent> read_events(int fd, const std::function<bool(const SseEvent&)>& stop, int timeout_ms) {
  std::vector<SseEvent> events;
  std::string buffer;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms) * test_time_scale();
  while (std::chrono::steady_clock::now() < until) {
    buffer += read_some(fd, 200);
    for (size_t end; (end = buffer.find("\n\n")) != std::string::npos;) {
      const std::string block = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      SseEvent e;
      std::istringstream lines(block);
      for (std::string line; std::getline(lines, line);) {
        if (line.rfind("id: ", 0) == 0) e.id = line.substr(4);
        if (line.rfind("event: ", 0) == 0) e.event = line.substr(7);
        if (line.rfind("data: ", 0) == 0) e.data = json::parse(line.substr(6), nullptr, false);
      }
      if (e.event.empty()) continue;
      events.push_back(e);
      if (stop(e)) return events;
    }
    if (buffer.find("<closed>") != std::string::npos) break;
  }
  return events;
}

int open_events(const HttpDaemon& h, const std::string& last_id) {
  const int fd = tcp_connect(h.port);
  std::string req = "GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(h.port) + "\r\nAuthorization: Bearer " + h.token + "\r\n";
  if (!last_id.empty()) req += "Last-Event-ID: " + last_id + "\r\n";
  req += "\r\n";
  EXPECT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  return fd;
}

TEST(DaemonHttp, AnEventStreamResumedWithLastEventIdMissesNoDoneEvent) {
  HttpDaemon h;
  const int first = open_events(h, "");
  EXPECT_NE(read_some(first, 1000).find("text/event-stream"), std::string::npos);
  const auto submitted = h.post_json("/api/v1/runs", {{"rows", {{{"prompt", "a fox"}, {"seed", "1-4"}, {"size", "128"}}}},
                                                      {"out_dir", (h.dir.path() / "out").string()}});
  ASSERT_EQ(submitted.status, 200) << submitted.body;
  const int64_t run = submitted.json_body()["run"];
  // Read up to the first job_done, then drop the connection while the run goes on.
  std::set<int64_t> done;
  std::string last_id;
  for (const auto& e : read_events(first, [](const SseEvent& e) { return e.event == "job_done"; }, 60000)) {
    last_id = e.id;
    if (e.event == "job_done") done.insert(e.data["job"].get<int64_t>());
  }
  close(first);
  ASSERT_EQ(done.size(), 1u);
  // Wait until the run is done while nobody listens.
  for (int i = 0; i < 600 && h.get("/api/v1/runs/" + std::to_string(run)).json_body()["counts"]["done"] != 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const int second = open_events(h, last_id);
  bool run_done = false;
  for (const auto& e : read_events(second, [](const SseEvent& e) { return e.event == "run_done"; }, 30000)) {
    EXPECT_NE(e.event, "resync");
    if (e.event == "job_done") {
      EXPECT_TRUE(done.insert(e.data["job"].get<int64_t>()).second) << "seen twice: " << e.data;
    }
    run_done = run_done || e.event == "run_done";
  }
  close(second);
  EXPECT_TRUE(run_done);
  EXPECT_EQ(done.size(), 4u);
  // An id from another start of the daemon: told to read the state afresh.
  const int stale = open_events(h, "1-1");
  const auto events = read_events(stale, [](const SseEvent& e) { return e.event == "resync"; }, 5000);
  close(stale);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().event, "resync");
}

TEST(DaemonHttp, HostileClientsAreBoundedAndTheDaemonStillAnswers) {
  HttpDaemon h({"--frame-timeout-s", "2", "--max-connections", "32"});
  const long rss_before = rss_kib(h.d.pid());
  // A 100 MB body is refused from its Content-Length, before any of it is read.
  {
    const int fd = tcp_connect(h.port);
    const std::string req = "POST /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(h.port) +
                            "\r\nContent-Type: text/csv\r\nContent-Length: 104857600\r\n\r\nprompt\n";
    ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    const auto reply = read_some(fd, 3000);
    EXPECT_NE(reply.find(" 413 "), std::string::npos) << reply;
    close(fd);
  }
  // A header that never ends: refused at its bound.
  {
    const int fd = tcp_connect(h.port);
    const std::string start = "GET /api/v1/status HTTP/1.1\r\nX-Long: ";
    ::send(fd, start.data(), start.size(), MSG_NOSIGNAL);
    const std::string filler(64 << 10, 'a');
    ::send(fd, filler.data(), filler.size(), MSG_NOSIGNAL);
    const auto reply = read_some(fd, 3000);
    EXPECT_NE(reply.find(" 431 "), std::string::npos) << reply.substr(0, 200);
    close(fd);
  }
  // A client that stalls mid-header is closed after the timeout.
  {
    const int fd = tcp_connect(h.port);
    ::send(fd, "GET /api/v1/status HTTP/1.1\r\n", 29, MSG_NOSIGNAL);
    const auto t0 = std::chrono::steady_clock::now();
    const auto reply = read_some(fd, 10000 * test_time_scale());
    EXPECT_NE(reply.find("<closed>"), std::string::npos);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8) * test_time_scale());
    close(fd);
  }
  // 200 idle connections: past the cap each newcomer closes the one that has waited longest, so at most
  // the cap stay open; the socket and HTTP still answer.
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) idle.push_back(tcp_connect(h.port));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int closed = 0;
  for (int fd : idle) {
    if (read_some(fd, 20).find("<closed>") != std::string::npos) ++closed;
  }
  EXPECT_GE(closed, 200 - 32);
  EXPECT_EQ(status(h.d)["health"]["ok"], true);
  for (int fd : idle) close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(h.get("/api/v1/status").status, 200);
  const long rss_after = rss_kib(h.d.pid());
  std::printf("rgbaqd VmRSS: %ld KiB before, %ld KiB after the hostile clients\n", rss_before, rss_after);
  EXPECT_LT(rss_after - rss_before, 64 * 1024);
}

// Every route the server has is documented, every documented operation is a route, and each GET that
// needs no id answers with a status its document lists, as JSON where it says so.
TEST(DaemonHttp, TheOpenApiDocumentIsWhatTheServerAnswers) {
  HttpDaemon h;
  const auto doc = h.get("/openapi.json").json_body();
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["openapi"], "3.1.0");
  std::set<std::string> documented, routed;
  for (const auto& [path, ops] : doc["paths"].items()) {
    for (const auto& [verb, op] : ops.items()) documented.insert(verb + " " + path);
  }
  for (const auto& r : daemon::http::http_routes()) {
    std::string verb(boost::beast::http::to_string(r.verb));
    for (auto& c : verb) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    routed.insert(verb + " " + std::string(r.path));
  }
  EXPECT_EQ(documented, routed);
  ASSERT_EQ(rgbaq(h.d, {"submit", "--prompt", "x", "--seeds", "1", "--size", "128", "--out", (h.dir.path() / "o").string(), "--wait"}).exit_code, 0);
  for (const auto& [path, ops] : doc["paths"].items()) {
    if (!ops.contains("get") || path == "/api/v1/events") continue;
    std::string target = path;
    for (const auto& [name, value] : {std::pair{"{run}", "1"}, {"{job}", "1"}, {"{file}", "app.js"}}) {
      if (const auto at = target.find(name); at != std::string::npos) target.replace(at, std::string(name).size(), value);
    }
    const auto r = h.get(target);
    const auto& responses = ops["get"]["responses"];
    EXPECT_TRUE(responses.contains(std::to_string(r.status))) << target << " answered " << r.status << ": " << r.body;
    const auto& content = responses[std::to_string(r.status)]["content"];
    if (content.contains("application/json")) {
      EXPECT_TRUE(r.json_body().is_object() || r.json_body().is_array()) << target;
    }
    for (const auto& field : content.value("application/json", json::object()).value("schema", json::object()).value("required", json::array())) {
      EXPECT_TRUE(r.json_body().contains(field.get<std::string>())) << target << " lacks " << field;
    }
  }
  // A route that is not there, a method that is not allowed, an id that is not one.
  EXPECT_EQ(h.get("/api/v1/nothing").status, 404);
  EXPECT_EQ(h.post_json("/api/v1/status", json::object()).status, 405);
  EXPECT_EQ(h.get("/api/v1/jobs/x").status, 400);
  EXPECT_EQ(h.get("/api/v1/jobs/999").status, 404);
}

// format=csv is what `rgbaq export --format csv` writes, byte for byte (quoted cells, a formula defused).
TEST(DaemonHttp, ARunExportsAsCsvAsRgbaqExportWritesIt) {
  HttpDaemon h;
  const auto submitted = h.post_json("/api/v1/runs", {{"rows", {{{"prompt", "=a \"quoted\", fox"}, {"seed", "1-2"}, {"size", "128"}},
                                                                {{"prompt", "a plain cat"}, {"seed", "3"}, {"size", "128"}, {"name", "cat"}}}},
                                                      {"out_dir", (h.dir.path() / "out").string()}});
  ASSERT_EQ(submitted.status, 200) << submitted.body;
  wait_until_idle(h.d);
  ASSERT_EQ(h.post_json("/api/v1/marks", {{"jobs", {1}}, {"mark", "star"}}).status, 200);
  const auto csv = h.get("/api/v1/runs/1/export?format=csv");
  ASSERT_EQ(csv.status, 200) << csv.body;
  EXPECT_EQ(csv.headers["content-type"].rfind("text/csv", 0), 0u) << csv.headers["content-type"];
  EXPECT_NE(csv.headers["content-disposition"].find("run-1.csv"), std::string::npos);
  const auto cli = rgbaq(h.d, {"export", "1", "--format", "csv"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(csv.body, cli.out);
  EXPECT_NE(csv.body.find("\"'=a \"\"quoted\"\", fox\""), std::string::npos) << csv.body;
  EXPECT_EQ(std::count(csv.body.begin(), csv.body.end(), '\n'), 4);
  // And with a mark filter, as the CLI's --marked.
  const auto starred = h.get("/api/v1/runs/1/export?format=csv&marked=star");
  EXPECT_EQ(starred.body, rgbaq(h.d, {"export", "1", "--format", "csv", "--marked", "star"}).out);
  EXPECT_EQ(h.get("/api/v1/runs/1/export?format=xml").status, 400);
}

TEST(DaemonHttp, ASubmittedFileIsValidatedWholeWithLineAndField) {
  TempDir root;
  HttpDaemon h({"--copy-root", root.path().string()});
  const auto r = http_request(h.port, "POST", "/api/v1/runs?out_dir=" + (h.dir.path() / "out").string(),
                              {h.bearer(), {"Content-Type", "text/csv"}}, "prompt,seed\na fox,1\na cat,banana\n");
  EXPECT_EQ(r.status, 400);
  const auto error = r.json_body()["error"];
  EXPECT_EQ(error["code"], "invalid_file");
  ASSERT_EQ(error["details"].size(), 1u);
  EXPECT_EQ(error["details"][0]["line"], 3);
  EXPECT_EQ(error["details"][0]["field"], "seed");
  EXPECT_EQ(h.get("/api/v1/runs").json_body()["runs"].size(), 0u);  // nothing queued
  // Priorities and other numbers go through the core's checks, as on the socket.
  const auto ok = http_request(h.port, "POST", "/api/v1/runs?size=128&out_dir=" + (h.dir.path() / "out").string(),
                               {h.bearer(), {"Content-Type", "text/csv"}}, "prompt,seed\na fox,1\n");
  ASSERT_EQ(ok.status, 200) << ok.body;
  // A job's image before it is done is a conflict; after, the PNG as written.
  const int64_t job = h.get("/api/v1/runs/1/jobs").json_body()["jobs"][0]["id"];
  for (int i = 0; i < 600 && h.get("/api/v1/jobs/" + std::to_string(job)).json_body()["state"] != "done"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const auto image = h.get("/api/v1/jobs/" + std::to_string(job) + "/image");
  EXPECT_EQ(image.status, 200);
  EXPECT_EQ(image.headers["content-type"], "image/png");
  std::ifstream file(h.get("/api/v1/jobs/" + std::to_string(job)).json_body()["output"].get<std::string>(), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), {});
  EXPECT_TRUE(image.body == bytes);
  const auto thumb = h.get("/api/v1/jobs/" + std::to_string(job) + "/thumbnail?size=32");
  EXPECT_EQ(thumb.status, 200);
  EXPECT_EQ(thumb.body.substr(0, 4), "RIFF");
  EXPECT_EQ(thumb.body.substr(8, 4), "WEBP");
  EXPECT_EQ(h.get("/api/v1/jobs/" + std::to_string(job) + "/thumbnail?size=5000").status, 400);
  // The gallery's copy: into a folder under a --copy-root only, also when a link points elsewhere.
  const auto copied = h.post_json("/api/v1/jobs/copy", {{"jobs", {job}}, {"folder", (root.path() / "picks").string()}});
  ASSERT_EQ(copied.status, 200) << copied.body;
  EXPECT_EQ(copied.json_body()["copied"], 1);
  std::ifstream picked(root.path() / "picks" / fs::path(h.get("/api/v1/jobs/" + std::to_string(job)).json_body()["output"].get<std::string>()).filename(),
                       std::ios::binary);
  EXPECT_TRUE(std::string((std::istreambuf_iterator<char>(picked)), {}) == bytes);
  struct stat picked_stat {};
  ASSERT_EQ(stat((root.path() / "picks").c_str(), &picked_stat), 0);
  EXPECT_EQ(picked_stat.st_mode & 0777, 0777u & ~current_umask() & 0777u);  // the user's folder: the user's umask
  EXPECT_EQ(h.post_json("/api/v1/jobs/copy", {{"jobs", {job}}, {"folder", (root.path() / "picks").string()}}).json_body()["already_there"], 1);
  EXPECT_EQ(h.post_json("/api/v1/jobs/copy", {{"jobs", {job}}, {"folder", (h.dir.path() / "elsewhere").string()}}).status, 400);
  fs::create_directory_symlink(h.dir.path(), root.path() / "link");
  EXPECT_EQ(h.post_json("/api/v1/jobs/copy", {{"jobs", {job}}, {"folder", (root.path() / "link" / "x").string()}}).status, 400);
  EXPECT_FALSE(fs::exists(h.dir.path() / "x"));
}

}  // namespace
}  // namespace rgbaq
