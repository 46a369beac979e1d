// The fourth hostile round against the HTTP server and the files it serves (issue 42, items 1-10),
// through a real rgbaqd: raw sockets for the framing (HEAD answers, bodies of unknown length, bodies
// from strangers, idle and abandoned connections, a resumed event stream) and another user (uid 65534,
// when the test runs as root as CI does) planting things at output paths in a shared sticky folder: a
// FIFO, links to the owner's private files, a PNG bomb, and a copy folder under their control.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <set>

#include "tests/daemon/http_client.h"
#include "tests/daemon/png_bomb.h"
#include "tests/peak_memory.h"

namespace rgbaq {
namespace {

constexpr uid_t kOther = 65534;

// As uid 65534 (or as ourselves when not root): runs `argv` and returns its exit code.
int as_other(std::vector<std::string> argv) {
  if (geteuid() == 0) argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
  return run_process(argv).exit_code;
}

std::string request_text(const HttpDaemon& h, const std::string& method, const std::string& target, const std::string& extra = "") {
  return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(h.port) + "\r\nAuthorization: Bearer " + h.token +
         "\r\n" + extra + "\r\n";
}

// The body after the first response's header (the reply of raw_exchange / read_some).
std::string after_header(const std::string& reply) {
  const auto end = reply.find("\r\n\r\n");
  return end == std::string::npos ? "" : reply.substr(end + 4);
}

// Reads from `fd` until one whole response has arrived (its header, and as much body as its
// Content-Length says; `head`: the header alone), then a little longer for bytes that should not be
// there; or until the server closes or `timeout_ms` passes.
std::string read_response(int fd, bool head, int timeout_ms) {
  std::string text;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto end = text.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t length = 0;
      const auto at = text.find("Content-Length: ");
      if (at != std::string::npos && at < end) length = std::stoul(text.substr(at + 16));
      if (head || text.size() >= end + 4 + length) return text + read_some(fd, 200);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) return text;
    const std::string more = read_some(fd, static_cast<int>(std::min<long>(left, 50)));
    text += more;
    if (more.find("<closed>") != std::string::npos) return text;
  }
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A daemon whose outputs go to a folder every user may add to (sticky, as /tmp): what another user
// can do to an output path there is what these tests do.
struct SharedOutputs {
  HttpDaemon h;
  fs::path shared;
  std::map<std::string, int64_t> job_of;  // output file name -> job id
  explicit SharedOutputs(std::vector<std::string> extra = {}) : h(std::move(extra)) {
    ::chmod(h.dir.path().c_str(), 0755);
    shared = h.dir.path() / "shared";
    fs::create_directories(shared);
    ::chmod(shared.c_str(), 01777);
    const auto r = rgbaq(h.d, {"submit", "-", "--size", "128", "--out", shared.string(), "--wait"}, "prompt,seed,name\na fox,1-3,fox\n");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    for (const auto& j : jobs_of(h.d)) job_of[fs::path(j["output"].get<std::string>()).filename()] = j["id"].get<int64_t>();
  }
  std::string image(const std::string& name) const { return "/api/v1/jobs/" + std::to_string(job_of.at(name)) + "/image"; }
  std::string thumbnail(const std::string& name) const { return "/api/v1/jobs/" + std::to_string(job_of.at(name)) + "/thumbnail"; }
  // The owner moves a finished image away (to look at it elsewhere, say): its name is free in the folder.
  void move_away(const std::string& name) const { fs::rename(shared / name, h.dir.path() / ("moved-" + name)); }
  std::string get(const std::string& target, int timeout_ms = 3000) const {
    return raw_exchange(h.port, request_text(h, "GET", target, "Connection: close\r\n"), timeout_ms * test_time_scale());
  }
};

// Item 1: nothing follows a HEAD answer's header, and the connection goes on with the next request.
TEST(DaemonHttpHostile, AHeadAnswerIsItsHeaderAlone) {
  HttpDaemon h;
  ASSERT_EQ(rgbaq(h.d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(h.d, {"submit", "--prompt", "a fox", "--seeds", "1-2", "--size", "128", "--out", (h.dir.path() / "out").string()}).exit_code, 0);
  for (const std::string target : {"/api/v1/status", "/openapi.json", "/api/v1/runs/1/export?format=jsonl", "/", "/web/app.js"}) {
    const int fd = tcp_connect(h.port);
    const std::string head = request_text(h, "HEAD", target);
    ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    const std::string reply = read_response(fd, true, 3000 * test_time_scale());
    EXPECT_EQ(status_of(reply), 200) << target << ": " << reply.substr(0, 300);
    EXPECT_EQ(after_header(reply), "") << target << ": bytes after the header of a HEAD answer";
    // The same connection takes the next request, and its answer is the first thing on it.
    const std::string get = request_text(h, "GET", "/api/v1/status");
    ::send(fd, get.data(), get.size(), MSG_NOSIGNAL);
    const std::string next = read_response(fd, false, 3000 * test_time_scale());
    EXPECT_EQ(status_of(next), 200) << target << ": " << next.substr(0, 200);
    EXPECT_NE(next.find("\"health\""), std::string::npos) << target;
    ::close(fd);
  }
  // An event stream's HEAD: the header, then the connection ends.
  const std::string events = raw_exchange(h.port, request_text(h, "HEAD", "/api/v1/events"), 2000 * test_time_scale());
  EXPECT_EQ(status_of(events), 200) << events;
  EXPECT_EQ(after_header(events), "<closed>") << events;
}

// Item 2: a body whose length cannot be known (a Transfer-Encoding other than chunked) is refused and
// the connection closed; what it held is never read as a request.
TEST(DaemonHttpHostile, ABodyOfUnknownLengthIsRefusedNotRunAsTheNextRequest) {
  HttpDaemon h;
  const std::string hidden = request_text(h, "POST", "/api/v1/pause", "Content-Length: 0\r\n");
  for (const std::string coding : {"gzip", "chunked, gzip", "identity", "deflate"}) {
    const std::string request = request_text(h, "POST", "/api/v1/runs", "Content-Type: application/json\r\nTransfer-Encoding: " + coding + "\r\n") + hidden;
    const std::string reply = raw_exchange(h.port, request, 2000 * test_time_scale());
    EXPECT_EQ(status_of(reply), 400) << coding << ": " << reply;
    EXPECT_NE(reply.find("Transfer-Encoding"), std::string::npos) << reply;
    EXPECT_EQ(count_of(reply, "HTTP/1.1 "), 1) << coding << ": the hidden request was answered: " << reply;
    EXPECT_NE(reply.find("<closed>"), std::string::npos) << coding;
    EXPECT_EQ(status(h.d)["paused"], false) << coding << ": the hidden POST /api/v1/pause ran";
  }
  // Chunked, the one coding whose end is known, still works.
  const std::string chunked = request_text(h, "POST", "/api/v1/runs?dry_run=1&out_dir=" + (h.dir.path() / "out").string(), "Content-Type: text/csv\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n") +
                              "d\r\nprompt\na fox\n\r\n0\r\n\r\n";
  const std::string reply = raw_exchange(h.port, chunked, 5000 * test_time_scale());
  EXPECT_EQ(status_of(reply), 200) << reply;
}

// Item 3: a request without valid credentials is answered 401 from its header; its body is never
// buffered, so strangers cannot make rgbaqd hold their uploads.
TEST(DaemonHttpHostile, AStrangersBodyIsNeverBuffered) {
  HttpDaemon h({"--max-frame-mb", "16"});
  const long before = rss_kib(h.d.pid());
  constexpr int kConnections = 24;
  const size_t length = (16u << 20) - 1;
  std::vector<int> fds;
  int refused_at_header = 0;
  for (int i = 0; i < kConnections; ++i) {
    const int fd = tcp_connect(h.port);
    const std::string header = "POST /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(h.port) +
                               "\r\nContent-Type: text/csv\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n";
    ::send(fd, header.data(), header.size(), MSG_NOSIGNAL);
    // The answer comes before a byte of the body is sent.
    const std::string reply = read_some(fd, 2000 * test_time_scale());
    if (status_of(reply) == 401) ++refused_at_header;
    fds.push_back(fd);
  }
  EXPECT_EQ(refused_at_header, kConnections);
  // Nor on the routes that need no token (the gallery's page, its files): they take no body at all.
  for (const std::string target : {"/", "/web/app.js"}) {
    const std::string reply = raw_exchange(h.port, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(h.port) +
                                                       "\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n",
                                           2000 * test_time_scale());
    EXPECT_EQ(status_of(reply), 400) << target << ": " << reply.substr(0, 300);
    EXPECT_NE(reply.find("GET takes no body"), std::string::npos) << reply.substr(0, 300);
  }
  // Each sends its body anyway, as far as the server takes it.
  const std::string block(1u << 20, 'x');
  for (const int fd : fds) {
    timeval limit{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    for (size_t sent = 0; sent < length;) {
      const ssize_t n = ::send(fd, block.data(), std::min(block.size(), length - sent), MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
  }
  const long after = rss_kib(h.d.pid());
  for (const int fd : fds) ::close(fd);
  std::printf("rgbaqd VmRSS: %ld KiB before, %ld KiB after %d strangers' %zu-byte bodies\n", before, after, kConnections, length);
  EXPECT_LT(after - before, 48 * 1024) << "KiB";
  EXPECT_EQ(h.get("/api/v1/status").status, 200);
}

// Item 4: connections that send nothing, or whose clients hung up while their image-API runs wait, do
// not lock the owner out: a hang-up frees its slot at once, and at the cap the connection that has
// waited longest without a request makes room; a live request is never cut for a newcomer.
TEST(DaemonHttpHostile, IdleAndAbandonedConnectionsDoNotLockTheOwnerOut) {
  HttpDaemon h({"--max-connections", "8"});
  ASSERT_EQ(rgbaq(h.d, {"pause"}).exit_code, 0);
  // The owner's upload, slow: its header screened, its body still coming. The oldest connection, but live.
  const std::string csv = "prompt\na fox\n";
  const int upload = tcp_connect(h.port);
  const std::string upload_header = request_text(h, "POST", "/api/v1/runs?out_dir=" + (h.dir.path() / "out").string(),
                                                 "Content-Type: text/csv\r\nContent-Length: " + std::to_string(csv.size()) + "\r\n");
  ::send(upload, upload_header.data(), upload_header.size(), MSG_NOSIGNAL);
  ::send(upload, csv.data(), 3, MSG_NOSIGNAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Seven that connect and send nothing.
  std::vector<int> idle;
  for (int i = 0; i < 7; ++i) {
    idle.push_back(tcp_connect(h.port));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(h.get("/api/v1/status").status, 200);
  EXPECT_EQ(h.get("/api/v1/runs").status, 200);
  EXPECT_NE(read_some(idle[0], 500).find("<closed>"), std::string::npos) << "the oldest idle connection made room";
  EXPECT_EQ(read_some(idle[6], 300), "") << "the newest idle connection is still open";
  ::send(upload, csv.data() + 3, csv.size() - 3, MSG_NOSIGNAL);
  EXPECT_EQ(status_of(read_some(upload, 3000 * test_time_scale())), 200) << "the live upload was cut to make room";
  ::close(upload);
  for (const int fd : idle) ::close(fd);

  // Eight image-API clients that give up while their runs wait in the paused queue.
  const std::string body = R"({"prompt":"a fox","size":"128x128"})";
  for (int i = 0; i < 8; ++i) {
    const int fd = tcp_connect(h.port);
    const std::string request = request_text(h, "POST", "/v1/images/generations",
                                             "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n") + body;
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::close(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto owner = h.get("/api/v1/status");
  EXPECT_EQ(owner.status, 200) << owner.body;

  // Eight that wait for their images, live: a newcomer is told 503, and none of them is cut for it.
  std::vector<int> live;
  for (int i = 0; i < 8; ++i) {
    const int fd = tcp_connect(h.port);
    const std::string request = request_text(h, "POST", "/v1/images/generations",
                                             "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n") + body;
    ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    live.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(status_of(raw_exchange(h.port, request_text(h, "GET", "/api/v1/status"), 1000)), 503);
  for (const int fd : live) EXPECT_EQ(read_some(fd, 100), "") << "a live request was cut";
  for (const int fd : live) ::close(fd);
}

// Item 6: a client that reconnects with a Last-Event-ID from before more events than the stream holds
// is told to resync, and stays connected; it is never dropped as a slow reader for the replay.
TEST(DaemonHttpHostile, AResumedEventStreamGetsResyncNotDropped) {
  HttpDaemon h({"--client-queue-kb", "8"});
  const int first = tcp_connect(h.port);
  const std::string subscribe = request_text(h, "GET", "/api/v1/events");
  ::send(first, subscribe.data(), subscribe.size(), MSG_NOSIGNAL);
  ASSERT_EQ(rgbaq(h.d, {"submit", "--prompt", "a fox", "--seeds", "1-30", "--size", "128", "--out", (h.dir.path() / "out").string()}).exit_code, 0);
  // The id of the first event, then the connection is gone while 30 jobs' events pass.
  std::string last_id;
  for (int i = 0; i < 100 && last_id.empty(); ++i) {
    const std::string text = read_some(first, 100);
    if (const auto at = text.find("\nid: "); at != std::string::npos) last_id = text.substr(at + 5, text.find('\n', at + 5) - at - 5);
    if (const auto at = text.rfind("id: ", 0); at == 0 && last_id.empty()) last_id = text.substr(4, text.find('\n') - 4);
  }
  ::close(first);
  ASSERT_FALSE(last_id.empty());
  wait_until_idle(h.d);
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int again = tcp_connect(h.port);
    const std::string resume = request_text(h, "GET", "/api/v1/events", "Last-Event-ID: " + last_id + "\r\n");
    ::send(again, resume.data(), resume.size(), MSG_NOSIGNAL);
    const std::string text = read_some(again, 1500 * test_time_scale());
    EXPECT_EQ(status_of(text), 200) << text.substr(0, 200);
    EXPECT_NE(text.find("event: resync"), std::string::npos) << "attempt " << attempt << ": " << text.substr(0, 400);
    EXPECT_EQ(text.find("<closed>"), std::string::npos) << "attempt " << attempt << ": dropped";
    ::close(again);
  }
}

// Item 7: a FIFO at an output path is refused at once, and every other image is still served.
TEST(DaemonHttpHostile, AFifoAtAnOutputPathBlocksNothing) {
  SharedOutputs s;
  s.move_away("fox_1.png");
  ASSERT_EQ(as_other({"/usr/bin/mkfifo", (s.shared / "fox_1.png").string()}), 0);
  for (const auto& target : {s.image("fox_1.png"), s.thumbnail("fox_1.png"), "/api/v1/jobs/" + std::to_string(s.job_of.at("fox_1.png")) + "/parameters"}) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string reply = s.get(target);
    EXPECT_EQ(status_of(reply), 409) << target << ": " << reply.substr(0, 300);
    EXPECT_NE(reply.find("is not a regular file"), std::string::npos) << reply;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2) * test_time_scale());
  }
  for (const char* name : {"fox_2.png", "fox_3.png"}) {
    EXPECT_EQ(status_of(s.get(s.image(name))), 200) << name;
    EXPECT_EQ(status_of(s.get(s.thumbnail(name))), 200) << name;
  }
  // Another user's PNG of the right size, under the name of an output moved away: theirs, not the job's.
  if (geteuid() == 0) {
    s.move_away("fox_3.png");
    ASSERT_EQ(as_other({"/bin/cp", (s.h.dir.path() / "moved-fox_3.png").string(), (s.shared / "fox_3.png").string()}), 0);
    const std::string theirs = s.get(s.image("fox_3.png"));
    EXPECT_EQ(status_of(theirs), 409) << theirs.substr(0, 300);
    EXPECT_NE(theirs.find("belongs to uid 65534"), std::string::npos) << theirs.substr(0, 300);
  }
}

// Item 8: a link planted where a PNG was, or in place of the output folder, is never followed: neither
// the image route nor the gallery's copy hands out the owner's private file.
TEST(DaemonHttpHostile, APlantedLinkIsNeverFollowedToServeOrCopy) {
  const TempDir roots;
  SharedOutputs s({"--copy-root", roots.path().string()});
  const fs::path key = s.h.dir.path() / "id_ed25519";
  write_file(key, "-----BEGIN OPENSSH PRIVATE KEY----- the owner's\n");
  ::chmod(key.c_str(), 0600);
  s.move_away("fox_1.png");
  ASSERT_EQ(as_other({"/bin/ln", "-s", key.string(), (s.shared / "fox_1.png").string()}), 0);
  const std::string reply = s.get(s.image("fox_1.png"));
  EXPECT_EQ(status_of(reply), 409) << reply;
  EXPECT_NE(reply.find("is a symbolic link"), std::string::npos) << reply;
  EXPECT_EQ(reply.find("PRIVATE KEY"), std::string::npos);

  const fs::path picked = roots.path() / "picked";
  const auto copy = s.h.post_json("/api/v1/jobs/copy", {{"jobs", {s.job_of.at("fox_1.png"), s.job_of.at("fox_2.png")}}, {"folder", picked.string()}});
  ASSERT_EQ(copy.status, 200) << copy.body;
  EXPECT_EQ(copy.json_body()["copied"], 1) << copy.body;
  EXPECT_FALSE(fs::exists(fs::symlink_status(picked / "fox_1.png"))) << "the key's content was copied";
  EXPECT_TRUE(fs::exists(picked / "fox_2.png"));

  // The folder itself swapped for a link to a private folder holding a PNG of that name.
  const fs::path vault = s.h.dir.path() / "vault";
  fs::create_directories(vault);
  ::chmod(vault.c_str(), 0700);
  fs::copy_file(s.shared / "fox_3.png", vault / "fox_3.png");
  fs::rename(s.shared, s.h.dir.path() / "shared-moved");
  fs::create_directories(s.shared.parent_path());
  ASSERT_EQ(::chmod(s.h.dir.path().c_str(), 01777), 0);  // the folder's parent, shared as well
  ASSERT_EQ(as_other({"/bin/ln", "-s", vault.string(), s.shared.string()}), 0);
  const std::string through = s.get(s.image("fox_3.png"));
  EXPECT_EQ(status_of(through), 409) << through.substr(0, 300);
  EXPECT_NE(through.find("cannot be opened safely"), std::string::npos) << through.substr(0, 300);
}

// Item 9: the gallery's copy refuses a destination another user can change, as submit refuses such an
// --out, so it can never be redirected out of the copy root between two copies.
TEST(DaemonHttpHostile, ACopyIntoAFolderAnotherUserControlsIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a folder to uid 65534";
  const TempDir roots;
  ::chmod(roots.path().c_str(), 0755);
  SharedOutputs s({"--copy-root", roots.path().string()});
  const fs::path theirs = roots.path() / "theirs", open = roots.path() / "open";
  fs::create_directories(theirs);
  fs::create_directories(open);
  ASSERT_EQ(::chown(theirs.c_str(), kOther, kOther), 0);
  ::chmod(open.c_str(), 0777);
  const json jobs = {s.job_of.at("fox_1.png")};
  const auto r1 = s.h.post_json("/api/v1/jobs/copy", {{"jobs", jobs}, {"folder", (theirs / "picked").string()}});
  EXPECT_EQ(r1.status, 400) << r1.body;
  EXPECT_NE(r1.body.find("belongs to uid 65534"), std::string::npos) << r1.body;
  EXPECT_FALSE(fs::exists(theirs / "picked"));
  const auto r2 = s.h.post_json("/api/v1/jobs/copy", {{"jobs", jobs}, {"folder", (open / "picked").string()}});
  EXPECT_EQ(r2.status, 400) << r2.body;
  EXPECT_NE(r2.body.find("writable by every user"), std::string::npos) << r2.body;
  // The swap the check prevents: their folder made a link to a root-only one after a copy.
  const fs::path root_only = s.h.dir.path() / "root-only";
  fs::create_directories(root_only);
  ::chmod(root_only.c_str(), 0700);
  ASSERT_EQ(as_other({"/bin/ln", "-s", root_only.string(), (theirs / "picked").string()}), 0);
  const auto r3 = s.h.post_json("/api/v1/jobs/copy", {{"jobs", jobs}, {"folder", (theirs / "picked").string()}});
  EXPECT_EQ(r3.status, 400) << r3.body;
  EXPECT_TRUE(fs::is_empty(root_only)) << "a copy landed in the link's target";
  // A folder of ours under the root takes the copy, with the user's modes.
  const auto ok = s.h.post_json("/api/v1/jobs/copy", {{"jobs", jobs}, {"folder", (roots.path() / "mine" / "picked").string()}});
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.json_body()["copied"], 1);
  struct stat st {};
  ASSERT_EQ(::stat((roots.path() / "mine" / "picked" / "fox_1.png").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u & ~current_umask());
}

// Item 10: a PNG of another size planted at an output path is judged by its header: no thumbnail of it
// is made, and the daemon's memory barely moves.
TEST(DaemonHttpHostile, APlantedBigPngIsNeverDecodedForAThumbnail) {
  SharedOutputs s;
  const fs::path bomb = s.h.dir.path() / "bomb.png";
  write_file(bomb, png_bomb(12288));
  ::chmod(bomb.c_str(), 0644);
  s.move_away("fox_1.png");
  ASSERT_EQ(as_other({"/bin/cp", bomb.string(), (s.shared / "fox_1.png").string()}), 0);
  const std::string pid = std::to_string(s.h.d.pid());
  { std::ofstream("/proc/" + pid + "/clear_refs") << "5"; }  // the daemon's peak from here on
  const uint64_t before = proc_status_bytes("VmRSS", pid);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string reply = s.get(s.thumbnail("fox_1.png") + "?size=1024", 30000);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t growth = proc_status_bytes("VmHWM", pid) - before;
  std::printf("a planted 12288x12288 PNG's thumbnail: answered %d in %.3f s, peak RSS +%llu MiB\n", status_of(reply), seconds,
              static_cast<unsigned long long>(growth >> 20));
  EXPECT_EQ(status_of(reply), 409) << reply.substr(0, 300);
  EXPECT_NE(reply.find("is a 12288x12288 PNG, not the job's 128x128 image"), std::string::npos) << reply.substr(0, 300);
  EXPECT_LT(growth, 64u << 20);
  EXPECT_LT(seconds, 2.0 * test_time_scale());
  EXPECT_EQ(status_of(s.get(s.image("fox_1.png"))), 409);
  EXPECT_EQ(status_of(s.get(s.thumbnail("fox_2.png"))), 200);
}

// The media key (item 5's companion): it opens the images and thumbnails of this daemon, until it
// expires, and nothing else; a cookie grants nothing, and the login sets none.
TEST(DaemonHttpHostile, TheMediaKeyOpensImagesOnlyAndNoCookieGrantsAnything) {
  SharedOutputs s;
  const auto login = http_request(s.h.port, "GET", "/?token=" + s.h.token);
  EXPECT_EQ(login.status, 303);
  EXPECT_EQ(login.headers["location"], "/#token=" + s.h.token);
  EXPECT_EQ(login.headers.count("set-cookie"), 0u) << login.headers["set-cookie"];
  EXPECT_EQ(http_request(s.h.port, "GET", "/api/v1/status", {{"Cookie", "rgbaq_token_" + std::to_string(s.h.port) + "=" + s.h.token}}).status, 401);
  // The page and its files hold nothing of the queue: anyone who reaches the address gets them.
  EXPECT_EQ(http_request(s.h.port, "GET", "/").status, 200);
  EXPECT_EQ(http_request(s.h.port, "GET", "/web/api.js").status, 200);

  const auto issued = s.h.get("/api/v1/media-key");
  ASSERT_EQ(issued.status, 200) << issued.body;
  const std::string key = issued.json_body()["key"];
  const int64_t expires = issued.json_body()["expires_at"];
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(static_cast<double>(expires - now), 12 * 3600, 60);
  // The key: EXPIRY.HMAC-SHA256(token, "rgbaq media key EXPIRY"), computed here with OpenSSL's command line.
  const fs::path message = s.h.dir.path() / "message";
  write_file(message, "rgbaq media key " + std::to_string(expires));
  const auto mac = run_process({"/usr/bin/openssl", "dgst", "-sha256", "-hmac", s.h.token, "-r", message.string()});
  ASSERT_EQ(mac.exit_code, 0) << mac.err;
  EXPECT_EQ(key, std::to_string(expires) + "." + mac.out.substr(0, 64));

  const std::string image = s.image("fox_1.png"), thumbnail = s.thumbnail("fox_1.png");
  EXPECT_EQ(http_request(s.h.port, "GET", image + "?key=" + key).status, 200);
  EXPECT_EQ(http_request(s.h.port, "GET", thumbnail + "?size=64&key=" + key).status, 200);
  EXPECT_EQ(http_request(s.h.port, "GET", image).status, 401);
  for (const std::string target : {"/api/v1/status", "/api/v1/runs", "/api/v1/jobs/1", "/api/v1/media-key", "/openapi.json"}) {
    EXPECT_EQ(http_request(s.h.port, "GET", target + "?key=" + key).status, 401) << target;
  }
  std::string forged = key;
  forged.back() = forged.back() == '0' ? '1' : '0';
  EXPECT_EQ(http_request(s.h.port, "GET", image + "?key=" + forged).status, 401);
  // An expired key, even a true one: made with the token as the daemon makes it, an hour ago.
  const std::string old_expiry = std::to_string(now - 3600);
  write_file(message, "rgbaq media key " + old_expiry);
  const auto old_mac = run_process({"/usr/bin/openssl", "dgst", "-sha256", "-hmac", s.h.token, "-r", message.string()});
  EXPECT_EQ(http_request(s.h.port, "GET", image + "?key=" + old_expiry + "." + old_mac.out.substr(0, 64)).status, 401);
}

}  // namespace
}  // namespace rgbaq
