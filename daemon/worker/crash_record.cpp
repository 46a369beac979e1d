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
constexpr size_t kMostWorkers = 64;
int g_record_fd = -1;
// Fixed before the handlers are installed and never changed after: the handler reads them as they are.
const std::atomic<int64_t>* g_jobs[kMostWorkers] = {};
size_t g_job_count = 0;
// The job of the render worker whose thread this is (initial-exec TLS in the executable: safe to read in
// a signal handler).
thread_local const std::atomic<int64_t>* t_job = nullptr;

// The job to blame: this thread's worker's; on another thread, the only job in hand, if only one is.
int64_t job_to_blame() {
  if (t_job) return t_job->load();
  int64_t only = -1;
  for (size_t i = 0; i < g_job_count; ++i) {
    const int64_t job = g_jobs[i]->load();
    if (job < 0) continue;
    if (only >= 0) return -1;  // two in hand: either may be at fault, or neither
    only = job;
  }
  return only;
}

// Async-signal-safe: a pre-opened descriptor, pwrite, fsync; then the default action ends the process.
void on_crash(int sig) {
  const int64_t job = job_to_blame();
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

// An alternate signal stack for the calling thread (each thread has its own, or none). It is switched
// off before its memory goes, as the thread ends: a stack left installed would point at freed memory,
// and ASan, which unmaps whatever stack a finishing thread still has, aborted the process on it.
class AlternateStack {
 public:
  AlternateStack() : memory_(1 << 16) {
    stack_t ss{};
    ss.ss_sp = memory_.data();
    ss.ss_size = memory_.size();
    sigaltstack(&ss, nullptr);
  }
  ~AlternateStack() {
    stack_t ss{};
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, nullptr);
  }
  AlternateStack(const AlternateStack&) = delete;
  AlternateStack& operator=(const AlternateStack&) = delete;

 private:
  std::vector<char> memory_;
};

}  // namespace

void install_crash_record(const std::filesystem::path& data_dir, const std::vector<const std::atomic<int64_t>*>& jobs_in_hand) {
  if (jobs_in_hand.size() > kMostWorkers) throw std::invalid_argument("the crash record follows at most 64 workers");
  const auto path = data_dir / kRecordName;
  g_record_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (g_record_fd < 0) throw std::runtime_error(path.string() + ": cannot open the crash record");
  for (size_t i = 0; i < jobs_in_hand.size(); ++i) g_jobs[i] = jobs_in_hand[i];
  g_job_count = jobs_in_hand.size();
  static AlternateStack alt_stack;  // this thread's; a worker's thread gets its own (blame_crashes_on_this_thread)
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

void blame_crashes_on_this_thread(const std::atomic<int64_t>& job_in_hand) {
  thread_local AlternateStack alt_stack;
  t_job = &job_in_hand;
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

// Whether the test variable `name` ("N:prompt") names this step of this prompt.
static bool test_step_is(const char* name, const std::string& prompt, int step) {
  const char* target = std::getenv(name);
  if (!target) return false;
  const std::string spec = target;
  const auto colon = spec.find(':');
  return colon != std::string::npos && spec.substr(0, colon) == std::to_string(step) && spec.substr(colon + 1) == prompt;
}

void kill_if_test_step(const std::string& prompt, int step, const std::function<void()>& record_step) {
  if (!test_step_is("RGBAQ_TEST_SIGKILL_AT_STEP", prompt, step)) return;
  record_step();
  ::kill(::getpid(), SIGKILL);
}

void kill_if_test_run_end() {
  if (std::getenv("RGBAQ_TEST_SIGKILL_AT_RUN_END")) ::kill(::getpid(), SIGKILL);
}

void kill_if_test_completed(const std::string& prompt) {
  const char* target = std::getenv("RGBAQ_TEST_SIGKILL_AFTER_COMPLETE");
  if (target && prompt == target) ::kill(::getpid(), SIGKILL);
}

void stop_if_test_step(const std::string& prompt, int step) {
  if (test_step_is("RGBAQ_TEST_SIGSTOP_AT_STEP", prompt, step)) ::kill(::getpid(), SIGSTOP);
}

}  // namespace rgbaq::daemon
