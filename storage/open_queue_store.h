#pragma once
// Opens the queue a URL names: a path or `sqlite:PATH` (the embedded SQLite store), or
// `postgresql://...` / `postgres://...` (one queue shared by daemons on many hosts). The URL is handed
// to libpq as given, so ~/.pgpass and the PG* environment variables fill in what it leaves out.
#include <memory>
#include <string>
#include <string_view>

#include "storage/queue_store.h"

namespace rgbaq::storage {

enum class QueueKind { kSqlite, kPostgres };

struct QueueUrl {
  QueueKind kind = QueueKind::kSqlite;
  std::string target;  // the SQLite file's path, or the PostgreSQL connection URL
};

// Throws std::invalid_argument naming the URL (its password masked) when it is empty or its scheme unknown.
QueueUrl parse_queue_url(std::string_view url);

// The URL with any password replaced by "***", for logs, messages and status: never print a password.
std::string redact_queue_url(std::string_view url);

// Throws std::runtime_error (naming the redacted URL) when the store cannot be opened.
std::unique_ptr<QueueStore> open_queue_store(std::string_view url, const StoreOptions& options = {});

}  // namespace rgbaq::storage
