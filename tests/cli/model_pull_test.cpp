// `rgbaq model pull` and `--model ORG/NAME` against a fake Hub (tests/cli/fake_hub.py, Python's
// http.server on 127.0.0.1 with a second "CDN" port): the huggingface_hub cache layout it writes, a
// render from it equal to one from the folder the tiny model was made in, resumption after a dropped
// connection and after SIGKILL, a corrupted byte, tokens (refused, and never sent to the CDN), and a
// cache written the way huggingface_hub writes it read in place; and a hostile Hub or a hostile peer:
// listed ETags and paths that lead outside the cache, sizes that wrap, links another user plants in a
// shared cache, a folder pull resumed across a commit, six pulls at once. The hashes come from the
// server's hashlib, the bytes from the tiny model's own files.
#include <gtest/gtest.h>

#include <signal.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netinet/in.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "storage/png_file.h"
#include "tests/daemon/tmux_terminal.h"
#include "tests/run_process.h"
#include "tests/test_temp_dir.h"

namespace rgbaq {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kRgbaq = RGBAQ_CLI_PATH;
const std::string kRgbaqd = RGBAQD_PATH;
const std::string kMakeTinyModel = RGBAQ_MAKE_TINY_MODEL_PATH;
const std::string kPython = RGBAQ_PYTHON3_PATH;
const std::string kFakeHub = RGBAQ_FAKE_HUB_PATH;
constexpr const char* kCommit = "4f1c2b7e9a0d3c5b8e6f1a2d4c7b9e0f3a5d8c1b";
constexpr const char* kCommit2 = "9b0e3d6c2a8f5e1b7d4c0a9f6e3b2d8c5a1f7e40";
constexpr const char* kShard = "text_encoder/model-00001-of-00002.safetensors";
constexpr uid_t kNobody = 65534;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `args` in the background, its output discarded, or its stderr into `err_file`.
pid_t spawn(const std::vector<std::string>& args, const std::string& err_file = "/dev/null") {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen(err_file.c_str(), "w", stderr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// The fake Hub serving `root` as Org/Tiny at kCommit, with the faults its flags ask for.
class FakeHub {
 public:
  FakeHub(const fs::path& dir, const fs::path& root, const std::vector<std::string>& flags, const std::string& commit = kCommit)
      : dir_(dir) {
    fs::create_directories(dir);
    std::vector<std::string> args = {kPython, kFakeHub, "--root", root.string(), "--repo", "Org/Tiny", "--commit", commit,
                                     "--port-file", (dir / "port").string(), "--log", (dir / "log").string()};
    args.insert(args.end(), flags.begin(), flags.end());
    pid_ = spawn(args);
    for (int i = 0; i < 600 && !fs::exists(dir / "port"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(dir / "port");
    in >> hub_port_ >> cdn_port_;
    manifest_ = json::parse(slurp(dir / "manifest.json"));
  }
  ~FakeHub() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(hub_port_); }
  const json& manifest() const { return manifest_; }
  std::vector<json> requests() const {
    std::vector<json> out;
    std::istringstream in(slurp(dir_ / "log"));
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
  int hub_port_ = 0, cdn_port_ = 0;
  json manifest_;
};

class ModelPull : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = tmp_.path() / "tiny";
    ASSERT_EQ(run_process({kMakeTinyModel, model_.string(), "--layout", "published"}).exit_code, 0);
    hub_cache_ = tmp_.path() / "hub";
    setenv("HF_HUB_CACHE", hub_cache_.c_str(), 1);
    unsetenv("HF_TOKEN");
    unsetenv("HF_ENDPOINT");
    setenv("HF_HOME", (tmp_.path() / "hf-home").c_str(), 1);  // no token file of the machine's user
  }
  void TearDown() override { unsetenv("HF_HUB_CACHE"); unsetenv("HF_TOKEN"); unsetenv("HF_HOME"); }

  fs::path repo_dir() const { return hub_cache_ / "models--Org--Tiny"; }
  fs::path snapshot() const { return repo_dir() / "snapshots" / kCommit; }

  // Every file of the tiny model is in the snapshot as a relative symlink to the blob named by its
  // ETag (the sha256 of an LFS file, the git blob id of another), with the model's own bytes.
  void expect_cache_holds_the_model(const FakeHub& hub) {
    EXPECT_EQ(slurp(repo_dir() / "refs" / "main"), kCommit);
    for (const auto& [rel, e] : hub.manifest().items()) {
      const fs::path link = snapshot() / rel;
      ASSERT_TRUE(fs::is_symlink(link)) << rel;
      const std::string name = e["lfs"].get<bool>() ? e["sha256"].get<std::string>() : e["blob_id"].get<std::string>();
      const int depth = static_cast<int>(std::count(rel.begin(), rel.end(), '/'));
      std::string up;
      for (int i = 0; i < depth + 2; ++i) up += "../";
      EXPECT_EQ(fs::read_symlink(link).string(), up + "blobs/" + name) << rel;
      EXPECT_TRUE(slurp(link) == slurp(model_ / rel)) << rel;
    }
    for (const auto& entry : fs::recursive_directory_iterator(repo_dir()))
      EXPECT_EQ(entry.path().string().find(".incomplete"), std::string::npos) << entry.path();
  }

  ProcessResult pull(const FakeHub& hub, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {kRgbaq, "model", "pull", "Org/Tiny", "--endpoint", hub.url()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_process(args);
  }

  std::vector<uint8_t> render(const std::string& model, const std::string& name) {
    const auto out = (tmp_.path() / (name + ".png")).string();
    const auto r = run_process({kRgbaqd, "render", "--model", model, "--prompt", "a red fox", "--seed", "7", "--size", "128",
                                "-o", out, "--engine", "cpu"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? storage::read_png(out).rgba : std::vector<uint8_t>{};
  }

  // The tiny model's files with each big one cut to a few bytes: a fake Hub that starts at once, for
  // the tests where no weight is meant to be read.
  fs::path small_copy() {
    const auto dir = tmp_.path() / "small";
    if (!fs::exists(dir)) {
      fs::copy(model_, dir, fs::copy_options::recursive);
      for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file() && e.file_size() > 65536) std::ofstream(e.path(), std::ios::trunc) << "not the weights";
    }
    return dir;
  }

  TempDir tmp_;
  fs::path model_, hub_cache_;
};

TEST_F(ModelPull, PullsIntoTheHuggingFaceCacheAndRendersTheSameImage) {
  FakeHub hub(tmp_.path() / "server", model_, {});
  auto r = pull(hub);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, snapshot().string() + "\n");
  EXPECT_NE(r.err.find("commit " + std::string(kCommit) + ", 12 files"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;  // not a terminal: no bars
  expect_cache_holds_the_model(hub);

  const auto from_folder = render(model_.string(), "folder");
  ASSERT_FALSE(from_folder.empty());
  EXPECT_EQ(render("Org/Tiny", "repo"), from_folder);
  EXPECT_EQ(render("Org/Tiny@main", "repo-main"), from_folder);
  EXPECT_EQ(render(std::string("Org/Tiny@") + kCommit, "repo-commit"), from_folder);
  // The image's parameters name the model by its repo's name, not by the snapshot's commit.
  const auto parameters = storage::read_png_info(tmp_.path() / "repo.png").texts.at("parameters");
  EXPECT_NE(parameters.find(", Model: Tiny, "), std::string::npos) << parameters;
  r = run_process({kRgbaq, "model", "check", "Org/Tiny", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["model"], snapshot().string());

  // Pulled again: only the revision is asked for, no file.
  const size_t before = hub.requests().size();
  r = pull(hub);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto after = hub.requests();
  ASSERT_EQ(after.size(), before + 1);
  EXPECT_NE(after.back()["path"].get<std::string>().find("/api/models/Org/Tiny/revision/main"), std::string::npos);
}

// Into a plain folder; files of the repo no graph reads (another dtype's variant, another format, a
// README) stay on the Hub.
TEST_F(ModelPull, PullsIntoAFolder) {
  const auto served = tmp_.path() / "served";
  fs::copy(model_, served, fs::copy_options::recursive);
  const std::vector<std::string> unread = {"transformer/diffusion_pytorch_model.fp16.safetensors",
                                           "vae/diffusion_pytorch_model.bin", "README.md"};
  for (const auto& f : unread) std::ofstream(served / f) << "not read by rgbaq";
  FakeHub hub(tmp_.path() / "server", served, {});
  const auto dir = tmp_.path() / "plain";
  auto r = pull(hub, {"--to", dir.string(), "--quantize", "int8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, dir.string() + "\n" + dir.string() + "-int8\n");
  for (const auto& [rel, e] : hub.manifest().items()) {
    if (std::find(unread.begin(), unread.end(), rel) != unread.end()) {
      EXPECT_FALSE(fs::exists(dir / rel)) << rel;
      continue;
    }
    EXPECT_FALSE(fs::is_symlink(dir / rel)) << rel;
    EXPECT_TRUE(slurp(dir / rel) == slurp(model_ / rel)) << rel;
  }
  for (const char* form : {"bf16 on cpu at 1024x1024 needs about ", "int8 on cpu at 1024x1024 needs about "})
    EXPECT_NE(r.err.find(form), std::string::npos) << r.err;
  EXPECT_EQ(run_process({kRgbaq, "model", "check", dir.string()}).exit_code, 0);
  r = run_process({kRgbaq, "model", "check", dir.string() + "-int8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json checked = json::parse(r.out);  // held: a range-for over a temporary's member would dangle
  for (const auto& c : checked["components"])
    if (c["role"] == "transformer") EXPECT_EQ(c["int8_linears"], 22);  // every Linear of the tiny DiT
  // Pulled again into the folder: nothing is downloaded.
  const size_t before = hub.requests().size();
  ASSERT_EQ(pull(hub, {"--to", dir.string()}).exit_code, 0);
  EXPECT_EQ(hub.requests().size(), before + 1);
}

TEST_F(ModelPull, ResumesAfterTheServerDropsTheConnectionHalfWay) {
  FakeHub hub(tmp_.path() / "server", model_, {"--drop-after", "500000"});
  const auto r = pull(hub);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming at byte 500000"), std::string::npos) << r.err;
  expect_cache_holds_the_model(hub);
  // Each LFS file's second transfer asked the CDN for the rest only.
  int resumed = 0;
  for (const auto& q : hub.requests())
    if (q["server"] == "cdn" && q["range"] == "bytes=500000-") ++resumed;
  EXPECT_EQ(resumed, 5);  // the tokenizer, two encoder shards, the DiT and the VAE
}

TEST_F(ModelPull, ResumesAfterTheClientIsKilled) {
  const auto shard = hub_cache_ / "models--Org--Tiny" / "blobs";
  std::string blob;
  {
    FakeHub slow(tmp_.path() / "slow", model_, {"--slow", kShard});
    blob = slow.manifest()[kShard]["sha256"];
    const pid_t pid = spawn({kRgbaq, "model", "pull", "Org/Tiny", "--endpoint", slow.url()});
    const auto partial = shard / (blob + ".incomplete");
    bool partway = false;
    for (int i = 0; i < 1200 && !partway; ++i) {
      std::error_code ec;
      partway = fs::file_size(partial, ec) > 100000 && !ec;
      if (!partway) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    ASSERT_TRUE(partway) << "the pull never got part way through " << kShard;
    // The partial file is there under its .incomplete name only.
    EXPECT_FALSE(fs::exists(shard / blob));
    EXPECT_FALSE(fs::exists(snapshot() / kShard));
  }
  const auto kept = fs::file_size(shard / (blob + ".incomplete"));
  FakeHub hub(tmp_.path() / "server", model_, {});
  const auto r = pull(hub);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_cache_holds_the_model(hub);
  bool asked_for_the_rest = false;
  for (const auto& q : hub.requests()) {
    if (q["server"] == "cdn" && q["path"].get<std::string>().find(blob) != std::string::npos) {
      EXPECT_EQ(q["range"], "bytes=" + std::to_string(kept) + "-");
      asked_for_the_rest = true;
    }
  }
  EXPECT_TRUE(asked_for_the_rest);
}

// On a terminal: the file in hand and the whole pull, each a bar with its bytes, the rate and the ETA.
TEST_F(ModelPull, ATerminalShowsABarPerFileAndOneForTheWhole) {
  FakeHub hub(tmp_.path() / "server", model_, {"--slow", kShard});
  const uint64_t size = hub.manifest()[kShard]["size"];
  char mib[32];
  std::snprintf(mib, sizeof mib, "/ %.1f MiB", static_cast<double>(size) / (1 << 20));
  Tmux term(tmp_.path() / "tmux.sock", "pull", 100, 10,
            "env HF_HUB_CACHE=" + hub_cache_.string() + " " + kRgbaq + " model pull Org/Tiny --endpoint " + hub.url() +
                "; sleep 60");
  const bool shown = term.wait_for([&](const std::vector<std::string>& lines) {
    bool file = false, total = false;
    for (const auto& l : lines) {
      file |= l.rfind("text_encoder/model-00", 0) == 0 && l.find(mib) != std::string::npos && l.find("/s  ETA ") != std::string::npos &&
              l.find("-]") != std::string::npos;
      total |= l.rfind("total (file ", 0) == 0 && l.find("/s  ETA ") != std::string::npos && l.find("-]") != std::string::npos;
    }
    return file && total;
  });
  EXPECT_TRUE(shown) << term.screen();
}

TEST_F(ModelPull, ACorruptedByteIsRefusedNamingTheFileAndBothHashes) {
  const std::string bad = "transformer/diffusion_pytorch_model.safetensors";
  FakeHub hub(tmp_.path() / "server", model_, {"--corrupt", bad});
  const auto r = pull(hub);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(bad + ": SHA-256 mismatch: the Hub gives " + hub.manifest()[bad]["sha256"].get<std::string>() +
                       ", the downloaded bytes hash to " + hub.manifest()[bad]["served_sha256"].get<std::string>()),
            std::string::npos)
      << r.err;
  const std::string blob = hub.manifest()[bad]["sha256"];
  EXPECT_FALSE(fs::exists(repo_dir() / "blobs" / blob));
  EXPECT_FALSE(fs::exists(repo_dir() / "blobs" / (blob + ".incomplete")));
  EXPECT_FALSE(fs::exists(snapshot() / bad));
  // The model is not usable from the cache, and says what it lacks.
  const auto check = run_process({kRgbaq, "model", "check", "Org/Tiny"});
  EXPECT_EQ(check.exit_code, 2);
}

TEST_F(ModelPull, AGatedRepoWantsTheRightTokenWhichNeverGoesToTheCdn) {
  FakeHub hub(tmp_.path() / "server", model_, {"--token", "hf_good", "--token-unaccepted", "hf_unaccepted"});
  auto r = pull(hub);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the Hub asks for a token (HTTP 401, GatedRepo)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HF_TOKEN"), std::string::npos) << r.err;
  setenv("HF_TOKEN", "hf_wrong", 1);
  r = pull(hub);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the Hub refused the token (HTTP 401)"), std::string::npos) << r.err;
  setenv("HF_TOKEN", "hf_unaccepted", 1);
  r = pull(hub);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("access refused (HTTP 403, GatedRepo)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("accept its licence"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(snapshot()));

  unsetenv("HF_TOKEN");
  const auto token_file = tmp_.path() / "token";
  std::ofstream(token_file) << "hf_good\n";
  const size_t before = hub.requests().size();
  r = pull(hub, {"--token-file", token_file.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_cache_holds_the_model(hub);
  const auto requests = hub.requests();
  int hub_requests = 0, cdn_requests = 0;
  for (size_t i = before; i < requests.size(); ++i) {
    if (requests[i]["server"] == "hub") {
      ++hub_requests;
      EXPECT_EQ(requests[i]["authorization"], "Bearer hf_good");
    } else {
      ++cdn_requests;
      EXPECT_TRUE(requests[i]["authorization"].is_null()) << requests[i].dump();
    }
  }
  EXPECT_EQ(hub_requests, 1 + 12);  // the revision, then each file's resolve/
  EXPECT_EQ(cdn_requests, 5);       // the LFS files, after their redirect
}

TEST_F(ModelPull, NotFoundNoNetworkAndAFullDiskAreSaidPlainly) {
  FakeHub hub(tmp_.path() / "server", model_, {});
  auto r = run_process({kRgbaq, "model", "pull", "Org/Nothing", "--endpoint", hub.url()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Org/Nothing@main: no such repo (HTTP 404, RepoNotFound)"), std::string::npos) << r.err;
  r = run_process({kRgbaq, "model", "pull", "Org/Tiny@v9", "--endpoint", hub.url()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Org/Tiny@v9: no such revision (HTTP 404, RevisionNotFound)"), std::string::npos) << r.err;
  r = run_process({kRgbaq, "model", "pull", "Org/Tiny", "--endpoint", "http://127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot reach http://127.0.0.1:1"), std::string::npos) << r.err;
  r = run_process({kRgbaq, "model", "pull", "not a repo"});
  EXPECT_EQ(r.exit_code, 2);

  setenv("RGBAQ_TEST_DISK_AVAILABLE_MB", "10", 1);
  r = pull(hub);
  unsetenv("RGBAQ_TEST_DISK_AVAILABLE_MB");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not enough disk space: the pull needs "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("10.0 MiB are free on " + repo_dir().string()), std::string::npos) << r.err;
  for (const auto& [rel, e] : hub.manifest().items())
    if (e["lfs"].get<bool>()) EXPECT_FALSE(fs::exists(snapshot() / rel)) << rel;
}

// A cache as huggingface_hub writes it (snapshot files as relative symlinks into blobs/, refs/main
// naming the commit), made here by hand; the blobs' names, which the reader never looks at, are
// arbitrary. Read in place; a missing blob is named; a folder that exists wins over a repo id.
TEST_F(ModelPull, ReadsACacheWrittenTheHuggingFaceWayInPlace) {
  const fs::path snap = repo_dir() / "snapshots" / kCommit;
  int n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(model_)) {
    if (!entry.is_regular_file()) continue;
    const auto rel = entry.path().lexically_relative(model_);
    const std::string blob = "blob" + std::to_string(n++);
    fs::create_directories(repo_dir() / "blobs");
    fs::copy_file(entry.path(), repo_dir() / "blobs" / blob);
    fs::create_directories((snap / rel).parent_path());
    fs::create_symlink((repo_dir() / "blobs" / blob).lexically_relative((snap / rel).parent_path()), snap / rel);
  }
  fs::create_directories(repo_dir() / "refs");
  std::ofstream(repo_dir() / "refs" / "main") << kCommit;
  const auto from_folder = render(model_.string(), "folder");
  ASSERT_FALSE(from_folder.empty());
  EXPECT_EQ(render("Org/Tiny", "cache"), from_folder);
  auto r = run_process({kRgbaq, "model", "check", "Org/Tiny", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["model"], snap.string());
  // The service runs rgbaqd on the snapshot's folder (its environment may name another cache).
  r = run_process({kRgbaq, "service", "install", "--model", "Org/Tiny", "--print"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--model \"" + snap.string() + "\""), std::string::npos) << r.out;

  // A blob gone (a cleaned cache, an interrupted huggingface_hub download): the dangling link is named.
  fs::remove(fs::canonical(snap / kShard));
  fs::remove(fs::canonical(snap / "vae" / "config.json"));
  r = run_process({kRgbaq, "model", "check", "Org/Tiny"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("lacks 2 file(s) rgbaq reads: " + std::string(kShard) + ", vae/config.json"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rgbaq model pull Org/Tiny"), std::string::npos) << r.err;
  r = run_process({kRgbaqd, "render", "--model", "Org/Tiny", "--prompt", "x", "-o", (tmp_.path() / "x.png").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("lacks 2 file(s)"), std::string::npos) << r.err;
  r = run_process({kRgbaq, "model", "check", "Org/Other"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("has no models--Org--Other"), std::string::npos) << r.err;
  r = run_process({kRgbaq, "model", "check", "Org/Tiny@v2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("refs/v2"), std::string::npos) << r.err;

  // A folder Org/Tiny under the working directory is that folder, not the repo.
  const auto cwd = fs::current_path();
  fs::create_directories(tmp_.path() / "work" / "Org");
  fs::copy(model_, tmp_.path() / "work" / "Org" / "Tiny", fs::copy_options::recursive);
  fs::current_path(tmp_.path() / "work");
  r = run_process({kRgbaq, "model", "check", "Org/Tiny", "--json"});
  fs::current_path(cwd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["model"], "Org/Tiny");
}

// The blob a listed ETag names and the snapshot entry a listed path names are files the pull writes:
// a hostile Hub's "../../../victim/authorized_keys", an absolute path, an id that is not a hash or a
// path that climbs out is refused at the listing, naming the file and the field, before anything is
// written (in the cache or in --to DIR).
TEST_F(ModelPull, AListingThatLeadsOutsideTheDestinationIsRefusedBeforeAnythingIsWritten) {
  const fs::path victim = tmp_.path() / "victim";
  const std::string sched = "scheduler/scheduler_config.json", shard = kShard;
  struct Case {
    std::vector<std::string> flags;
    std::string said;
    bool to_folder = false;
  };
  const std::vector<Case> cases = {
      {{"--listed-etag", sched + "=../../../victim/authorized_keys"},
       sched + " with blobId \"../../../victim/authorized_keys\", not 40 or 64 lower-case hex digits"},
      {{"--listed-etag", shard + "=" + (victim / "shard").string()},
       shard + " with lfs.sha256 \"" + (victim / "shard").string() + "\", not 64 lower-case hex digits"},
      {{"--listed-etag", "vae/config.json=ABCDEF0123"}, "vae/config.json with blobId \"ABCDEF0123\", not 40 or 64"},
      {{"--listed-etag", sched + "=../../../victim/authorized_keys"}, "blobId \"../../../victim/authorized_keys\"", true},
      {{"--list-extra", "../../victim/config.json"}, "a file \"../../victim/config.json\" (rfilename): a \"..\" segment"},
      {{"--list-extra", (victim / "config.json").string()}, "(rfilename): an absolute path"},
      {{"--list-extra", "vae//config.json"}, "a file \"vae//config.json\" (rfilename): an empty segment"},
      {{"--list-extra", "vae/./config.json"}, "(rfilename): a \".\" segment"},
      {{"--list-extra", "vae/\x1b[2Jconfig.json"}, "a file \"vae/\\x1b[2Jconfig.json\" (rfilename): a control character"},
      {{"--list-extra", "../victim/config.json"}, "(rfilename): a \"..\" segment", true},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    SCOPED_TRACE(c.said);
    hub_cache_ = tmp_.path() / ("hub-" + std::to_string(i));
    setenv("HF_HUB_CACHE", hub_cache_.c_str(), 1);
    const fs::path folder = tmp_.path() / ("plain-" + std::to_string(i)) / "model";
    FakeHub hub(tmp_.path() / ("server-" + std::to_string(i)), small_copy(), c.flags);
    const auto r = c.to_folder ? pull(hub, {"--to", folder.string()}) : pull(hub);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("rgbaq model pull: Org/Tiny@main: the Hub lists "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.said), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("refusing the listing"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(victim)) << r.err;
    EXPECT_FALSE(fs::exists(hub_cache_)) << "nothing is written for a listing refused";
    EXPECT_FALSE(fs::exists(folder.parent_path()));
    int resolved = 0;
    for (const auto& q : hub.requests()) resolved += q["path"].get<std::string>().find("/resolve/") != std::string::npos;
    EXPECT_EQ(resolved, 0) << "files were asked for";
    fs::remove_all(victim);  // each case on its own
  }
}

// Sizes the listing gives are added up for the free-space check: two files of 2^63 bytes (more than a
// file can hold), or files each under 2^63 whose sum passes 2^64 (once wrapped, "to download: 11 MiB"),
// are refused before a byte of weights is asked for.
TEST_F(ModelPull, ListedSizesThatWouldWrapAreRefusedBeforeAnyWeightByte) {
  const std::string shard = kShard, shard2 = "text_encoder/model-00002-of-00002.safetensors",
                    dit = "transformer/diffusion_pytorch_model.safetensors";
  const std::string two_63 = "9223372036854775808", under_2_63 = "9223372036854775807";
  struct Case {
    std::vector<std::string> flags;
    std::string said;
  };
  const std::vector<Case> cases = {
      {{"--listed-size", shard + "=" + two_63, "--listed-size", shard2 + "=" + two_63},
       "the Hub lists " + shard + " with lfs.size 9223372036854775808, more than a file can hold"},
      {{"--listed-size", shard + "=" + under_2_63, "--listed-size", shard2 + "=" + under_2_63, "--listed-size", dit + "=3"},
       "the listed sizes of the files to pull add up to more than 2^64 bytes"},
      {{"--listed-size", "vae/config.json=-5"}, "the Hub lists vae/config.json with size -5, not a byte count"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    SCOPED_TRACE(c.said);
    hub_cache_ = tmp_.path() / ("hub-" + std::to_string(i));
    setenv("HF_HUB_CACHE", hub_cache_.c_str(), 1);
    FakeHub hub(tmp_.path() / ("server-" + std::to_string(i)), small_copy(), c.flags);
    const auto r = pull(hub);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(c.said), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("to download:"), std::string::npos) << r.err;
    int weights = 0;
    for (const auto& q : hub.requests())
      weights += q["server"] == "cdn" || q["path"].get<std::string>().ends_with(".safetensors");
    EXPECT_EQ(weights, 0) << "weights were asked for";
    EXPECT_FALSE(fs::exists(snapshot() / shard));
  }
}

// A shared cache (HF_HUB_CACHE in a folder every user can write, as on a shared GPU server) where
// another user (uid 65534, before the pull) made the repo's folders and planted links at the partial
// blobs (to the owner's private key) and the lock files (to a file that does not exist): the pull
// writes through none of them. A cache folder another user controls is refused, naming it; in the
// owner's own folders a link is never followed (O_NOFOLLOW).
TEST_F(ModelPull, LinksAnotherUserPlantsInASharedCacheAreNeverWrittenThrough) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to play a second uid (CI runs as root)";
  FakeHub hub(tmp_.path() / "server", small_copy(), {});
  std::set<std::string> blob_set;  // (the cut files share one content)
  for (const auto& [rel, e] : hub.manifest().items())
    blob_set.insert(e["lfs"].get<bool>() ? e["sha256"].get<std::string>() : e["blob_id"].get<std::string>());
  const std::vector<std::string> blobs(blob_set.begin(), blob_set.end());
  ASSERT_EQ(chmod(tmp_.path().c_str(), 0755), 0);  // the other user may reach the shared folders in it
  const fs::path private_dir = tmp_.path() / "private", key = private_dir / "id_ed25519";
  fs::create_directories(private_dir);
  ASSERT_EQ(chmod(private_dir.c_str(), 0700), 0);
  const std::string key_text = "-----BEGIN OPENSSH PRIVATE KEY----- the owner's\n";

  struct Case {
    std::string name;
    mode_t cache_mode;
    bool theirs;  // the other user makes the repo's folders; else the owner does, sticky and open to all
    std::string said;
  };
  const std::vector<Case> cases = {
      {"sticky", 01777, true, "belongs to uid 65534; another user could swap"},
      {"open", 0777, false, "is writable by every user (mode 0777, not sticky)"},
      {"own-sticky", 0755, false, "is a symbolic link; not writing through it"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    for (const auto& entry : fs::directory_iterator(private_dir)) fs::remove(entry.path());  // each case on its own
    std::ofstream(key) << key_text;
    ASSERT_EQ(chmod(key.c_str(), 0600), 0);
    hub_cache_ = tmp_.path() / ("shared-" + c.name);
    setenv("HF_HUB_CACHE", hub_cache_.c_str(), 1);
    fs::create_directories(hub_cache_);
    ASSERT_EQ(chmod(hub_cache_.c_str(), c.cache_mode), 0);
    const fs::path blob_dir = repo_dir() / "blobs", lock_dir = hub_cache_ / ".locks" / "models--Org--Tiny";
    if (!c.theirs) {
      for (const auto& d : {repo_dir(), blob_dir, hub_cache_ / ".locks", lock_dir}) {
        fs::create_directories(d);
        ASSERT_EQ(chmod(d.c_str(), 01777), 0);
      }
    }
    // Everything the child does is a system call on these strings (made before the fork).
    const std::vector<std::string> dirs = {repo_dir(), blob_dir, hub_cache_ / ".locks", lock_dir};
    std::vector<std::pair<std::string, std::string>> links;
    for (size_t i = 0; i < blobs.size(); ++i) {
      links.emplace_back(key.string(), (blob_dir / (blobs[i] + ".incomplete")).string());
      links.emplace_back((private_dir / ("made-" + std::to_string(i))).string(), (lock_dir / (blobs[i] + ".lock")).string());
    }
    const pid_t planter = fork();
    if (planter == 0) {
      if (setuid(kNobody) != 0) _exit(3);
      for (const auto& d : dirs)
        if (mkdir(d.c_str(), 0777) != 0 && errno != EEXIST) _exit(4);
      for (const auto& [target, link] : links)
        if (symlink(target.c_str(), link.c_str()) != 0) _exit(5);
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(planter, &status, 0), planter);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the other user could not plant the links: " << status;

    const auto r = pull(hub);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(c.said), std::string::npos) << r.err;
    EXPECT_EQ(slurp(key), key_text) << "the owner's private key was written through a planted link";
    struct stat st {};
    ASSERT_EQ(stat(key.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    for (const auto& entry : fs::directory_iterator(private_dir))
      EXPECT_EQ(entry.path(), key) << "a planted lock link made its target";
  }
}

// A pull into --to DIR killed inside a plain (non-LFS) file, then a commit that changes and grows it:
// the next pull does not resume the old version's bytes with the new version's remainder (the partial
// is named by the file's ETag, as huggingface_hub names it); the file is the new version.
TEST_F(ModelPull, AFolderPullResumedAfterANewCommitDoesNotSpliceTwoVersions) {
  const std::string tokenizer = "processor/tokenizer.json";
  const fs::path dir = tmp_.path() / "plain", work = dir / ".cache" / "huggingface" / "download" / "processor";
  {
    FakeHub slow(tmp_.path() / "slow", model_, {"--not-lfs", tokenizer, "--slow", tokenizer});
    ASSERT_FALSE(slow.manifest()[tokenizer]["lfs"].get<bool>());
    const pid_t pid = spawn({kRgbaq, "model", "pull", "Org/Tiny", "--endpoint", slow.url(), "--to", dir.string()});
    bool partway = false;
    for (int i = 0; i < 1200 && !partway; ++i) {
      std::error_code ec;
      for (auto it = fs::directory_iterator(work, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const auto name = it->path().filename().string();
        partway |= name.starts_with("tokenizer.json") && name.ends_with(".incomplete") && fs::file_size(it->path()) > 60000;
      }
      if (!partway) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    ASSERT_TRUE(partway) << "the pull never got part way through " << tokenizer;
    ASSERT_FALSE(fs::exists(dir / tokenizer));
  }
  // The next commit's tokenizer.json: its first bytes changed, and longer.
  const fs::path served = tmp_.path() / "served";
  fs::copy(model_, served, fs::copy_options::recursive);
  const std::string old_text = slurp(model_ / tokenizer);
  const std::string new_text = "{ " + old_text.substr(1) + "\n\n";
  std::ofstream(served / tokenizer, std::ios::binary | std::ios::trunc) << new_text;
  FakeHub hub(tmp_.path() / "server", served, {"--not-lfs", tokenizer}, kCommit2);
  const auto r = pull(hub, {"--to", dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(fs::file_size(dir / tokenizer), new_text.size());
  EXPECT_TRUE(slurp(dir / tokenizer) == new_text) << "the file is spliced from two versions";
}

// Six pulls of one repo at once into one cache, 11 rounds (the first downloads, the later ones find
// the files and only write the ref, all at about the same moment): every one of the 66 exits 0, and the
// cache holds the model with no temporary left.
TEST_F(ModelPull, SixPullsAtOnceIntoOneCacheAllSucceed) {
  FakeHub hub(tmp_.path() / "server", model_, {});
  for (int round = 0; round < 11; ++round) {
    std::vector<std::pair<pid_t, std::string>> pulls;
    for (int i = 0; i < 6; ++i) {
      const auto err = (tmp_.path() / ("err-" + std::to_string(round) + "-" + std::to_string(i))).string();
      pulls.emplace_back(spawn({kRgbaq, "model", "pull", "Org/Tiny", "--endpoint", hub.url()}, err), err);
    }
    for (const auto& [pid, err] : pulls) {
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round << ": " << slurp(err);
    }
  }
  expect_cache_holds_the_model(hub);
  for (const auto& entry : fs::recursive_directory_iterator(repo_dir()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

// A server that takes the connection and never answers (issue 43): the pull says first what it is
// contacting, then counts the wait, instead of printing nothing for a minute.
TEST(ModelPullWaiting, AServerThatNeverAnswersIsSeenToBeWaitedFor) {
  TempDir tmp;
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);  // the kernel takes the connection; nobody ever answers
  socklen_t length = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &length);
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  const fs::path err = tmp.path() / "err";
  setenv("HF_HUB_CACHE", (tmp.path() / "hub").c_str(), 1);
  const pid_t pid = spawn({kRgbaq, "model", "pull", "Org/Tiny", "--endpoint", endpoint}, err.string());
  std::string text;
  for (int i = 0; i < 100 && text.find("no answer yet") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = slurp(err);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ::close(listener);
  EXPECT_NE(text.find("rgbaq model pull: asking " + endpoint + " for Org/Tiny@main\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  no answer yet from " + endpoint + ": 2 s (gives up after 60 s of silence)\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace rgbaq
