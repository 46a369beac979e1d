#include "daemon/worker/crash_record.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace rgbaq::daemon {
namespace {

constexpr const char* kRecordName = "crashed-job";
int g_record_fd = -1;
const std::atomic<int64_t>* g_current_job = nullptr;

// Async-signal-safe: a pre-opened descriptor, pwrite, fsync; then the default action ends the process.
void on_crash(int sig) {
  const int64_t job = g_current_job ? g_current_job->load() : -1;
  if (g_record_fd >= 0 && job >= 0) {
    char buf[24];
    int n = 0;
    char digits[24];
    int64_t v = job;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v > 0);
    for (int i = 0; i < n; ++i) buf[i] = digits[n - 1 - i];
    buf[n++] = '\n';
    if (pwrite(g_record_fd, buf, static_cast<size_t>(n), 0) == n) fsync(g_record_fd);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void install_crash_record(const std::filesystem::path& data_dir, const std::atomic<int64_t>& current_job) {
  const auto path = data_dir / kRecordName;
  g_record_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (g_record_fd < 0) throw std::runtime_error(path.string() + ": cannot open the crash record");
  g_current_job = &current_job;
  static std::vector<char> alt_stack(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt_stack.data();
  ss.ss_size = alt_stack.size();
  sigaltstack(&ss, nullptr);  // this thread's; other threads' overflows still die, unrecorded
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

std::optional<int64_t> take_crash_record(const std::filesystem::path& data_dir) {
  const auto path = data_dir / kRecordName;
  std::optional<int64_t> job;
  std::ifstream in(path);
  int64_t id = -1;
  if (in >> id && id >= 0) job = id;
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return job;
}

void abort_if_test_prompt(const std::string& prompt) {
  const char* target = std::getenv("RGBAQ_TEST_ABORT_ON_PROMPT");
  if (target && prompt == target) std::abort();
}

void kill_if_test_step(const std::string& prompt, int step, const std::function<void()>& record_step) {
  const char* target = std::getenv("RGBAQ_TEST_SIGKILL_AT_STEP");
  if (!target) return;
  const std::string spec = target;
  const auto colon = spec.find(':');
  if (colon == std::string::npos || spec.substr(0, colon) != std::to_string(step) || spec.substr(colon + 1) != prompt) return;
  record_step();
  ::kill(::getpid(), SIGKILL);
}

}  // namespace rgbaq::daemon
