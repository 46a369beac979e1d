#pragma once
// The parts of the Hugging Face Hub's HTTP protocol `rgbaq model pull` uses, over libcurl: a revision
// resolved to its commit with the file listing (`/api/models/REPO/revision/REV?blobs=true`), and a
// file's bytes from `/REPO/resolve/COMMIT/PATH`, which answers an LFS file with a redirect to a CDN
// (huggingface_hub's file_download.py: X-Repo-Commit, X-Linked-Etag, X-Linked-Size, Range). The token
// goes only to the Hub's own origin, never to a host a redirect leads to.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rgbaq::cli {

// What went wrong, for the exit code and the advice: kDenied (401/403) and kNotFound (404) are the
// user's input (exit 2); kNetwork (no answer, a dropped connection) and kServer are failures (exit 1).
enum class HubErrorKind { kDenied, kNotFound, kNetwork, kServer };

class HubError : public std::runtime_error {
 public:
  HubError(HubErrorKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  HubErrorKind kind() const { return kind_; }

 private:
  HubErrorKind kind_;
};

// One file of a listing, as HubClient::revision checked it: nothing in it leads out of the folder
// the pull writes into.
struct HubFile {
  std::string path;  // "transformer/diffusion_pytorch_model-00001-of-00002.safetensors": relative, its
                     // segments neither empty nor "." nor "..", no control character
  uint64_t size = 0;  // at most 2^63-1 (an off_t)
  std::string etag;  // the name huggingface_hub gives its blob: the LFS SHA-256 (64 lower-case hex
                     // digits), else the git blob id (40, or 64 in a SHA-256 repo)
  bool lfs = false;  // then `etag` is the SHA-256 the bytes must hash to
};

struct HubRevision {
  std::string commit;  // 40 hex digits
  std::vector<HubFile> files;
};

class HubClient {
 public:
  // `endpoint`: "https://huggingface.co" or a mirror; `token` empty for none.
  HubClient(std::string endpoint, std::string token);
  ~HubClient();
  HubClient(const HubClient&) = delete;
  HubClient& operator=(const HubClient&) = delete;

  const std::string& endpoint() const { return endpoint_; }

  // Called while a request has had no answer yet (not even a status line), with the whole seconds
  // waited so far, about once a second: a server that takes the connection and never answers is
  // seen to be waited for, not taken for a hang.
  void on_waiting(std::function<void(int seconds)> report) { on_waiting_ = std::move(report); }

  // The commit `revision` names and every file it holds. Throws HubError; kServer for a listing with
  // a file that breaks HubFile's rules (a path that climbs out, an ETag that is not a hash, a size
  // over 2^63-1 or not a count, a path twice), naming the file, the field and the value.
  HubRevision revision(const std::string& repo, const std::string& revision);

  // Appends the bytes of `file` from `offset` on to `sink` (resuming with a Range request); `sink`
  // gets the offset the server's bytes start at first (0 when it ignored the range) and then each
  // chunk. Checks the Hub's X-Repo-Commit and ETag against `commit` and `file.etag` before a byte is
  // taken. Throws HubError (kNetwork for a connection dropped part way).
  void download(const std::string& repo, const std::string& commit, const HubFile& file, uint64_t offset,
                const std::function<void(uint64_t start)>& begin, const std::function<void(const char*, size_t)>& sink);

 private:
  struct Response {
    long status = 0;
    std::map<std::string, std::string> headers;  // lower-case names, of the last response
    std::string body;                            // of a non-2xx answer or a JSON request
    std::string redirect;                        // absolute Location of a 3xx
  };
  using BodySink = std::function<void(const Response&, const char*, size_t)>;
  // One request, no redirects followed; a 2xx body goes to `sink` when given, else into body.
  Response perform(const std::string& url, std::optional<uint64_t> range_from, const BodySink* sink);
  [[noreturn]] void fail(const Response& r, const std::string& what) const;

  std::string endpoint_, token_;
  std::function<void(int seconds)> on_waiting_;
  void* curl_;  // CURL*
};

// "https://huggingface.co" -> "https://huggingface.co:443": the origin a token may go to.
std::string url_origin(const std::string& url);

}  // namespace rgbaq::cli
