#include "storage/postgres/pg_connection.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "storage/open_queue_store.h"

namespace rgbaq::storage::pg {
namespace {

std::mutex test_drop_mutex;
std::function<bool(const std::string&)> test_drop;

bool test_drops_after(const std::string& sql) {
  std::lock_guard lock(test_drop_mutex);
  return test_drop && test_drop(sql);
}

}  // namespace

void drop_after_statement_for_test(std::function<bool(const std::string& sql)> drop) {
  std::lock_guard lock(test_drop_mutex);
  test_drop = std::move(drop);
}

void Result::clear(pg_result* r) {
  if (r) PQclear(r);
}
int Result::rows() const { return r_ ? PQntuples(r_.get()) : 0; }
std::string Result::text(int row, int col) const {
  return std::string(PQgetvalue(r_.get(), row, col), static_cast<size_t>(PQgetlength(r_.get(), row, col)));
}
int64_t Result::int64(int row, int col) const { return std::strtoll(PQgetvalue(r_.get(), row, col), nullptr, 10); }
double Result::real(int row, int col) const { return std::strtod(PQgetvalue(r_.get(), row, col), nullptr); }
bool Result::boolean(int row, int col) const { return PQgetvalue(r_.get(), row, col)[0] == 't'; }
bool Result::null(int row, int col) const { return PQgetisnull(r_.get(), row, col) != 0; }
int64_t Result::affected() const {
  const char* n = r_ ? PQcmdTuples(r_.get()) : "";
  return *n ? std::strtoll(n, nullptr, 10) : 0;
}

Connection::Connection(std::string url, std::chrono::milliseconds reconnect_for)
    : url_(std::move(url)), location_(redact_queue_url(url_)), reconnect_for_(reconnect_for) {
  connect();
}

Connection::~Connection() {
  if (conn_) PQfinish(conn_);
}

void Connection::connect() {
  if (conn_) PQfinish(conn_);
  prepared_.clear();
  conn_ = PQconnectdb(url_.c_str());
  if (PQstatus(conn_) != CONNECTION_OK) {
    // libpq's message names host and port, never the password.
    std::string why = PQerrorMessage(conn_);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    PQfinish(conn_);
    conn_ = nullptr;
    throw ConnectionLost(location_ + ": cannot connect: " + why);
  }
  // Our own notices (e.g. "relation already exists, skipping") are not worth a line on stderr.
  PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
  // A transaction of ours never waits on its client for long; one whose client is gone (a network cut
  // before its COMMIT) must end, not hold its locks until TCP notices, since the retry on a new
  // connection waits for those locks to learn whether it committed.
  PQclear(PQexec(conn_, "SET idle_in_transaction_session_timeout = '60s'"));
  // Plan each statement once, for any parameters. Left to choose, the server planned a claim afresh each
  // time (about 1.5 ms, twice its run time): a claim with a short list of cached prompts looks cheaper
  // planned for that list than planned for an array of unknown length. The queue's statements compare
  // parameters with ids, keys and tokens only, where the generic plan is the plan.
  PQclear(PQexec(conn_, "SET plan_cache_mode = force_generic_plan"));
}

void Connection::ensure_open() {
  if (conn_ && PQstatus(conn_) == CONNECTION_OK) return;
  ++reconnects_;
  connect();
}

void Connection::wait(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }

void Connection::fail(const std::string& what, pg_result* r) {
  std::string why = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
  const char* code = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const std::string sqlstate = code ? code : "";
  if (r) PQclear(r);
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  // A server shutting down or restarting (57P01..57P03) or a connection error (class 08) may reach us
  // before libpq has seen the socket close: the connection is as good as lost, and the operation is
  // retried on a new one.
  const bool server_going = sqlstate.rfind("08", 0) == 0 || sqlstate == "57P01" || sqlstate == "57P02" ||
                            sqlstate == "57P03";
  if (server_going && conn_) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
  if (!conn_ || PQstatus(conn_) != CONNECTION_OK) throw ConnectionLost(location_ + ": " + what + ": " + why);
  throw std::runtime_error(location_ + ": " + what + ": " + why);
}

Result Connection::exec(const std::string& sql, const std::vector<std::optional<std::string>>& params, const char* name) {
  if (!conn_ || PQstatus(conn_) != CONNECTION_OK) throw ConnectionLost(location_ + ": not connected");
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  pg_result* r = nullptr;
  if (name) {
    if (!prepared_.contains(name)) {
      pg_result* prep = PQprepare(conn_, name, sql.c_str(), static_cast<int>(params.size()), nullptr);
      if (PQresultStatus(prep) != PGRES_COMMAND_OK) fail("preparing a statement", prep);
      PQclear(prep);
      prepared_.insert(name);
    }
    r = PQexecPrepared(conn_, name, static_cast<int>(values.size()), values.data(), nullptr, nullptr, 0);
  } else if (params.empty()) {
    r = PQexec(conn_, sql.c_str());  // may hold several statements (the schema's migrations)
  } else {
    r = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0);
  }
  const auto status = PQresultStatus(r);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail("a statement failed", r);
  Result result(r);
  if (test_drops_after(sql)) {
    PQfinish(conn_);
    conn_ = nullptr;
    throw ConnectionLost(location_ + ": the connection was dropped by a test after a statement");
  }
  return result;
}

void Connection::copy_in(const std::string& copy_sql, const std::string& rows) {
  if (!conn_ || PQstatus(conn_) != CONNECTION_OK) throw ConnectionLost(location_ + ": not connected");
  pg_result* r = PQexec(conn_, copy_sql.c_str());
  if (PQresultStatus(r) != PGRES_COPY_IN) fail("COPY", r);
  PQclear(r);
  if (PQputCopyData(conn_, rows.data(), static_cast<int>(rows.size())) != 1 || PQputCopyEnd(conn_, nullptr) != 1) {
    fail("sending COPY data", nullptr);
  }
  r = PQgetResult(conn_);
  if (PQresultStatus(r) != PGRES_COMMAND_OK) fail("COPY", r);
  PQclear(r);
  while ((r = PQgetResult(conn_))) PQclear(r);
}

void Connection::rollback_quietly() {
  if (!conn_ || PQstatus(conn_) != CONNECTION_OK) return;
  if (PQtransactionStatus(conn_) == PQTRANS_IDLE) return;
  PQclear(PQexec(conn_, "ROLLBACK"));
}

void copy_escape(std::string& out, const std::string& field) {
  for (const char c : field) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
}

}  // namespace rgbaq::storage::pg
