#include "cli/model_pull.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <thread>

#include "cli/download_progress.h"
#include "cli/hub_client.h"
#include "common/arguments.h"
#include "common/printable_text.h"
#include "common/sha256.h"
#include "daemon/socket_paths.h"
#include "engine/hf_cache.h"
#include "engine/model_config.h"
#include "engine/model_directory.h"
#include "engine/model_files.h"
#include "engine/model_quantizer.h"
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
Exit: 0 done, 1 network, disk or a hash that does not match, 2 usage, not found, token refused.
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
  throw std::runtime_error(what + " " + path.string() + ": " + std::strerror(e) +
                           (e == ENOSPC || e == EDQUOT ? " (the disk is full)" : ""));
}

// Where each file goes: the cache's blobs and snapshot links, or a plain folder.
class Destination {
 public:
  Destination(std::optional<fs::path> to, const std::string& repo, std::string commit)
      : to_(std::move(to)), commit_(std::move(commit)) {
    if (to_) {
      root_ = fs::absolute(*to_).lexically_normal();
      work_ = root_ / ".cache" / "huggingface" / "download";
    } else {
      const auto hub = engine::hub_cache_dir();
      repo_dir_ = engine::hub_repo_dir(hub, repo);
      root_ = repo_dir_ / "snapshots" / commit_;
      work_ = hub / ".locks" / repo_dir_.filename();  // where huggingface_hub keeps its locks
    }
  }
  const fs::path& root() const { return root_; }
  fs::path space_probe() const { return to_ ? root_ : repo_dir_; }
  // The finished bytes' file.
  fs::path final_path(const HubFile& f) const { return to_ ? root_ / f.path : repo_dir_ / "blobs" / f.etag; }
  fs::path partial_path(const HubFile& f) const {
    return to_ ? work_ / (f.path + ".incomplete") : repo_dir_ / "blobs" / (f.etag + ".incomplete");
  }
  fs::path lock_path(const HubFile& f) const { return to_ ? work_ / (f.path + ".lock") : work_ / (f.etag + ".lock"); }

  bool present(const HubFile& f) const {
    std::error_code ec;
    const auto p = final_path(f);
    if (!fs::is_regular_file(p, ec) || fs::file_size(p, ec) != f.size) return false;
    if (!to_) return true;  // a blob's name is its content's
    std::ifstream meta(work_ / (f.path + ".metadata"));
    std::string commit, etag;
    return std::getline(meta, commit) && std::getline(meta, etag) && etag == f.etag;
  }

  // The finished file under its name: the snapshot's relative symlink into blobs/ (as huggingface_hub
  // makes it), or the metadata that lets a later pull into DIR skip it.
  void publish(const HubFile& f) const {
    if (to_) {
      write_small(work_ / (f.path + ".metadata"), commit_ + "\n" + f.etag + "\n");
      return;
    }
    const fs::path link = root_ / f.path;
    fs::create_directories(link.parent_path());
    const fs::path target = (repo_dir_ / "blobs" / f.etag).lexically_relative(link.parent_path());
    std::error_code ec;
    if (fs::is_symlink(link, ec) && fs::read_symlink(link, ec) == target) return;
    fs::remove(link, ec);
    fs::create_symlink(target, link);
  }

  void write_ref(const std::string& revision) const {
    if (to_ || revision == commit_) return;
    write_small(repo_dir_ / "refs" / revision, commit_);
  }

 private:
  static void write_small(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    const fs::path tmp = path.string() + ".tmp";
    {
      std::ofstream o(tmp, std::ios::trunc);
      o << text;
      if (!o.flush()) throw_io("cannot write", tmp);
    }
    fs::rename(tmp, path);
  }

  std::optional<fs::path> to_;
  std::string commit_;
  fs::path root_, work_, repo_dir_;
};

uint64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

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
    fs::create_directories(dest_.lock_path(f).parent_path());
    const int lock = ::open(dest_.lock_path(f).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0) throw_io("cannot open the lock", dest_.lock_path(f));
    struct Unlock {
      int fd;
      ~Unlock() { ::close(fd); }
    } unlock{lock};
    if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
      err_ << "rgbaq model pull: waiting for another pull of " << printable(f.path) << "\n";
      ::flock(lock, LOCK_EX);
    }
    if (!dest_.present(f)) download(f);
    dest_.publish(f);
  }

 private:
  void download(const HubFile& f) {
    const fs::path partial = dest_.partial_path(f), final_path = dest_.final_path(f);
    fs::create_directories(partial.parent_path());
    fs::create_directories(final_path.parent_path());
    const int fd = ::open(partial.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw_io("cannot open", partial);
    struct Close {
      int fd;
      ~Close() { ::close(fd); }
    } close_fd{fd};
    uint64_t offset = file_size_or_zero(partial);
    if (offset > f.size) offset = 0;
    if (::ftruncate(fd, static_cast<off_t>(offset)) != 0) throw_io("cannot truncate", partial);
    if (progress_) progress_->start_file(f.path, f.size, offset);
    for (int attempt = 1;; ++attempt) {
      try {
        client_.download(
            repo_, commit_, f, offset,
            [&](uint64_t start) {
              if (start == offset) return;
              if (::ftruncate(fd, static_cast<off_t>(start)) != 0) throw_io("cannot truncate", partial);
              offset = start;
              if (progress_) progress_->rewind_file(start);
            },
            [&](const char* data, size_t n) {
              if (offset + n > f.size) {
                throw HubError(HubErrorKind::kServer, repo_ + ": " + f.path + ": the server sends more than the " +
                                                          std::to_string(f.size) + " bytes the listing gives");
              }
              for (size_t done = 0; done < n;) {
                const ssize_t w = ::pwrite(fd, data + done, n - done, static_cast<off_t>(offset + done));
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0) throw_io("cannot write", partial);
                done += static_cast<size_t>(w);
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
        std::error_code ec;
        fs::remove(partial, ec);
        throw std::runtime_error(repo_ + ": " + f.path + ": SHA-256 mismatch: the Hub gives " + f.etag +
                                 ", the downloaded bytes hash to " + got + "; the partial file was deleted, pull again");
      }
    }
    fs::rename(partial, final_path);
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
  const HubRevision revision = client->revision(ref->repo, ref->revision);
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

  uint64_t total = 0, to_fetch = 0;
  int fetching = 0;
  for (const auto& f : files) {
    total += f.size;
    if (dest.present(f)) continue;
    to_fetch += f.size - std::min(f.size, file_size_or_zero(dest.partial_path(f)));
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
