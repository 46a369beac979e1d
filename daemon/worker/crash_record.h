#pragma once
// Telling a job that crashes the daemon from one that was merely interrupted. A crash signal (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT) writes the id of the job to blame to DATA_DIR/crashed-job before the
// process dies; SIGKILL, a power cut or a reboot leave no record. At the next start the recorded job
// spends an attempt and every other running job gets its attempt back (QueueStore::recover).
// With several render workers the job to blame is the one of the worker whose thread crashed; a crash
// on another thread (an engine's helper thread, the writer) blames the job in hand only when there is
// just one, and otherwise nobody (every job was interrupted).
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rgbaq::daemon {

// Installs the handlers (on an alternate stack, so a stack overflow is recorded too). `jobs_in_hand`:
// each render worker's job (-1 when none), read in the handler; at most 64. Call once, before
// rendering starts.
void install_crash_record(const std::filesystem::path& data_dir, const std::vector<const std::atomic<int64_t>*>& jobs_in_hand);

// On a render worker's thread, before it renders: a crash on this thread blames `job_in_hand` (one of
// those installed), and the thread gets an alternate stack of its own, so its stack overflow is
// recorded too.
void blame_crashes_on_this_thread(const std::atomic<int64_t>& job_in_hand);

// The job the last run of the daemon crashed in, if it recorded one; the record is removed.
std::optional<int64_t> take_crash_record(const std::filesystem::path& data_dir);

// Fault injection for tests only: when RGBAQ_TEST_ABORT_ON_PROMPT is set and equals `prompt`, aborts
// the process, as a render that crashes would.
void abort_if_test_prompt(const std::string& prompt);

// Fault injection for tests only: when RGBAQ_TEST_SIGKILL_AT_STEP is "STEP:PROMPT" and a render of
// `prompt` reaches STEP, calls `record_step` (the heartbeat's record of the step, had it lasted a
// second) and SIGKILLs the process, as the kernel's OOM killer ends a render too big for memory.
void kill_if_test_step(const std::string& prompt, int step, const std::function<void()>& record_step);
// Fault injection for tests only: when RGBAQ_TEST_SIGKILL_AT_RUN_END is set, SIGKILLs the process where
// a worker or writer sees that a run it just finished a job of has ended: its end is committed, owing
// its hook and webhook, and neither is claimed yet (the run_done event that wakes them not published).
void kill_if_test_run_end();
// Fault injection for tests only: when RGBAQ_TEST_SIGKILL_AFTER_COMPLETE equals `prompt`, SIGKILLs the
// process where the writer has just recorded a job of that prompt done (its re-seeded job, if any,
// committed with it) and has neither renamed its PNG into place nor let the worker see the outcome.
void kill_if_test_completed(const std::string& prompt);
// Tests only: RGBAQ_TEST_SIGSTOP_AT_STEP="N:prompt" stops the whole process (SIGSTOP, as a stalled host)
// at the end of step N of a job with that prompt, until a SIGCONT.
void stop_if_test_step(const std::string& prompt, int step);

}  // namespace rgbaq::daemon
