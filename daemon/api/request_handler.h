#pragma once
// The protocol's methods (daemon/protocol.h), answered from the queue store, the daemon's counters and
// the session's tokenizer (a submit is validated again here: token length needs the tokenizer).
#include <memory>
#include <stdexcept>
#include <string>

#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including <utility>

#include <boost/asio/any_io_executor.hpp>
#include <nlohmann/json.hpp>

#include "daemon/base/daemon_config.h"
#include "daemon/base/daemon_state.h"
#include "engine/session.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon {

// A request the daemon refuses: a protocol error code, a message, and details (a file's errors).
class RequestError : public std::runtime_error {
 public:
  RequestError(std::string_view code, const std::string& message, nlohmann::json details = nlohmann::json::array())
      : std::runtime_error(message), code_(code), details_(std::move(details)) {}
  const std::string& code() const { return code_; }
  const nlohmann::json& details() const { return details_; }

 private:
  std::string code_;
  nlohmann::json details_;
};

class RequestHandler {
 public:
  RequestHandler(const DaemonConfig& config, const engine::Session& session, std::string model_identity, DaemonState& state);

  // The result of `method` (not "watch": the server handles that). Throws RequestError.
  nlohmann::json handle(const std::string& method, const nlohmann::json& params);

 private:
  nlohmann::json submit(const nlohmann::json& params);
  nlohmann::json status();
  nlohmann::json export_run(const nlohmann::json& params);

  const DaemonConfig& config_;
  const engine::Session& session_;
  std::string model_identity_;
  DaemonState& state_;
  std::unique_ptr<storage::QueueStore> store_;
};

// Where requests run: a handler used only from `executor`'s one thread. Each transport has lanes of its
// own, so one's long submit never waits on, nor delays, another's.
struct RequestLane {
  RequestHandler& handler;
  boost::asio::any_io_executor executor;
};

// A job as the protocol shows it.
nlohmann::json job_json(const storage::Job& job, bool with_metadata);
nlohmann::json counts_json(const storage::StateCounts& counts);
nlohmann::json run_json(const storage::Run& run);  // with its latest end ("end", null before one)
// A run's end with its hook's and webhook's state (null where none was owed).
nlohmann::json run_end_json(const storage::RunEnd& end);

}  // namespace rgbaq::daemon
