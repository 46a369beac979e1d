// Text from outside on its way to a terminal, through real rgbaqd and rgbaq processes: a prompt holding
// OSC 52 (a clipboard write), CSI 2J (clear the screen) and OSC 8 (a link), the run name made from it,
// an output folder, a LoRA tag and a LoRA tensor key with escapes. Every human-readable output (ls
// jobs, ls runs, ls jobs --state failed, watch, submit's errors) and both of the daemon's logs hold no
// raw control byte and show the escapes as text; --json stays exact JSON.
#include <gtest/gtest.h>

#include <fstream>

#include "engine/model/safetensors.h"
#include "tests/daemon/daemon_test_helpers.h"
#include "tools/tiny_model.h"

namespace rgbaq {
namespace {

const std::string kOsc52 = "\x1b]52;c;aGk=\x07", kClear = "\x1b[2J",
                  kLink = "\x1b]8;;http://x.example/\x1b\\here\x1b]8;;\x1b\\";

// The first control byte of `text` (C0, DEL, or the C1 CSI/OSC a terminal takes from U+009B/U+009D) and
// what surrounds it, or "" when it has none.
std::string raw_control(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const bool c1 = c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) < 0xa0;
    if ((c < 0x20 && c != '\n') || c == 0x7f || c1) return "byte " + std::to_string(c) + " at " + std::to_string(i) + " in: " + text;
  }
  return "";
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(DaemonEscapes, ControlCharactersFromOutsideReachNoTerminalOrLogRaw) {
  TempDir dir;
  const fs::path loras = dir.path() / "loras";
  tools::write_tiny_loras(loras, tools::tiny_dit_config());
  fs::copy_file(loras / "detail.safetensors", loras / "changing.safetensors");
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {{"--lora-dir", loras.string()}});
  const std::string prompt = "a fox " + kOsc52 + kClear + kLink;
  const fs::path out = dir.path() / ("out" + kClear);
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  const auto one = rgbaq(d, {"submit", "--prompt", prompt, "--seeds", "1", "--size", "128", "--out", out.string()});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(raw_control(one.out + one.err), "");
  const auto two = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string()}, "prompt,seed,lora\na lora fox,1,changing:1\n");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  // After its submit, the LoRA file becomes one whose key holds escapes: the job fails naming the key.
  const auto style = engine::SafetensorsFile::open(loras / "style-diffusers.safetensors");
  engine::write_safetensors(loras / "changing.safetensors",
                            {{"transformer.x" + kOsc52 + ".lora_A.weight", style.tensor("transformer.img_in.lora_A.weight")}});
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);

  const auto watched = rgbaq(d, {"watch", "1"});
  EXPECT_EQ(watched.exit_code, 0) << watched.err;
  EXPECT_EQ(raw_control(watched.out + watched.err), "");
  // The job may be done before the watch connects (then watch prints only the run's line): the
  // escaped path is then what `ls jobs` shows.
  const auto listed_jobs = rgbaq(d, {"ls", "jobs", "--run", "1"});
  EXPECT_EQ(raw_control(listed_jobs.out), "");
  EXPECT_NE((watched.out + listed_jobs.out).find("out\\x1b[2J/"), std::string::npos) << watched.out << listed_jobs.out;
  const auto failing = rgbaq(d, {"watch", "2"});
  EXPECT_EQ(failing.exit_code, 1);
  EXPECT_EQ(raw_control(failing.out + failing.err), "");

  const auto jobs = rgbaq(d, {"ls", "jobs"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_EQ(raw_control(jobs.out), "");
  EXPECT_NE(jobs.out.find("a fox \\x1b]52;c;aGk=\\x07\\x1b[2J\\x1b]8;;http://x"), std::string::npos) << jobs.out;
  EXPECT_NE(jobs.out.find("out\\x1b[2J/"), std::string::npos) << jobs.out;
  const auto runs = rgbaq(d, {"ls", "runs"});
  EXPECT_EQ(raw_control(runs.out), "");
  EXPECT_NE(runs.out.find("a fox \\x1b]52;c;aGk=\\x07"), std::string::npos) << runs.out;
  const auto failed = rgbaq(d, {"ls", "jobs", "--state", "failed"});
  EXPECT_EQ(raw_control(failed.out), "");
  EXPECT_NE(failed.out.find("error: " + (loras / "changing.safetensors").string() +
                            ": key \"transformer.x\\x1b]52;c;aGk=\\x07.lora_A.weight\""), std::string::npos) << failed.out;
  // A LoRA tag the daemon refuses at submit: the error shows the name escaped.
  const auto tag = rgbaq(d, {"submit", "-", "--size", "128"}, "prompt\n<lora:x" + kClear + ":1> a cat\n");
  EXPECT_EQ(tag.exit_code, 2);
  EXPECT_EQ(raw_control(tag.out + tag.err), "");
  EXPECT_NE(tag.err.find("LoRA \"x\\x1b[2J\" not found"), std::string::npos) << tag.err;

  // --json: exact JSON, the text as it was sent.
  const json listed = json::parse(rgbaq(d, {"ls", "jobs", "--json"}).out);
  EXPECT_EQ(listed["jobs"][0]["prompt"], prompt);
  EXPECT_NE(listed["jobs"][1]["error"].get<std::string>().find("transformer.x" + kOsc52), std::string::npos);

  // The daemon's log lines, on stderr and in its log file, with their escapes escaped too.
  for (const fs::path& log : {d.log(), d.data_dir() / "logs" / "rgbaqd.log"}) {
    const std::string text = read_all(log);
    EXPECT_EQ(raw_control(text), "") << log;
    EXPECT_NE(text.find("out\\x1b[2J/"), std::string::npos) << log << ":\n" << text.substr(0, 3000);
  }
}

}  // namespace
}  // namespace rgbaq
