#pragma once
// Telling a job that crashes the daemon from one that was merely interrupted. A crash signal (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT) writes the id of the job in hand to DATA_DIR/crashed-job before the
// process dies; SIGKILL, a power cut or a reboot leave no record. At the next start the recorded job
// spends an attempt and every other running job gets its attempt back (QueueStore::recover).
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace rgbaq::daemon {

// Installs the handlers (on an alternate stack, so a stack overflow is recorded too). `current_job`
// is read in the handler: -1 when no job is in hand. Call once, before rendering starts.
void install_crash_record(const std::filesystem::path& data_dir, const std::atomic<int64_t>& current_job);

// The job the last run of the daemon crashed in, if it recorded one; the record is removed.
std::optional<int64_t> take_crash_record(const std::filesystem::path& data_dir);

// Fault injection for tests only: when RGBAQ_TEST_ABORT_ON_PROMPT is set and equals `prompt`, aborts
// the process, as a render that crashes would.
void abort_if_test_prompt(const std::string& prompt);

// Fault injection for tests only: when RGBAQ_TEST_SIGKILL_AT_STEP is "STEP:PROMPT" and a render of
// `prompt` reaches STEP, calls `record_step` (the heartbeat's record of the step, had it lasted a
// second) and SIGKILLs the process, as the kernel's OOM killer ends a render too big for memory.
void kill_if_test_step(const std::string& prompt, int step, const std::function<void()>& record_step);

}  // namespace rgbaq::daemon
