#include "cli/model_pull.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "cli/download_progress.h"
#include "cli/hub_client.h"
#include "common/arguments.h"
#include "common/printable_text.h"
#include "common/sha256.h"
#include "common/trusted_folder.h"
#include "daemon/socket_paths.h"
#include "engine/model/hf_cache.h"
#include "engine/model/model_config.h"
#include "engine/model/model_directory.h"
#include "engine/model/model_files.h"
#include "engine/model/model_quantizer.h"
#include "engine/render_memory.h"

namespace rgbaq::cli {
namespace {

constexpr const char* kModelPullHelp = R"(usage: rgbaq model pull [REPO[@REV]] [--to DIR] [--endpoint URL] [--token-file FILE] [--quantize int8]

Downloads a Qwen-Image-2.1 pipeline from the Hugging Face Hub (default Qwen/Qwen-Image-2.1-Turbo at
main): the model index, the component configs, the tokenizer and the weight shards the graphs read,
nothing else. Into the huggingface_hub cache ($HF_HUB_CACHE, else $HF_HOME/hub, else
~/.cache/huggingface/hub), where diffusers finds the same files, or into DIR. Prints the folder;
`--model REPO` finds it in the cache too. Says how much it will download (and checks the free disk
space) before it starts. An interrupted pull resumes from the bytes on disk; each LFS file's SHA-256
is checked against the Hub's.

  --to DIR          a plain model folder instead of the cache
  --endpoint URL    the Hub or a mirror (default $HF_ENDPOINT, else https://huggingface.co)
  --token-file F    a file holding the token for a gated repo (default $HF_TOKEN, else
                    $HF_HOME/token as `hf auth login` writes it); sent only to the endpoint's host
  --quantize int8   then write an int8 copy (rgbaq model quantize) beside it: DIR-int8, or for the
                    cache DATA_DIR/models/ORG--NAME-COMMIT-int8; prints the memory each form needs
Exit: 0 done, 1 network, disk, a hash that does not match, a listing refused (a file path or ETag that
would lead outside the folder, sizes past 2^63) or a cache folder another user controls, 2 usage, not
found, token refused.
)";

using common::UsageError;
using common::printable;
namespace fs = std::filesystem;

constexpr const char* kDefaultRepo = "Qwen/Qwen-Image-2.1-Turbo";
constexpr int kAttempts = 6;  // per file: the first and five resumptions after a dropped connection

// A pull's failure that is the input's fault (exit 2), beside HubError's kDenied and kNotFound.
class BadRepo : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string trimmed(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string read_token(const std::optional<std::string>& file) {
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    if (!in) return std::optional<std::string>();
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return std::optional<std::string>(trimmed(text));
  };
  if (file) {
    const auto t = read(*file);
    if (!t) throw UsageError("--token-file " + *file + ": cannot read it");
    if (t->empty()) throw UsageError("--token-file " + *file + ": the file is empty");
    return *t;
  }
  if (const auto t = trimmed(env("HF_TOKEN")); !t.empty()) return t;
  const fs::path home = !env("HF_HOME").empty() ? fs::path(env("HF_HOME"))
                        : !env("XDG_CACHE_HOME").empty() ? fs::path(env("XDG_CACHE_HOME")) / "huggingface"
                                                         : fs::path(env("HOME")) / ".cache" / "huggingface";
  return read(home / "token").value_or("");
}

[[noreturn]] void throw_io(const std::string& what, const fs::path& path) {
  const int e = errno;
  if (e == ELOOP) {
    throw std::runtime_error(what + " " + path.string() +
                             ": it is a symbolic link; not writing through it (another user may have planted it)");
  }
  throw std::runtime_error(what + " " + path.string() + ": " + std::strerror(e) +
                           (e == ENOSPC || e == EDQUOT ? " (the disk is full)" : ""));
}

// The open of `name` in the folder `dir` (at `path`) failed: why, plainly. Linux answers O_NOFOLLOW
// on a link with ELOOP, but EACCES for another user's link in a sticky folder open to all.
[[noreturn]] void throw_open(const std::string& what, int dir, const std::string& name, const fs::path& path) {
  const int e = errno;
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) {
      errno = ELOOP;
      throw_io(what, path);
    }
    if (st.st_uid != ::geteuid()) {
      throw std::runtime_error(what + " " + path.string() + ": it belongs to uid " + std::to_string(st.st_uid) +
                               "; not writing to another user's file (" + std::strerror(e) + ")");
    }
  }
  errno = e;
  throw_io(what, path);
}

// A descriptor, closed with its scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// A file the pull writes: the folder, and the name in it.
struct Place {
  fs::path dir;
  std::string name;
  fs::path path() const { return dir / name; }
};

// Where each file goes: the cache's blobs and snapshot links, or a plain folder. Every folder is
// opened as common/trusted_folder.h says (one component at a time, no link followed, each one this
// user's or root's and writable by nobody else unless sticky): a cache in a folder other users can
// write, where one of them made the repo's folders, is refused. Every file is then opened relative to
// its folder with O_NOFOLLOW (and O_EXCL for a temporary), so a link planted in a sticky folder is
// never written through either.
class Destination {
 public:
  Destination(std::optional<fs::path> to, const std::string& repo, std::string commit)
      : to_(std::move(to)), commit_(std::move(commit)) {
    if (to_) {
      shown_ = fs::absolute(*to_).lexically_normal();
      root_ = resolved(shown_);
      work_ = root_ / ".cache" / "huggingface" / "download";
    } else {
      const auto hub = engine::hub_cache_dir();
      shown_ = engine::hub_repo_dir(hub, repo) / "snapshots" / commit_;
      repo_dir_ = engine::hub_repo_dir(resolved(fs::absolute(hub)), repo);
      root_ = repo_dir_ / "snapshots" / commit_;
      work_ = repo_dir_.parent_path() / ".locks" / repo_dir_.filename();  // where huggingface_hub keeps its locks
    }
  }
  // The folder to give --model (as the user named it).
  const fs::path& root() const { return shown_; }
  fs::path space_probe() const { return to_ ? root_ : repo_dir_; }

  // The finished bytes' file; the partial one, named by the ETag so that a later commit's version of
  // the file never resumes this one's bytes (as huggingface_hub names both); the lock.
  Place final_place(const HubFile& f) const { return to_ ? in(root_, f.path, "") : Place{repo_dir_ / "blobs", f.etag}; }
  Place partial_place(const HubFile& f) const {
    return to_ ? in(work_, f.path, "." + f.etag + ".incomplete") : Place{repo_dir_ / "blobs", f.etag + ".incomplete"};
  }
  Place lock_place(const HubFile& f) const { return to_ ? in(work_, f.path, ".lock") : Place{work_, f.etag + ".lock"}; }

  // The folder `dir`, opened (and made, when `create`) as the class comment says; an invalid Fd for
  // a folder that is not there when not `create`. Throws naming the folder at fault.
  Fd folder(const fs::path& dir, bool create) const {
    try {
      return Fd(common::open_trusted_folder(dir, create ? std::optional<mode_t>(0755) : std::nullopt));
    } catch (const common::FolderError& e) {
      if (!create && e.code() == std::errc::no_such_file_or_directory) return Fd();
      const bool hostile = e.code() == std::errc::operation_not_permitted || e.code() == std::errc::too_many_symbolic_link_levels;
      throw std::runtime_error("cannot write into " + dir.string() + ": " + e.what() +
                               (!hostile ? ""
                                : to_   ? " (pull --to a folder of your own)"
                                        : " (the cache is in a folder another user controls: set HF_HUB_CACHE to a folder "
                                          "of your own, or pull --to DIR)"));
    }
  }

  // The bytes a partial download holds (an estimate for the summary: links and others' files count 0).
  uint64_t partial_size(const HubFile& f) const {
    struct stat st {};
    return ::lstat(partial_place(f).path().c_str(), &st) == 0 && S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  }

  bool present(const HubFile& f) const {
    const Place at = final_place(f);
    const Fd dir = folder(at.dir, false);
    struct stat st {};
    if (dir.get() < 0 || ::fstatat(dir.get(), at.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != ::geteuid() || static_cast<uint64_t>(st.st_size) != f.size)
      return false;
    if (!to_) return true;  // a blob's name is its content's
    std::istringstream meta(read_small(in(work_, f.path, ".metadata")));  // the commit, the ETag (and a time)
    std::string commit, etag;
    return std::getline(meta, commit) && std::getline(meta, etag) && etag == f.etag;
  }

  // The finished file under its name: the snapshot's relative symlink into blobs/ (as huggingface_hub
  // makes it), or the metadata that lets a later pull into DIR skip it.
  void publish(const HubFile& f) const {
    if (to_) {
      write_small(in(work_, f.path, ".metadata"), commit_ + "\n" + f.etag + "\n");
      return;
    }
    const Place link = in(root_, f.path, "");
    const std::string target = (repo_dir_ / "blobs" / f.etag).lexically_relative(link.dir).string();
    const Fd dir = folder(link.dir, true);
    char was[PATH_MAX];
    const ssize_t n = ::readlinkat(dir.get(), link.name.c_str(), was, sizeof was);
    if (n >= 0 && std::string(was, static_cast<size_t>(n)) == target) return;
    if (::unlinkat(dir.get(), link.name.c_str(), 0) != 0 && errno != ENOENT) throw_io("cannot replace", link.path());
    if (::symlinkat(target.c_str(), dir.get(), link.name.c_str()) != 0) throw_io("cannot make the link", link.path());
  }

  void write_ref(const std::string& revision) const {
    if (to_ || revision == commit_) return;
    write_small(in(repo_dir_ / "refs", revision, ""), commit_);
  }

 private:
  static fs::path resolved(const fs::path& dir) {
    try {
      return common::resolve_folder(dir);
    } catch (const common::FolderError& e) {
      throw std::runtime_error(std::string("cannot write into ") + dir.string() + ": " + e.what());
    }
  }

  // The file `rel` (checked by HubClient: relative, no "." or ".." or empty segment) of the folder
  // `base`, its name with `suffix`.
  static Place in(const fs::path& base, const std::string& rel, const std::string& suffix) {
    const fs::path p(rel);
    return {p.has_parent_path() ? base / p.parent_path() : base, p.filename().string() + suffix};
  }

  std::string read_small(const Place& at) const {
    const Fd dir = folder(at.dir, false);
    if (dir.get() < 0) return "";
    const Fd fd(::openat(dir.get(), at.name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
    char buf[4096];
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

  // `text` as the file `at`, replaced whole: written under a name no other pull uses (O_EXCL, so
  // never through a link), then renamed over it; pulls at once each rename their own.
  void write_small(const Place& at, const std::string& text) const {
    const Fd dir = folder(at.dir, true);
    const std::string tmp = at.name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device()());
    const int fd = ::openat(dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) throw_open("cannot write", dir.get(), tmp, at.dir / tmp);
    const ssize_t n = ::write(fd, text.data(), text.size());
    const bool written = n == static_cast<ssize_t>(text.size());
    int error = n < 0 ? errno : ENOSPC;  // a short write: the disk is full
    ::close(fd);
    if (written) {
      if (::renameat(dir.get(), tmp.c_str(), dir.get(), at.name.c_str()) == 0) return;
      error = errno;
    }
    ::unlinkat(dir.get(), tmp.c_str(), 0);
    errno = error;
    throw_io("cannot write", at.path());
  }

  std::optional<fs::path> to_;
  std::string commit_;
  fs::path shown_, root_, work_, repo_dir_;
};

// Free bytes where the pull writes; RGBAQ_TEST_DISK_AVAILABLE_MB stands for them in tests.
uint64_t free_bytes(fs::path where) {
  if (const auto test = env("RGBAQ_TEST_DISK_AVAILABLE_MB"); !test.empty()) return std::strtoull(test.c_str(), nullptr, 10) << 20;
  std::error_code ec;
  while (!fs::exists(where, ec) && where.has_parent_path() && where != where.parent_path()) where = where.parent_path();
  struct statvfs s{};
  if (statvfs(where.c_str(), &s) != 0) throw_io("cannot read the free space of", where);
  return static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
}

class Puller {
 public:
  Puller(HubClient& client, std::string repo, std::string commit, const Destination& dest, std::ostream& err)
      : client_(client), repo_(std::move(repo)), commit_(std::move(commit)), dest_(dest), err_(err) {}

  void set_progress(DownloadProgress* p) { progress_ = p; }

  // Downloads `f` unless it is there, resuming a partial download; verifies and publishes it.
  void fetch(const HubFile& f) {
    const Place at = dest_.lock_place(f);
    const Fd dir = dest_.folder(at.dir, true);
    const Fd lock(::openat(dir.get(), at.name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644));
    if (lock.get() < 0) throw_open("cannot open the lock", dir.get(), at.name, at.path());
    struct stat st {};
    if (::fstat(lock.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      throw std::runtime_error("the lock " + at.path().string() + " is not a plain file; delete it and pull again");
    }
    if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
      err_ << "rgbaq model pull: waiting for another pull of " << printable(f.path) << "\n";
      ::flock(lock.get(), LOCK_EX);
    }
    if (!dest_.present(f)) download(f);
    dest_.publish(f);
  }

 private:
  void download(const HubFile& f) {
    const Place part = dest_.partial_place(f), done = dest_.final_place(f);
    const fs::path partial = part.path();
    const Fd part_dir = dest_.folder(part.dir, true);
    const Fd done_dir = dest_.folder(done.dir, true);
    const Fd file(::openat(part_dir.get(), part.name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644));
    if (file.get() < 0) throw_open("cannot open", part_dir.get(), part.name, partial);
    const int fd = file.get();
    // Resumed only if it is this user's own plain file with no other name (not a FIFO, not another
    // user's file, not a hard link to one of this user's other files).
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw_io("cannot read", partial);
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1) {
      throw std::runtime_error(partial.string() + " is not a plain file of this user's alone (uid " + std::to_string(st.st_uid) +
                               ", " + std::to_string(st.st_nlink) + " names); not writing to it: delete it and pull again");
    }
    uint64_t offset = static_cast<uint64_t>(st.st_size);
    if (offset > f.size) offset = 0;
    if (::ftruncate(fd, static_cast<off_t>(offset)) != 0) throw_io("cannot truncate", partial);
    if (progress_) progress_->start_file(f.path, f.size, offset);
    for (int attempt = 1;; ++attempt) {
      try {
        client_.download(
            repo_, commit_, f, offset,
            [&](uint64_t start) {
              if (start == offset) return;
              if (start != 0) {  // the bytes from `offset` were asked for: the same, or all of them
                throw HubError(HubErrorKind::kServer, repo_ + ": " + f.path + ": the server sends bytes from " +
                                                          std::to_string(start) + ", not from " + std::to_string(offset) +
                                                          " as asked");
              }
              if (::ftruncate(fd, static_cast<off_t>(start)) != 0) throw_io("cannot truncate", partial);
              offset = start;
              if (progress_) progress_->rewind_file(start);
            },
            [&](const char* data, size_t n) {
              if (n > f.size - offset) {
                throw HubError(HubErrorKind::kServer, repo_ + ": " + f.path + ": the server sends more than the " +
                                                          std::to_string(f.size) + " bytes the listing gives");
              }
              for (size_t written = 0; written < n;) {
                const ssize_t w = ::pwrite(fd, data + written, n - written, static_cast<off_t>(offset + written));
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0) throw_io("cannot write", partial);
                written += static_cast<size_t>(w);
              }
              offset += n;
              if (progress_) progress_->advance(n);
            });
        break;
      } catch (const HubError& e) {
        if (e.kind() != HubErrorKind::kNetwork || attempt == kAttempts) throw;
        if (progress_) progress_->finish();
        err_ << "rgbaq model pull: " << printable(e.what()) << "; resuming at byte " << offset << " (try " << attempt + 1
             << " of " << kAttempts << ")\n";
        std::this_thread::sleep_for(std::chrono::milliseconds(500 * attempt));
        if (progress_) progress_->start_file(f.path, f.size, offset);
      }
    }
    if (::fsync(fd) != 0) throw_io("cannot write", partial);
    if (offset != f.size) {
      throw std::runtime_error(repo_ + ": " + f.path + ": the server sent " + std::to_string(offset) + " bytes; the listing gives " +
                               std::to_string(f.size));
    }
    if (f.lfs) {
      const std::string got = common::sha256_file_hex(partial, 0);
      if (got != f.etag) {
        ::unlinkat(part_dir.get(), part.name.c_str(), 0);
        throw std::runtime_error(repo_ + ": " + f.path + ": SHA-256 mismatch: the Hub gives " + f.etag +
                                 ", the downloaded bytes hash to " + got + "; the partial file was deleted, pull again");
      }
    }
    if (::renameat(part_dir.get(), part.name.c_str(), done_dir.get(), done.name.c_str()) != 0) {
      throw_io("cannot rename " + partial.string() + " to", done.path());
    }
    if (progress_) progress_->finish_file();
  }

  HubClient& client_;
  std::string repo_, commit_;
  const Destination& dest_;
  std::ostream& err_;
  DownloadProgress* progress_ = nullptr;
};

int pull(const common::Arguments& a, std::ostream& out, std::ostream& err) {
  if (a.positionals().size() > 1) throw UsageError("model pull takes one REPO[@REV]");
  const std::string spec = a.positionals().empty() ? kDefaultRepo : a.positionals()[0];
  const auto ref = engine::parse_hub_repo_ref(spec);
  if (!ref) throw UsageError("\"" + spec + "\" is not a Hugging Face repo id ORG/NAME[@REVISION]");
  const auto quantize = a.get("quantize");
  if (quantize && *quantize != "int8") throw UsageError("--quantize \"" + *quantize + "\": only int8 is known");
  std::string endpoint = a.get("endpoint").value_or(env("HF_ENDPOINT"));
  if (endpoint.empty()) endpoint = "https://huggingface.co";
  std::optional<fs::path> to;
  if (const auto d = a.get("to")) to = *d;

  std::unique_ptr<HubClient> client;
  try {
    client = std::make_unique<HubClient>(endpoint, read_token(a.get("token-file")));
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--endpoint: ") + e.what());
  }
  // Said before the first request, and the wait counted: a server that takes the connection and never
  // answers would otherwise look like a pull that hangs (libcurl gives up after a minute of silence).
  const bool terminal = isatty(STDERR_FILENO) != 0;
  err << "rgbaq model pull: asking " << client->endpoint() << " for " << ref->repo << "@" << ref->revision << "\n" << std::flush;
  client->on_waiting([&](int seconds) {
    if (terminal) {
      err << "\r  no answer yet: " << seconds << " s (gives up after 60 s of silence)" << std::flush;
    } else if (seconds == 2 || seconds % 5 == 0) {
      err << "  no answer yet from " << client->endpoint() << ": " << seconds << " s (gives up after 60 s of silence)\n" << std::flush;
    }
  });
  const HubRevision revision = client->revision(ref->repo, ref->revision);
  client->on_waiting(nullptr);  // the downloads have their own progress
  if (terminal) err << "\r\033[K" << std::flush;
  std::map<std::string, HubFile> by_path;
  for (const auto& f : revision.files) by_path[f.path] = f;
  std::set<std::string> listing;
  for (const auto& [path, f] : by_path) listing.insert(path);

  const Destination dest(to, ref->repo, revision.commit);
  Puller puller(*client, ref->repo, revision.commit, dest, err);
  // The model index and the shard indexes say which weights are needed: fetched first (a few KiB).
  const auto needed = engine::model_files_needed(listing, [&](const std::string& rel) {
    puller.fetch(by_path.at(rel));
    return engine::read_json_object(dest.root() / rel);
  });
  std::string lacking;
  for (const auto& f : needed)
    if (!listing.count(f)) lacking += (lacking.empty() ? "" : ", ") + f;
  if (!lacking.empty()) {
    throw BadRepo(spec + " (commit " + revision.commit + ") lacks files rgbaq reads: " + lacking +
                  "; is it a Qwen-Image-2.1 diffusers repo?");
  }
  std::vector<HubFile> files;
  for (const auto& p : needed) files.push_back(by_path.at(p));
  for (const auto& p : engine::model_companion_files(listing, needed)) files.push_back(by_path.at(p));

  // Each size is under 2^63 (HubClient checks), their sum need not be: a wrapped sum would pass the
  // free-space check. to_fetch is at most total.
  uint64_t total = 0, to_fetch = 0;
  int fetching = 0;
  for (const auto& f : files) {
    if (__builtin_add_overflow(total, f.size, &total)) {
      throw HubError(HubErrorKind::kServer, ref->repo + "@" + ref->revision + " (commit " + revision.commit +
                                                "): the listed sizes of the files to pull add up to more than 2^64 bytes (past " +
                                                f.path + ", listed at " + std::to_string(f.size) +
                                                " bytes); refusing the listing before downloading");
    }
    if (dest.present(f)) continue;
    to_fetch += f.size - std::min(f.size, dest.partial_size(f));
    ++fetching;
  }
  err << ref->repo << "@" << ref->revision << ": commit " << revision.commit << ", " << files.size() << " files, "
      << format_bytes(total) << "; to download: " << format_bytes(to_fetch) << " (" << fetching << " files)\n";
  const uint64_t free = free_bytes(dest.space_probe());
  if (to_fetch > free) {
    throw std::runtime_error("not enough disk space: the pull needs " + format_bytes(to_fetch) + ", " + format_bytes(free) +
                             " are free on " + dest.space_probe().string() +
                             (to ? "" : " (set HF_HUB_CACHE to a bigger disk, or pull --to DIR)"));
  }
  DownloadProgress progress(err, isatty(STDERR_FILENO) != 0, to_fetch, fetching);
  puller.set_progress(&progress);
  for (const auto& f : files) puller.fetch(f);
  progress.finish();
  dest.write_ref(ref->revision);
  out << dest.root().string() << "\n";
  err << "render with: rgbaqd render --model " << (to ? dest.root().string() : spec) << " --prompt \"...\" -o out.png\n";

  if (quantize) {
    const fs::path int8 = to ? fs::path(dest.root().string() + "-int8")
                             : paths::default_data_dir() / "models" /
                                   (engine::hub_repo_dir("", ref->repo).filename().string().substr(8) + "-" +
                                    revision.commit.substr(0, 12) + "-int8");
    fs::create_directories(int8.parent_path());
    const auto result = engine::quantize_model(dest.root(), int8, {"transformer", "text_encoder"});
    for (const auto& c : result.components) {
      err << c.role << ": " << c.quantized << " Linear weights to int8, " << format_bytes(c.bytes_before) << " -> "
          << format_bytes(c.bytes_after) << "\n";
    }
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (const auto& [name, dir] : {std::pair{"bf16", dest.root()}, {"int8", int8}}) {
      for (const auto& m : engine::estimate_render_memory(engine::ModelDirectory::open(dir), threads)) {
        if (m.size == 1024) err << name << " on " << m.engine << " at 1024x1024 needs about " << format_bytes(m.total()) << "\n";
      }
    }
    out << int8.string() << "\n";
  }
  return 0;
}

}  // namespace

int model_pull_command(const std::vector<std::string>& words, std::ostream& out, std::ostream& err) {
  const common::Arguments a(words, {"to", "endpoint", "token-file", "quantize"}, {"help"});
  if (a.has("help")) {
    out << kModelPullHelp;
    return 0;
  }
  try {
    return pull(a, out, err);
  } catch (const HubError& e) {
    err << "rgbaq model pull: " << printable(e.what()) << "\n";
    return e.kind() == HubErrorKind::kDenied || e.kind() == HubErrorKind::kNotFound ? 2 : 1;
  } catch (const BadRepo& e) {
    err << "rgbaq model pull: " << printable(e.what()) << "\n";
    return 2;
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    err << "rgbaq model pull: " << printable(e.what()) << "\n";
    return 1;
  }
}

}  // namespace rgbaq::cli
