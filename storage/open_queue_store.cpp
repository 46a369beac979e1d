#include "storage/open_queue_store.h"

#include <stdexcept>

#include "storage/postgres/postgres_queue_store.h"
#include "storage/sqlite/sqlite_queue_store.h"

namespace rgbaq::storage {

QueueUrl parse_queue_url(std::string_view url) {
  if (url.empty()) throw std::invalid_argument("the queue URL is empty (give a path, sqlite:PATH or postgresql://...)");
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) return {QueueKind::kPostgres, std::string(url)};
  if (url.starts_with("sqlite:")) {
    std::string_view path = url.substr(7);
    if (path.starts_with("//")) path.remove_prefix(2);  // sqlite:///abs/path
    if (path.empty()) throw std::invalid_argument("queue URL " + std::string(url) + ": no file path after sqlite:");
    return {QueueKind::kSqlite, std::string(path)};
  }
  const auto colon = url.find("://");
  if (colon != std::string_view::npos) {
    throw std::invalid_argument("queue URL " + redact_queue_url(url) + ": unknown scheme \"" + std::string(url.substr(0, colon)) +
                                "\" (known: a path, sqlite:PATH, postgresql://, postgres://)");
  }
  return {QueueKind::kSqlite, std::string(url)};
}

std::string redact_queue_url(std::string_view url) {
  std::string out(url);
  const auto scheme = out.find("://");
  if (scheme != std::string::npos) {
    // scheme://user:password@host...: the userinfo ends at the last '@' before the path.
    const auto start = scheme + 3;
    const auto slash = out.find('/', start);
    const auto at = out.rfind('@', slash == std::string::npos ? std::string::npos : slash);
    if (at != std::string::npos && at >= start) {
      const auto colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // password=... in the query string (postgresql://host/db?password=secret)
  for (std::size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
    const auto end = out.find('&', p);
    out.replace(p + 9, (end == std::string::npos ? out.size() : end) - p - 9, "***");
  }
  return out;
}

std::unique_ptr<QueueStore> open_queue_store(std::string_view url, const StoreOptions& options) {
  const QueueUrl q = parse_queue_url(url);
  if (q.kind == QueueKind::kSqlite) return std::make_unique<SqliteQueueStore>(q.target, options);
  return std::make_unique<PostgresQueueStore>(q.target, options);
}

}  // namespace rgbaq::storage
