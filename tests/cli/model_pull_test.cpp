// `rgbaq model pull` and `--model ORG/NAME` against a fake Hub (tests/cli/fake_hub.py, Python's
// http.server on 127.0.0.1 with a second "CDN" port): the huggingface_hub cache layout it writes, a
// render from it equal to one from the folder the tiny model was made in, resumption after a dropped
// connection and after SIGKILL, a corrupted byte, tokens (refused, and never sent to the CDN), and a
// cache written the way huggingface_hub writes it read in place. The hashes come from the server's
// hashlib, the bytes from the tiny model's own files.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
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
constexpr const char* kShard = "text_encoder/model-00001-of-00002.safetensors";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

pid_t spawn(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// The fake Hub serving `root` as Org/Tiny at kCommit, with the faults its flags ask for.
class FakeHub {
 public:
  FakeHub(const fs::path& dir, const fs::path& root, const std::vector<std::string>& flags) : dir_(dir) {
    fs::create_directories(dir);
    std::vector<std::string> args = {kPython, kFakeHub, "--root", root.string(), "--repo", "Org/Tiny", "--commit", kCommit,
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

}  // namespace
}  // namespace rgbaq
