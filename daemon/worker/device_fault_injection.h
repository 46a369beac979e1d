#pragma once
// Fault injection for tests only: RGBAQ_TEST_DEVICE_FAULT=INDEX:KIND (KIND one of oom, poisoned, lost)
// makes render worker INDEX fail as a failing device would, on the cpu engine where no device fails:
// its first render step throws an engine::DeviceFault of that kind; with `lost`, opening its session
// again fails too (the device is gone). Unset: nothing happens.
namespace rgbaq::daemon {

// At a render step of worker `index`: throws the fault, once per process.
void inject_test_device_fault(int index);
// Before worker `index` opens its session again: throws when the injected fault is `lost`.
void refuse_test_reopen(int index);

}  // namespace rgbaq::daemon
