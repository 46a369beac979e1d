#include "daemon/worker/device_fault_injection.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "engine/device_fault.h"

namespace rgbaq::daemon {
namespace {

struct InjectedFault {
  int index = -1;
  engine::DeviceFaultKind kind = engine::DeviceFaultKind::kOutOfMemory;
};

// RGBAQ_TEST_DEVICE_FAULT parsed; index -1 when unset or not understood.
InjectedFault injected() {
  const char* text = std::getenv("RGBAQ_TEST_DEVICE_FAULT");
  if (!text) return {};
  const std::string s = text;
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return {};
  const std::string kind = s.substr(colon + 1);
  InjectedFault f;
  f.index = std::atoi(s.substr(0, colon).c_str());
  if (kind == "oom") f.kind = engine::DeviceFaultKind::kOutOfMemory;
  else if (kind == "poisoned") f.kind = engine::DeviceFaultKind::kContextPoisoned;
  else if (kind == "lost") f.kind = engine::DeviceFaultKind::kDeviceLost;
  else return {};
  return f;
}

std::atomic<bool> g_fired{false};

}  // namespace

void inject_test_device_fault(int index) {
  static const InjectedFault f = injected();
  if (f.index != index || g_fired.exchange(true)) return;
  throw engine::DeviceFault(f.kind, "test device " + std::to_string(index) + " (RGBAQ_TEST_DEVICE_FAULT): " +
                                        engine::device_fault_kind_name(f.kind));
}

void refuse_test_reopen(int index) {
  static const InjectedFault f = injected();
  if (f.index == index && f.kind == engine::DeviceFaultKind::kDeviceLost) {
    throw engine::DeviceFault(f.kind, "test device " + std::to_string(index) + " (RGBAQ_TEST_DEVICE_FAULT) is gone");
  }
}

}  // namespace rgbaq::daemon
