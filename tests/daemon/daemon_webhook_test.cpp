// rgbaqd --webhook (issue 41) against a real local HTTP server (tests/daemon/webhook_receiver.py): the
// run's summary POSTed when it ends, its signature checked with OpenSSL's command line over the exact
// bytes received; a server answering 500 three times then 200 gets four attempts, one success recorded;
// a daemon SIGKILLed during the backoff delivers once after its restart.
#include <sys/stat.h>
#include <sys/wait.h>

#include <sstream>

#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

const std::string kPython = RGBAQ_PYTHON3_PATH;
const std::string kReceiver = RGBAQ_WEBHOOK_RECEIVER_PATH;
const std::string kOpenssl = RGBAQ_OPENSSL_PATH;

class Receiver {
 public:
  Receiver(const fs::path& dir, int fail) : dir_(dir) {
    fs::create_directories(dir);
    std::vector<std::string> args = {kPython, kReceiver, "--port-file", (dir / "port").string(), "--dir", dir.string(), "--fail",
                                     std::to_string(fail)};
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 600 && !fs::exists(dir / "port"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    port_ = std::stoi(read_text(dir / "port"));
  }
  ~Receiver() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hooks/rgbaq"; }
  std::vector<json> requests() const {
    std::vector<json> out;
    std::istringstream in(read_text(dir_ / "requests.jsonl"));
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }
  fs::path body_file(int n) const { return dir_ / (std::to_string(n) + ".body"); }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

json run_end(const DaemonProcess& d, int64_t run) {
  const auto r = rgbaq(d, {"ls", "runs", "--json"});
  if (r.exit_code != 0) return nullptr;
  const json listing = json::parse(r.out);
  for (const auto& listed : listing["runs"]) {
    if (listed["id"] == run) return listed["end"];
  }
  return nullptr;
}

// The run's end once its webhook is in `state`.
json end_with_webhook(const DaemonProcess& d, int64_t run, const std::string& state) {
  json end;
  const bool reached = eventually([&] {
    end = run_end(d, run);
    return end.is_object() && end["webhook"].is_object() && end["webhook"]["state"] == state;
  });
  EXPECT_TRUE(reached) << "run " << run << "'s webhook never reached \"" << state << "\": " << end.dump() << "\n" << log_tail(d);
  return end;
}

// HMAC-SHA256 of the file's bytes under `key`, by OpenSSL's command line.
std::string openssl_hmac(const fs::path& file, const std::string& key) {
  const auto r = run_process({kOpenssl, "dgst", "-sha256", "-hmac", key, "-r", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out.substr(0, r.out.find(' '));
}

std::string secret_of(const DaemonProcess& d) {
  std::string text = read_text(d.data_dir() / "webhook-secret");
  return text.substr(0, text.find('\n'));
}

TEST(DaemonWebhook, TheRunsSummaryIsPostedSignedWithTheSecretAndRecorded) {
  TempDir dir;
  Receiver receiver(dir.path() / "receiver", 0);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--webhook", receiver.url()}});
  const auto out = dir.path() / "out";
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--name", "icons", "--wait"}, "prompt,seed\nfox,1-2\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json end = end_with_webhook(d, 1, "delivered");
  EXPECT_EQ(end["webhook"]["attempts"], 1);
  ASSERT_EQ(end["webhook"]["log"].size(), 1u);
  EXPECT_EQ(end["webhook"]["log"][0]["outcome"], "HTTP 200");
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1u);
  const json& h = requests[0]["headers"];
  EXPECT_EQ(requests[0]["path"], "/hooks/rgbaq");
  EXPECT_EQ(h["content-type"], "application/json");
  EXPECT_EQ(h["x-rgbaq-event"], "run_end");
  EXPECT_EQ(h["x-rgbaq-delivery"], std::to_string(end["id"].get<int64_t>()));
  // The secret: made on first use, private, 64 hex digits; the signature checks out independently.
  const auto secret_file = d.data_dir() / "webhook-secret";
  struct stat st {};
  ASSERT_EQ(stat(secret_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string secret = secret_of(d);
  EXPECT_EQ(secret.size(), 64u);
  EXPECT_EQ(secret.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(h["x-rgbaq-signature-256"], "sha256=" + openssl_hmac(receiver.body_file(1), secret));
  EXPECT_NE(h["x-rgbaq-signature-256"], "sha256=" + openssl_hmac(receiver.body_file(1), secret + "x"));
  const json body = json::parse(read_text(receiver.body_file(1)));
  EXPECT_EQ(body["event"], "run_end");
  EXPECT_EQ(body["run"], 1);
  EXPECT_EQ(body["end"], end["id"]);
  EXPECT_EQ(body["name"], "icons");
  EXPECT_EQ(fs::path(body["out_dir"].get<std::string>()), fs::absolute(out));
  EXPECT_EQ(body["done"], 2);
  EXPECT_EQ(body["failed"], 0);
  EXPECT_EQ(body["canceled"], 0);
  EXPECT_EQ(body["ended_at"], end["ended_at"]);
  const auto listing = rgbaq(d, {"ls", "runs"});
  EXPECT_NE(listing.out.find("webhook: delivered (1 attempt)"), std::string::npos) << listing.out;
  EXPECT_EQ(status(d)["run_ends"]["webhook"], true);
}

TEST(DaemonWebhook, AServerFailingThreeTimesGetsFourAttemptsAndOneSuccessIsRecorded) {
  TempDir dir;
  Receiver receiver(dir.path() / "receiver", 3);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--webhook", receiver.url(), "--webhook-backoff-s", "0.2"}});
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", (dir.path() / "out").string(), "--wait"}, "prompt,seed\nowl,1\n").exit_code,
            0);
  const json end = end_with_webhook(d, 1, "delivered");
  EXPECT_EQ(end["webhook"]["attempts"], 4);
  std::vector<std::string> outcomes;
  for (const auto& a : end["webhook"]["log"]) outcomes.push_back(a["outcome"]);
  EXPECT_EQ(outcomes, std::vector<std::string>({"HTTP 500", "HTTP 500", "HTTP 500", "HTTP 200"}));
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 4u);
  const std::string secret = secret_of(d);
  std::vector<double> at;
  for (int n = 1; n <= 4; ++n) {
    const json& h = requests[n - 1]["headers"];
    EXPECT_EQ(requests[n - 1]["status"], n < 4 ? 500 : 200);
    EXPECT_EQ(h["x-rgbaq-delivery"], std::to_string(end["id"].get<int64_t>())) << "one delivery id for every attempt";
    EXPECT_EQ(h["x-rgbaq-attempt"], std::to_string(n));
    EXPECT_EQ(read_text(receiver.body_file(n)), read_text(receiver.body_file(1))) << "the same body every time";
    EXPECT_EQ(h["x-rgbaq-signature-256"], "sha256=" + openssl_hmac(receiver.body_file(n), secret));
    at.push_back(end["webhook"]["log"][n - 1]["at"].get<double>());
  }
  // Waits of 0.2, 0.4 and 0.8 s between them (looked for at least every 0.2 s).
  EXPECT_GE(at[1] - at[0], 0.19);
  EXPECT_GE(at[2] - at[1], 0.39);
  EXPECT_GE(at[3] - at[2], 0.79);
  EXPECT_NE(rgbaq(d, {"ls", "runs"}).out.find("webhook: delivered (4 attempts)"), std::string::npos);
}

TEST(DaemonWebhook, ADaemonKilledDuringTheBackoffDeliversOnceAfterItsRestart) {
  TempDir dir;
  Receiver receiver(dir.path() / "receiver", 1);
  const DaemonProcess::Options opts{.extra_args = {"--webhook", receiver.url(), "--webhook-backoff-s", "2"}};
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), opts);
    ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", (dir.path() / "out").string()}, "prompt,seed\nowl,1\n").exit_code, 0);
    ASSERT_TRUE(eventually([&] {
      const json end = run_end(d, 1);
      return end.is_object() && end["webhook"].is_object() && end["webhook"]["attempts"] == 1;
    })) << log_tail(d);
    const json end = run_end(d, 1);
    EXPECT_EQ(end["webhook"]["state"], "owed");
    EXPECT_EQ(end["webhook"]["log"][0]["outcome"], "HTTP 500");
    d.signal(SIGKILL);
    ASSERT_EQ(d.wait_exit(), 128 + SIGKILL);
  }
  EXPECT_EQ(receiver.requests().size(), 1u);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), opts);
  const json end = end_with_webhook(d, 1, "delivered");
  EXPECT_EQ(end["webhook"]["attempts"], 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // a poll more: nothing is sent again
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1]["status"], 200);
  EXPECT_EQ(requests[1]["headers"]["x-rgbaq-delivery"], requests[0]["headers"]["x-rgbaq-delivery"]);
  EXPECT_GE(end["webhook"]["log"][1]["at"].get<double>() - end["webhook"]["log"][0]["at"].get<double>(), 1.9)
      << "the restart waited out the backoff";
}

}  // namespace
}  // namespace rgbaq
