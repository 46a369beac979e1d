// Two rgbaqd on one host, as a user starts them (issue 43, item 1): with the HTTP address left at its
// default (127.0.0.1:7878), the second finds it taken and serves on a free port instead; both answer,
// `rgbaq http-url` names each one's own URL (and each data directory's http-url file holds it). An
// address given on purpose stays fatal when taken, and the daemon says so.
#include <gtest/gtest.h>

#include "tests/daemon/http_client.h"

namespace rgbaq {
namespace {

TEST(DaemonTwoDaemons, TwoDaemonsWithDefaultFlagsBothServeHttp) {
  TempDir a, b, c;
  DaemonProcess first(kRgbaqd, model().dir(), a.path(), {.default_http = true});
  DaemonProcess second(kRgbaqd, model().dir(), b.path(), {.default_http = true});
  std::set<std::string> urls;
  for (const DaemonProcess* d : {&first, &second}) {
    const auto r = rgbaq(*d, {"http-url"});
    ASSERT_EQ(r.exit_code, 0) << r.err << log_tail(*d);
    const std::string token = http_token(*d);
    EXPECT_EQ(r.out.substr(r.out.find("/?token=") + 8), token + "\n");
    const std::string url = r.out.substr(0, r.out.find("/?token="));
    urls.insert(url);
    EXPECT_EQ(read_text(d->data_dir() / "http-url"), url + "\n");
    const int port = std::stoi(url.substr(url.rfind(':') + 1));
    const auto status = http_request(port, "GET", "/api/v1/status", {{"Authorization", "Bearer " + token}});
    EXPECT_EQ(status.status, 200) << url;
    EXPECT_EQ(status.json_body()["data_dir"], d->data_dir().string()) << url << " is another daemon's";
  }
  EXPECT_EQ(urls.size(), 2u);
  // Which of the two started HTTP first is a race: one of them says it moved.
  const std::string moved = "127.0.0.1:7878 is taken (another rgbaqd?); serving on port";
  EXPECT_TRUE(log_tail(first).find(moved) != std::string::npos || log_tail(second).find(moved) != std::string::npos)
      << log_tail(first) << log_tail(second);
  // The address given explicitly: taken, it is fatal, and the reason is in the daemon's own words.
  const std::string taken = *urls.begin();
  DaemonProcess third(kRgbaqd, model().dir(), c.path(), {.extra_args = {"--http", taken.substr(7)}, .wait_until_ready = false});
  EXPECT_NE(third.wait_exit(), 0);
  EXPECT_NE(log_tail(third).find("cannot listen for HTTP on " + taken.substr(7) + ": Address already in use"), std::string::npos)
      << log_tail(third);
}

}  // namespace
}  // namespace rgbaq
