#include "cli/run_export.h"

#include "daemon/protocol.h"

namespace rgbaq::cli {

void for_each_exported_job(DaemonClient& client, nlohmann::json params, const std::function<void(const nlohmann::json& run)>& on_run,
                           const std::function<void(const nlohmann::json& job)>& each) {
  params["limit"] = protocol::kExportPageJobs;
  for (int64_t after = 0;;) {
    params["after"] = after;
    const nlohmann::json page = client.call("export", params);
    if (after == 0) on_run(page["run"]);
    for (const auto& job : page["jobs"]) each(job);
    if (!page["next_after"].is_number_integer()) return;
    after = page["next_after"].get<int64_t>();
  }
}

}  // namespace rgbaq::cli
