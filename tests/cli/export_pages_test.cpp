// Exporting a big run is streamed in pages (issue 26, item 17): 100,000 jobs raised rgbaqd's RSS by
// ~500 MiB (it kept ~455) and `rgbaq export` peaked at 680 MiB, the answer being one JSON document.
// Through the real binaries, on a paused daemon with a run of 100,000 queued jobs: JSONL and CSV
// exports hold every job once, in id order, while the daemon's peak RSS (the kernel's VmHWM, reset
// before each export) and the client's (wait4) stay within bounds far below one document's size.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "tests/daemon/http_client.h"
#include "tests/peak_memory.h"
#include "tests/run_process.h"

namespace rgbaq {
namespace {

void reset_peak_rss(pid_t pid) {
  std::ofstream reset("/proc/" + std::to_string(pid) + "/clear_refs");
  reset << "5";
  ASSERT_TRUE(reset.flush()) << "cannot reset the daemon's peak RSS";
}

TEST(ExportPages, ARunOf100000JobsIsExportedInBoundedMemoryByDaemonAndClient) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = with_http()});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  constexpr int kPrompts = 6250, kSeeds = 16, kJobs = kPrompts * kSeeds;
  std::string csv = "prompt,seed\n";
  for (int p = 0; p < kPrompts; ++p) csv += "a watercolour of lighthouse number " + std::to_string(p) + ",1-16\n";
  const auto submitted = rgbaq(d, {"submit", "-", "--size", "128", "--out", (dir.path() / "out").string()}, csv);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  ASSERT_EQ(status(d)["jobs"].value("queued", 0), kJobs);

  // rgbaq's own footprint, measured in the same run: a build with the CUDA engine maps its libraries
  // into every rgbaq (~210 MiB of RSS before any work), one without it ~10 MiB. The bound is what the
  // export adds to that.
  const uint64_t client_baseline = rgbaq(d, {"status", "--json"}).max_rss_bytes;
  const std::string pid = std::to_string(d.pid());
  for (const std::string format : {"jsonl", "csv"}) {
    const fs::path file = dir.path() / ("run1." + format);
    reset_peak_rss(d.pid());
    const uint64_t daemon_before = proc_status_bytes("VmRSS", pid);
    const auto r = rgbaq(d, {"export", "1", "--format", format, "-o", file.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const uint64_t daemon_peak = proc_status_bytes("VmHWM", pid);
    const uint64_t daemon_growth = daemon_peak > daemon_before ? daemon_peak - daemon_before : 0;
    std::cout << format << " export of " << kJobs << " jobs (" << (fs::file_size(file) >> 20) << " MiB): rgbaqd's peak RSS rose "
              << (daemon_growth >> 20) << " MiB (to " << (daemon_peak >> 20) << " MiB), rgbaq peaked at " << (r.max_rss_bytes >> 20)
              << " MiB (rgbaq status: " << (client_baseline >> 20) << " MiB)\n";
    // One page (1,000 jobs) is a few MiB of JSON; the whole run as one document was ~500 MiB in each.
    EXPECT_LT(daemon_growth, 64u << 20);
    EXPECT_LT(r.max_rss_bytes - std::min(client_baseline, r.max_rss_bytes), 64u << 20);

    std::ifstream in(file);
    std::string line;
    if (format == "csv") {
      ASSERT_TRUE(std::getline(in, line));
      EXPECT_EQ(line, "job,run,state,prompt,seed,width,height,name,lora,output,error,attempts,seconds,host,mark,template,choices,qa,replaces");
    }
    int64_t expected_id = 1;
    while (std::getline(in, line)) {
      const int64_t id = format == "jsonl" ? json::parse(line).value("id", int64_t{0}) : std::stoll(line.substr(0, line.find(',')));
      ASSERT_EQ(id, expected_id) << "every job once, in id order: " << line;
      ++expected_id;
    }
    EXPECT_EQ(expected_id - 1, kJobs);
  }

  // A client that sends no "limit" reads one answer only (an rgbaq older than the daemon): past one
  // page's bound it is refused, not given the first page as if it were the run.
  {
    Raw c(d.socket());
    c.send_all(R"({"v":1,"id":1,"method":"export","params":{"run":1}})" "\n");
    const std::string reply = c.read_line();
    EXPECT_NE(reply.find("bad_request"), std::string::npos) << reply.substr(0, 300);
    EXPECT_NE(reply.find("has more than 10000 jobs"), std::string::npos) << reply.substr(0, 300);
  }

  // The HTTP route streams its body a page at a time (chunked), as Beast's client parses it.
  const int port = http_port(d);
  const Header auth{"Authorization", "Bearer " + http_token(d)};
  for (const std::string format : {"jsonl", "json"}) {
    reset_peak_rss(d.pid());
    const uint64_t daemon_before = proc_status_bytes("VmRSS", pid);
    const auto reply = http_request(port, "GET", "/api/v1/runs/1/export?format=" + format, {auth});
    ASSERT_EQ(reply.status, 200) << reply.body.substr(0, 500);
    const uint64_t daemon_peak = proc_status_bytes("VmHWM", pid);
    const uint64_t daemon_growth = daemon_peak > daemon_before ? daemon_peak - daemon_before : 0;
    std::cout << "HTTP " << format << " export (" << (reply.body.size() >> 20) << " MiB): rgbaqd's peak RSS rose "
              << (daemon_growth >> 20) << " MiB\n";
    EXPECT_EQ(reply.headers["transfer-encoding"], "chunked");
    EXPECT_LT(daemon_growth, 64u << 20) << "the whole body held was +105 MiB (jsonl), +62 MiB (json)";
    std::vector<int64_t> ids;
    if (format == "jsonl") {
      std::istringstream in(reply.body);
      for (std::string line; std::getline(in, line);) ids.push_back(json::parse(line).value("id", int64_t{0}));
    } else {
      const json doc = json::parse(reply.body);
      EXPECT_EQ(doc.dump() + "\n", reply.body) << "the body is the document nlohmann would write";
      EXPECT_EQ(doc["run"].value("id", 0), 1);
      for (const auto& j : doc["jobs"]) ids.push_back(j.value("id", int64_t{0}));
    }
    ASSERT_EQ(ids.size(), size_t(kJobs)) << format;
    for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], int64_t(i + 1)) << format;
  }

  // Python's http.client reads the chunked body and then another answer on the same connection.
  {
    const auto r = run_process({"/usr/bin/env", "python3", "-c", R"(
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
auth = {"Authorization": "Bearer " + sys.argv[2]}
c.request("GET", "/api/v1/runs/1/export?format=jsonl", headers=auth)
r = c.getresponse()
lines = r.read().decode().splitlines()
ids = [json.loads(l)["id"] for l in lines]
assert r.getheader("Transfer-Encoding") == "chunked", r.getheaders()
assert ids == list(range(1, len(ids) + 1)), "not every job once in order"
c.request("GET", "/api/v1/status", headers=auth)
s = c.getresponse()
print(len(ids), s.status, json.loads(s.read())["jobs"]["queued"])
)", std::to_string(port), http_token(d)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, std::to_string(kJobs) + " 200 " + std::to_string(kJobs) + "\n");
  }

  // A client that asks for the export and reads nothing holds the daemon to what the socket buffers
  // take and one page: the daemon does not make the rest, and answers others meanwhile.
  {
    reset_peak_rss(d.pid());
    const uint64_t daemon_before = proc_status_bytes("VmRSS", pid);
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket stalled(io);
    stalled.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
    stalled.set_option(boost::asio::socket_base::receive_buffer_size(64 << 10));
    const std::string request = "GET /api/v1/runs/1/export?format=jsonl HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                                "\r\nAuthorization: Bearer " +
                                http_token(d) + "\r\n\r\n";
    boost::asio::write(stalled, boost::asio::buffer(request));
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const auto other = http_request(port, "GET", "/api/v1/runs/1", {auth});
    EXPECT_EQ(other.status, 200) << "answered beside a stalled export";
    const auto export_beside = rgbaq(d, {"export", "1", "--format", "csv", "-o", (dir.path() / "beside.csv").string()});
    EXPECT_EQ(export_beside.exit_code, 0) << "the bulk lane is not held by the stalled export: " << export_beside.err;
    const uint64_t daemon_peak = proc_status_bytes("VmHWM", pid);
    const uint64_t daemon_growth = daemon_peak > daemon_before ? daemon_peak - daemon_before : 0;
    std::cout << "an export to a client that reads nothing: rgbaqd's peak RSS rose " << (daemon_growth >> 20) << " MiB\n";
    EXPECT_LT(daemon_growth, 64u << 20);

    // The run is forgotten while that body is half sent: the body is cut (no chunked end), so the
    // client knows it does not hold the whole run, never a complete-looking part.
    ASSERT_EQ(rgbaq(d, {"cancel", "1"}).exit_code, 0);
    const auto forgotten = rgbaq(d, {"rm", "1"});
    ASSERT_EQ(forgotten.exit_code, 0) << forgotten.err;
    namespace bhttp = boost::beast::http;
    boost::beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(256u << 20);
    boost::system::error_code ec;
    bhttp::read(stalled, buffer, parser, ec);
    EXPECT_EQ(ec, bhttp::error::partial_message) << ec.message() << " after " << parser.get().body().size() << " bytes";
    EXPECT_EQ(parser.get().result_int(), 200u) << parser.get().body().substr(0, 300);
    EXPECT_FALSE(parser.is_done());
    EXPECT_GT(parser.get().body().size(), 0u) << "some pages were sent before the run went";
    EXPECT_LT(parser.get().body().size(), 40u << 20);
  }
}

}  // namespace
}  // namespace rgbaq
