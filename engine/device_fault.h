#pragma once
// A failure of the device a session renders on, not of the job it was rendering: a backend throws it
// (the cuda backend for out-of-memory, sticky and lost-device errors), and the daemon gives the job back
// to the queue as an interruption instead of spending one of its attempts. Whether the session can go
// on is in the kind.
#include <stdexcept>
#include <string>

namespace rgbaq::engine {

enum class DeviceFaultKind {
  kOutOfMemory,      // an allocation did not fit: the session is intact and renders the next job
  kContextPoisoned,  // a sticky error: nothing more runs in this session until it is opened again
  kDeviceLost,       // the device is gone (off the bus, reset, unavailable): opening again fails until it returns
};

inline const char* device_fault_kind_name(DeviceFaultKind kind) {
  switch (kind) {
    case DeviceFaultKind::kOutOfMemory: return "out of memory";
    case DeviceFaultKind::kContextPoisoned: return "context poisoned";
    case DeviceFaultKind::kDeviceLost: return "device lost";
  }
  return "device fault";
}

class DeviceFault : public std::runtime_error {
 public:
  DeviceFault(DeviceFaultKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  DeviceFaultKind kind() const { return kind_; }
  // Whether the session must be opened again before it renders anything.
  bool poisons_session() const { return kind_ != DeviceFaultKind::kOutOfMemory; }

 private:
  DeviceFaultKind kind_;
};

}  // namespace rgbaq::engine
