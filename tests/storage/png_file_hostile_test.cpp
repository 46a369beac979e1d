// write_png_atomic and read_png against what another local user can plant in an output folder: a
// symlink at the temporary's or the output's name (pointing at a root-only file, which must stay
// unchanged) and a FIFO at the output path (which must be refused at once, not block the reader).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "storage/png_file.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::storage {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// Runs `plant` in a child process as uid 65534 when the test runs as root (as CI does), else as us.
void as_other_user(const std::function<void()>& plant) {
  const pid_t child = fork();
  if (child == 0) {
    if (geteuid() == 0 && setuid(65534) != 0) _exit(3);
    plant();
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the planting child failed";
}

TEST(PngFileHostile, SymlinksPlantedAtTheTemporaryAndOutputNamesAreNotFollowed) {
  TempDir dir;
  const fs::path secret_dir = dir.path() / "private";
  fs::create_directories(secret_dir);
  fs::permissions(secret_dir, fs::perms::owner_all);
  const fs::path secret = secret_dir / "secret";
  std::ofstream(secret) << "root only";
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
  const fs::path out = dir.path() / "shared";
  fs::create_directories(out);
  fs::permissions(out, fs::perms::all);  // writable by the other user, not sticky
  // The name the old code used (".NAME.tmpPID") and the output itself.
  const std::string predictable = ".a.png.tmp" + std::to_string(getpid());
  as_other_user([&] {
    if (symlink(secret.c_str(), (out / predictable).c_str()) != 0) _exit(4);
    if (symlink(secret.c_str(), (out / "a.png").c_str()) != 0) _exit(5);
  });
  std::vector<uint8_t> rgba(4 * 4 * 4, 77);
  write_png_atomic(out / "a.png", rgba.data(), 4, 4, {});
  EXPECT_EQ(read_all(secret), "root only");
  struct stat st {};
  ASSERT_EQ(lstat((out / "a.png").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "the output is a file of ours, not the planted link";
  EXPECT_EQ(read_png(out / "a.png").rgba, rgba);
  // The reader does not follow a link either.
  as_other_user([&] {
    if (symlink(secret.c_str(), (out / "b.png").c_str()) != 0) _exit(4);
  });
  try {
    read_png(out / "b.png");
    FAIL() << "read through a symlink";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("b.png: is a symbolic link"), std::string::npos) << e.what();
  }
}

TEST(PngFileHostile, AFifoAtTheOutputPathIsRefusedWithoutBlockingAndThenReplaced) {
  TempDir dir;
  const fs::path out = dir.path() / "f.png";
  ASSERT_EQ(mkfifo(out.c_str(), 0666), 0);
  std::atomic<int> outcome{0};  // 1: threw, 2: returned
  std::string message;
  std::thread reader([&] {
    try {
      read_png(out);
      outcome = 2;
    } catch (const std::runtime_error& e) {
      message = e.what();
      outcome = 1;
    }
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (outcome == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const bool blocked = outcome == 0;
  if (blocked) {
    const int w = ::open(out.c_str(), O_WRONLY | O_NONBLOCK);  // let the blocked reader go
    if (w >= 0) ::close(w);
  }
  reader.join();
  ASSERT_FALSE(blocked) << "read_png blocked on a FIFO";
  EXPECT_EQ(outcome, 1);
  EXPECT_NE(message.find("f.png: is not a regular file"), std::string::npos) << message;
  std::vector<uint8_t> rgba(2 * 2 * 4, 9);
  write_png_atomic(out, rgba.data(), 2, 2, {});
  EXPECT_EQ(read_png(out).rgba, rgba);
}

}  // namespace
}  // namespace rgbaq::storage
