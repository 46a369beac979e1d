#pragma once
// One libpq connection that comes back after the server goes away: an operation that fails because the
// connection dropped is run again on a new connection, with backoff, until a deadline. A drop may come
// after the server committed, so an operation run again must not apply twice: its effects are guarded
// by the rows' states, or it finds the token its first run recorded (postgres_queue_store.cpp). The URL goes to libpq as given (~/.pgpass, PG* work);
// messages name it without its password.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

struct pg_conn;
struct pg_result;

namespace rgbaq::storage::pg {

// A statement's result: rows of text values (NULL reads as "").
class Result {
 public:
  explicit Result(pg_result* r = nullptr) : r_(r, &clear) {}
  int rows() const;
  bool empty() const { return rows() == 0; }
  std::string text(int row, int col) const;
  int64_t int64(int row, int col) const;
  double real(int row, int col) const;
  bool boolean(int row, int col) const;
  bool null(int row, int col) const;
  int64_t affected() const;  // rows an UPDATE/INSERT/DELETE touched

 private:
  static void clear(pg_result* r);
  std::shared_ptr<pg_result> r_;
};

// Thrown when the connection dropped: the operation may be run again on a new connection.
struct ConnectionLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Connection {
 public:
  // Connects at once; throws std::runtime_error naming the redacted URL when it cannot.
  Connection(std::string url, std::chrono::milliseconds reconnect_for);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // A statement with text parameters (std::nullopt: NULL). Prepared once per connection under `name`
  // when one is given. Throws ConnectionLost, or std::runtime_error with the server's message.
  Result exec(const std::string& sql, const std::vector<std::optional<std::string>>& params = {},
              const char* name = nullptr);
  // COPY table FROM STDIN in text format; `rows` already escaped (copy_escape), tab-separated, newline-ended.
  void copy_in(const std::string& copy_sql, const std::string& rows);

  // Runs `op` (which may BEGIN ... COMMIT), again on a fresh connection after each ConnectionLost, with
  // backoff from 50 ms to 2 s, until `reconnect_for` has passed since the first drop.
  template <class Op>
  auto retrying(Op&& op) -> decltype(op()) {
    std::chrono::steady_clock::time_point first{};
    std::chrono::milliseconds backoff{50};
    for (;;) {
      try {
        ensure_open();
        return op();
      } catch (const ConnectionLost& e) {
        const auto now = std::chrono::steady_clock::now();
        if (first == std::chrono::steady_clock::time_point{}) first = now;
        if (now - first > reconnect_for_) throw std::runtime_error(location_ + ": the connection is lost and not back after " +
                                                                    std::to_string(reconnect_for_.count() / 1000) + " s: " + e.what());
        wait(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
      }
    }
  }
  // Rolls back a transaction an exception left open (a no-op when none is).
  void rollback_quietly();

  const std::string& location() const { return location_; }
  // Reconnections so far (tests and the log).
  uint64_t reconnects() const { return reconnects_; }

 private:
  void ensure_open();
  void connect();
  void wait(std::chrono::milliseconds d);
  [[noreturn]] void fail(const std::string& what, pg_result* r);

  std::string url_, location_;
  std::chrono::milliseconds reconnect_for_;
  pg_conn* conn_ = nullptr;
  std::set<std::string> prepared_;
  uint64_t reconnects_ = 0;
};

// Tests only: `drop` sees each statement the server has carried out, and returning true drops the
// connection there, as if it broke before the reply came back (a COMMIT that happened but looks failed).
// Process-wide; pass an empty function to stop.
void drop_after_statement_for_test(std::function<bool(const std::string& sql)> drop);

// Text-format COPY field: backslash, tab, newline and carriage return escaped.
void copy_escape(std::string& out, const std::string& field);

}  // namespace rgbaq::storage::pg
