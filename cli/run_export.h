#pragma once
// A run's export read a page at a time (daemon/protocol.h, "export"): the client holds one page of
// jobs, whatever the run's size, and hands each job on as it arrives.
#include <functional>

#include <nlohmann/json.hpp>

#include "cli/daemon_client.h"

namespace rgbaq::cli {

// Calls `on_run` with the run ({id, name, out_dir, counts}) once the first page has come (so nothing is
// written for a run that is not there), then `each` with every job of the export that `params` ask for
// ("run", "marked"), in id order. Throws what the client throws.
void for_each_exported_job(DaemonClient& client, nlohmann::json params, const std::function<void(const nlohmann::json& run)>& on_run,
                           const std::function<void(const nlohmann::json& job)>& each);

}  // namespace rgbaq::cli
