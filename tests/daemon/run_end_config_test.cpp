// rgbaqd's run-end settings (issue 41): --on-run-done, --hook-timeout-s, --webhook, --webhook-backoff-s
// and their config-file keys; what the queue is told to owe (StoreOptions::owe_hook / owe_webhook); bad
// values refused naming the flag or the file's key.
#include <gtest/gtest.h>

#include <fstream>

#include "common/arguments.h"
#include "daemon/base/daemon_config.h"
#include "tests/daemon/daemon_config_parse.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::daemon {
namespace {

using config_test::parse;
using config_test::usage_error;

TEST(RunEndConfig, NoneByDefaultAndTheQueueOwesNothing) {
  const DaemonConfig c = parse({});
  EXPECT_EQ(c.on_run_done, "");
  EXPECT_EQ(c.hook_timeout_s, 300);
  EXPECT_EQ(c.webhook, "");
  EXPECT_EQ(c.webhook_backoff_s, 10);
  EXPECT_FALSE(c.store_options().owe_hook);
  EXPECT_FALSE(c.store_options().owe_webhook);
  EXPECT_EQ(c.webhook_secret_file(), "/tmp/d/webhook-secret");
  EXPECT_EQ(c.manifests_dir(), "/tmp/d/manifests");
}

TEST(RunEndConfig, FlagsSetThemAndTheQueueOwesWhatIsSet) {
  const DaemonConfig c = parse({"--on-run-done", "notify-send rgbaq \"$RGBAQ_RUN_NAME done\"", "--hook-timeout-s", "7"});
  EXPECT_EQ(c.on_run_done, "notify-send rgbaq \"$RGBAQ_RUN_NAME done\"");
  EXPECT_EQ(c.hook_timeout_s, 7);
  EXPECT_TRUE(c.store_options().owe_hook);
  EXPECT_FALSE(c.store_options().owe_webhook);
  const DaemonConfig w = parse({"--webhook", "https://ci.example/hook?x=1", "--webhook-backoff-s", "0.25"});
  EXPECT_EQ(w.webhook, "https://ci.example/hook?x=1");
  EXPECT_EQ(w.webhook_backoff_s, 0.25);
  EXPECT_FALSE(w.store_options().owe_hook);
  EXPECT_TRUE(w.store_options().owe_webhook);
}

TEST(RunEndConfig, BadValuesAreRefusedNamingTheFlag) {
  EXPECT_NE(usage_error({"--hook-timeout-s", "0"}).find("--hook-timeout-s must be at least 1"), std::string::npos);
  EXPECT_NE(usage_error({"--webhook", "ftp://h/x"}).find("--webhook \"ftp://h/x\" is not an http:// or https:// URL"),
            std::string::npos);
  EXPECT_NE(usage_error({"--webhook", "127.0.0.1:9000"}).find("not an http:// or https:// URL"), std::string::npos);
  EXPECT_NE(usage_error({"--webhook-backoff-s", "0"}).find("--webhook-backoff-s \"0\" is not a positive number"), std::string::npos);
  EXPECT_NE(usage_error({"--webhook-backoff-s", "soon"}).find("--webhook-backoff-s \"soon\""), std::string::npos);
}

TEST(RunEndConfig, TheConfigFileSetsThemAndFlagsWin) {
  TempDir dir;
  const auto file = dir.path() / "rgbaqd.json";
  std::ofstream(file) << R"({"on_run_done": "echo \"$RGBAQ_RUN\" >> runs.log", "hook_timeout_s": 60,
                             "webhook": "http://127.0.0.1:9000/hook", "webhook_backoff_s": 2.5})";
  const DaemonConfig c = parse({"--config", file.string()});
  EXPECT_EQ(c.on_run_done, "echo \"$RGBAQ_RUN\" >> runs.log");
  EXPECT_EQ(c.hook_timeout_s, 60);
  EXPECT_EQ(c.webhook, "http://127.0.0.1:9000/hook");
  EXPECT_EQ(c.webhook_backoff_s, 2.5);
  EXPECT_TRUE(c.store_options().owe_hook && c.store_options().owe_webhook);
  const DaemonConfig f = parse({"--config", file.string(), "--on-run-done", "true", "--hook-timeout-s", "9"});
  EXPECT_EQ(f.on_run_done, "true");
  EXPECT_EQ(f.hook_timeout_s, 9);
  std::ofstream(file) << R"({"on_run_done": ["echo", "x"]})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("\"on_run_done\" must be a string"), std::string::npos);
  std::ofstream(file) << R"({"webhook_backoff_s": -1})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("\"webhook_backoff_s\" must be a positive number"), std::string::npos);
  std::ofstream(file) << R"({"webhook": "gopher://h"})";
  EXPECT_NE(usage_error({"--config", file.string()}).find("is not an http:// or https:// URL"), std::string::npos);
}

}  // namespace
}  // namespace rgbaq::daemon
