#pragma once
// systemd's sd_notify, for start-up (READY, STOPPING), the watchdog and the worker's health (STATUS).
#include <string>

namespace rgbaq::daemon {

// Sends `state` ("READY=1", "STOPPING=1", "WATCHDOG=1", ...) to $NOTIFY_SOCKET as a datagram; no-op
// when it is not set. Returns whether a message was sent.
bool sd_notify(const std::string& state);

}  // namespace rgbaq::daemon
