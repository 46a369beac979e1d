// LoRAs through real rgbaqd and rgbaq processes on the tiny model: names and files checked at submit (a
// name not found or with a path separator, a file that is truncated, for the text encoder, with a key
// for no Linear or of the wrong rank refuses the file with its line, field, file and key, nothing
// queued, every error of the file in one pass); the lora column, the prompt's <lora:...> tag and
// --lora rendering; the same adapter in two key formats and a tag-stripped prompt rendering identical
// pixels; weight 0 rendering the pixels of no LoRA; the A1111 `Lora hashes` and the rgbaq chunk's
// records; a file broken after its submit failing its job with the reason while the daemon keeps
// serving; `rgbaqd render --lora` agreeing with the daemon and refusing a bad file as bad input (2); a
// finished PNG of another LoRA set not taken as a job's image.
#include <gtest/gtest.h>

#include <fstream>

#include "engine/lora.h"
#include "engine/model/safetensors.h"
#include "storage/png_file.h"
#include "storage/sqlite/sqlite_queue_store.h"
#include "tests/daemon/daemon_test_helpers.h"
#include "tools/tiny_model.h"

namespace rgbaq {
namespace {

// sha256sum of the file's bytes after its safetensors header (A1111's LoRA hash), computed by coreutils.
std::string header_free_sha256(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t header = 0;
  in.read(reinterpret_cast<char*>(&header), 8);
  const auto r = run_process({"/bin/sh", "-c", "tail -c +" + std::to_string(8 + header + 1) + " '" + path.string() +
                                              "' | sha256sum | cut -c1-64"});
  return r.out.substr(0, 64);
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

struct LoraDaemon {
  TempDir dir;
  fs::path loras = dir.path() / "loras";
  LoraDaemon() {
    tools::write_tiny_loras(loras, tools::tiny_dit_config());
    // Files that are no LoRA for this DiT: a truncated copy, a text-encoder LoRA, one whose keys name no
    // Linear, one whose B is of another rank than its A.
    fs::copy_file(loras / "detail.safetensors", loras / "broken.safetensors");
    fs::resize_file(loras / "broken.safetensors", fs::file_size(loras / "broken.safetensors") - 64);
    const auto te = engine::Tensor::from_f32({4, 8}, std::vector<float>(32, 0.01f));
    engine::write_safetensors(loras / "te.safetensors", {{"lora_te_text_model_encoder_layers_0_mlp_fc1.lora_down.weight", te}});
    const auto style = engine::SafetensorsFile::open(loras / "style-diffusers.safetensors");
    const auto a = style.tensor("transformer.img_in.lora_A.weight"), b = style.tensor("transformer.img_in.lora_B.weight");
    engine::write_safetensors(loras / "nolinear.safetensors", {{"transformer.img_out.lora_A.weight", a},
                                                               {"transformer.img_out.lora_B.weight", b}});
    const int64_t out = b.dim(0);
    engine::write_safetensors(loras / "rank.safetensors",
                              {{"transformer.img_in.lora_A.weight", a},
                               {"transformer.img_in.lora_B.weight", engine::Tensor::from_f32({out, 2}, std::vector<float>(out * 2, 0.01f))}});
  }
  std::string file(const char* name) const { return (loras / (std::string(name) + ".safetensors")).string(); }
};

TEST(DaemonLora, NamesAreCheckedAtSubmitWithLineAndFieldAndNothingIsQueued) {
  LoraDaemon l;
  DaemonProcess d(kRgbaqd, model().dir(), l.dir.path(), {{"--lora-dir", l.loras.string()}});
  write_text(l.dir.path() / "p.csv", "prompt,lora\na fox,style-kohya:0.5\n<lora:nope:1> a cat,\na dog,missing:0.3\n");
  const auto r = rgbaq(d, {"submit", (l.dir.path() / "p.csv").string(), "--size", "128"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("p.csv:3:1: prompt: LoRA \"nope\" not found"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("p.csv:4:7: lora: LoRA \"missing\" not found: no missing.safetensors in " + l.loras.string()),
            std::string::npos) << r.err;
  write_text(l.dir.path() / "q.csv", "prompt,lora\na fox,../loras/style-kohya:0.5\n");
  const auto q = rgbaq(d, {"submit", (l.dir.path() / "q.csv").string()});
  EXPECT_EQ(q.exit_code, 2);
  EXPECT_NE(q.err.find("q.csv:2:7: lora: LoRA name \"../loras/style-kohya\" has a path separator"), std::string::npos) << q.err;
  const auto dflt = rgbaq(d, {"submit", "-", "--lora", "absent:1"}, "prompt\na fox\n");
  EXPECT_EQ(dflt.exit_code, 2);
  EXPECT_NE(dflt.err.find("--lora: LoRA \"absent\" not found"), std::string::npos) << dflt.err;
  // Files that would fail every job that names them: refused at submit, naming the line, the file and the key.
  write_text(l.dir.path() / "bad.csv", "prompt,lora\na te fox,te:1\na broken fox,broken:1\na lost fox,nolinear:1\n"
                                       "a ranked fox,rank:1\n<lora:te:1> again,\n");
  const auto bad = rgbaq(d, {"submit", (l.dir.path() / "bad.csv").string(), "--size", "128"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  const std::string te_error = "LoRA \"te\": " + l.file("te") + ": key \"lora_te_text_model_encoder_layers_0_mlp_fc1.lora_down"
                               ".weight\": is a text-encoder LoRA key; only DiT LoRAs are supported";
  EXPECT_NE(bad.err.find("bad.csv:2:10: lora: " + te_error), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("bad.csv:3:14: lora: LoRA \"broken\": " + l.file("broken") + ": "), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("bad.csv:4:12: lora: LoRA \"nolinear\": " + l.file("nolinear") +
                         ": key \"transformer.img_out.lora_A.weight\": maps to no Linear of this DiT"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("bad.csv:5:14: lora: LoRA \"rank\": " + l.file("rank") +
                         ": key \"transformer.img_in.lora_B.weight\": rank mismatch"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("bad.csv:6:1: prompt: " + te_error), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("5 errors in " + (l.dir.path() / "bad.csv").string() + "; nothing was queued"), std::string::npos) << bad.err;
  // A syntax error (which rgbaq finds itself) and a missing LoRA (which only the daemon can): both, in one pass.
  write_text(l.dir.path() / "two.csv", "prompt,seed,lora\na fox,1,missing:1\na cat,2\n");
  const auto two = rgbaq(d, {"submit", (l.dir.path() / "two.csv").string(), "--size", "128"});
  EXPECT_EQ(two.exit_code, 2) << two.out << two.err;
  EXPECT_NE(two.err.find("two.csv:2:9: lora: LoRA \"missing\" not found"), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("two.csv:3: has 2 fields; the header has 3"), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("2 errors; nothing was queued"), std::string::npos) << two.err;
  const json s = status(d);
  EXPECT_EQ(s["jobs"].value("queued", 0) + s["jobs"].value("done", 0), 0) << s.dump();
}

TEST(DaemonLora, RendersRecordsHashesFailsBadFilesAndKeepsServing) {
  LoraDaemon l;
  DaemonProcess d(kRgbaqd, model().dir(), l.dir.path(), {{"--lora-dir", l.loras.string(), "--max-attempts", "1"}});
  const fs::path out = l.dir.path() / "out";
  write_text(l.dir.path() / "p.csv",
             "prompt,seed,name,lora\n"
             "a fox,1,diffusers,style-diffusers:0.9\n"
             "<lora:style-kohya:0.9> a fox,1,kohya-tag,\n"
             "a fox,1,zero,style-comfyui:0\n"
             "a fox,1,plain,\n"
             "a fox,1,two,style-diffusers:0.9;detail:0.5\n"
             "a broken fox,1,broken,changing:1\n");
  // A file that passed its submit and is broken before its job runs fails the job with the reason.
  fs::copy_file(l.loras / "detail.safetensors", l.loras / "changing.safetensors");
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  const auto r = rgbaq(d, {"submit", (l.dir.path() / "p.csv").string(), "--size", "128", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  fs::resize_file(l.loras / "changing.safetensors", fs::file_size(l.loras / "changing.safetensors") - 64);
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);
  const auto w = rgbaq(d, {"watch", "1"});
  EXPECT_EQ(w.exit_code, 1) << w.out << w.err;  // one failed
  EXPECT_NE(w.out.find("5 done, 1 failed"), std::string::npos) << w.out;
  // --lora fills the rows that name none: a file of its own, so that "plain" above stays plain.
  const auto r2 = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--lora", "style-diffusers:0.9", "--wait"},
                        "prompt,seed,name\na fox,1,default\n");
  ASSERT_EQ(r2.exit_code, 0) << r2.out << r2.err;

  auto png = [&](const char* name) { return storage::read_png(out / (std::string(name) + "_1.png")); };
  const auto diffusers = png("diffusers"), kohya = png("kohya-tag"), zero = png("zero"), plain = png("plain"),
             two = png("two"), dflt = png("default");
  EXPECT_EQ(kohya.rgba, diffusers.rgba) << "the same adapter in another format, the tag out of the tokenizer's text";
  EXPECT_EQ(dflt.rgba, diffusers.rgba);
  EXPECT_EQ(zero.rgba, plain.rgba) << "weight 0 is no LoRA";
  EXPECT_NE(diffusers.rgba, plain.rgba);
  EXPECT_NE(two.rgba, diffusers.rgba);

  const std::string style_hash = header_free_sha256(l.loras / "style-diffusers.safetensors");
  const std::string detail_hash = header_free_sha256(l.loras / "detail.safetensors");
  ASSERT_EQ(style_hash.size(), 64u);
  const std::string& params = two.texts.at("parameters");
  EXPECT_NE(params.find(", Lora hashes: \"style-diffusers: " + style_hash.substr(0, 12) + ", detail: " +
                        detail_hash.substr(0, 12) + "\", Version: rgbaq"), std::string::npos) << params;
  EXPECT_EQ(plain.texts.at("parameters").find("Lora hashes"), std::string::npos);
  EXPECT_EQ(kohya.texts.at("parameters").rfind("<lora:style-kohya:0.9> a fox\n", 0), 0u) << "the prompt as written";
  const json meta = json::parse(two.texts.at("rgbaq"));
  ASSERT_EQ(meta["loras"].size(), 2u) << meta.dump();
  EXPECT_EQ(meta["loras"][0]["name"], "style-diffusers");
  EXPECT_FLOAT_EQ(meta["loras"][0]["weight"].get<float>(), 0.9f);
  EXPECT_EQ(meta["loras"][0]["sha256"], style_hash);
  EXPECT_EQ(meta["loras"][1]["sha256"], detail_hash);

  // The broken file failed its job with the reason; the daemon serves on.
  storage::SqliteQueueStore store(d.data_dir() / "queue.db");
  const auto failed = store.list_jobs(std::nullopt, storage::JobState::kFailed);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].name, "broken");
  EXPECT_NE(failed[0].error.find("changing.safetensors"), std::string::npos) << failed[0].error;
  EXPECT_NE(failed[0].error.find("truncated"), std::string::npos) << failed[0].error;
  const auto csv = rgbaq(d, {"export", "1", "--format", "csv"});
  EXPECT_NE(csv.out.find(",name,lora,output,"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",two,style-diffusers:0.9;detail:0.5,"), std::string::npos) << csv.out;
  const auto after = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, "prompt,seed,name\nlater,2,later\n");
  EXPECT_EQ(after.exit_code, 0) << after.out << after.err;

  // rgbaqd render with the tag (another format of the same adapter), on one thread, as the daemon did.
  const auto rr = run_process({kRgbaqd, "render", "--model", model().dir().string(), "--prompt", "a fox <lora:style-comfyui:0.9>",
                               "--seed", "1", "--size", "128", "--threads", "1", "-o", (l.dir.path() / "r.png").string(),
                               "--lora-dir", l.loras.string()});
  ASSERT_EQ(rr.exit_code, 0) << rr.out << rr.err;
  EXPECT_EQ(storage::read_png(l.dir.path() / "r.png").rgba, diffusers.rgba);
  const auto bad = run_process({kRgbaqd, "render", "--model", model().dir().string(), "--prompt", "x", "--lora", "te:1",
                                "--lora-dir", l.loras.string(), "-o", (l.dir.path() / "bad.png").string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--lora: " + l.file("te") + ": key \"lora_te_text_model_encoder_layers_0_mlp_fc1.lora_down.weight\": "
                         "is a text-encoder LoRA key; only DiT LoRAs are supported"), std::string::npos) << bad.err;
  for (const char* name : {"nolinear", "rank"}) {
    const auto refused = run_process({kRgbaqd, "render", "--model", model().dir().string(), "--prompt", "x", "--lora",
                                      std::string(name) + ":1", "--lora-dir", l.loras.string(), "-o",
                                      (l.dir.path() / "bad.png").string()});
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.err.find("--lora: " + l.file(name) + ": key \"transformer.img_"), std::string::npos) << refused.err;
  }
  EXPECT_FALSE(fs::exists(l.dir.path() / "bad.png"));

  // A finished PNG counts as a job's only with its LoRA set: another queue whose job "plain" has a LoRA
  // finds plain_1.png (same prompt, seed, size and model, no LoRA) and must not take it as its image:
  // the submit sees it holds another image and queues nothing.
  d.signal(SIGTERM);
  ASSERT_EQ(d.wait_exit(), 0);
  fs::create_directories(l.dir.path() / "second");
  DaemonProcess second(kRgbaqd, model().dir(), l.dir.path() / "second", {{"--lora-dir", l.loras.string(), "--max-attempts", "1"}});
  const auto again = rgbaq(second, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"},
                           "prompt,seed,name,lora\na fox,1,plain,style-diffusers:0.9\n");
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_NE(again.err.find("plain_1.png is already there and holds another image"), std::string::npos) << again.err;
  storage::SqliteQueueStore second_store(second.data_dir() / "queue.db");
  EXPECT_TRUE(second_store.list_jobs(std::nullopt, std::nullopt).empty()) << "nothing was queued";
  EXPECT_EQ(storage::read_png(out / "plain_1.png").rgba, plain.rgba);  // left as it was
}

// Finite but huge values (3e38) pass the LoRA's check and overflow the render (issue 26, item 3): the
// job fails at once, not retried, with a reason naming the cause and the LoRA, and no PNG is written
// (the old daemon marked it done with an all-zero image).
TEST(DaemonLora, AnOverflowingLoraFailsItsJobForGoodNamingItAndWritesNoImage) {
  LoraDaemon l;
  const int64_t dim = tools::tiny_dit_config().dim();
  const auto huge = [](engine::Shape s) {
    return engine::Tensor::from_f32(s, std::vector<float>(static_cast<size_t>(engine::shape_numel(s)), 3e38f));
  };
  engine::write_safetensors(l.loras / "huge.safetensors", {{"transformer.img_in.lora_A.weight", huge({2, 64})},
                                                           {"transformer.img_in.lora_B.weight", huge({dim, 2})}});
  DaemonProcess d(kRgbaqd, model().dir(), l.dir.path(), {{"--lora-dir", l.loras.string(), "--max-attempts", "3"}});
  const fs::path out = l.dir.path() / "out";
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"},
                       "prompt,seed,name,lora\na fox,1,huge,huge:1\n");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_FALSE(fs::exists(out / "huge_1.png")) << "no image for a render that overflowed";
  storage::SqliteQueueStore store(d.data_dir() / "queue.db");
  const auto jobs = store.list_jobs(std::nullopt, std::nullopt);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].state, storage::JobState::kFailed);
  EXPECT_EQ(jobs[0].attempts, 1) << "not retried: " << jobs[0].errors_json;
  EXPECT_NE(jobs[0].error.find("the render is not finite: the latents after step 1 of "), std::string::npos) << jobs[0].error;
  EXPECT_NE(jobs[0].error.find("LoRA \"huge\" at weight 1 (" + (l.loras / "huge.safetensors").string() + ")"),
            std::string::npos) << jobs[0].error;

  const auto png = l.dir.path() / "huge.png";
  const auto rr = run_process({kRgbaqd, "render", "--model", model().dir().string(), "--prompt", "a fox", "--size", "128",
                               "--lora", "huge:1", "--lora-dir", l.loras.string(), "-o", png.string()});
  EXPECT_EQ(rr.exit_code, 1) << rr.out << rr.err;
  EXPECT_NE(rr.err.find("the render is not finite"), std::string::npos) << rr.err;
  EXPECT_FALSE(fs::exists(png));
}

// An updated LoRA is another image (issue 26, item 4): a finished PNG counts as a job's only when the
// LoRA files' SHA-256 are the ones it records. The old daemon said "reusable 1" and kept the image of
// the old file.
TEST(DaemonLora, AnUpdatedLoraFileIsNotTakenForTheImageOfTheOldOne) {
  LoraDaemon l;
  const auto mine = l.loras / "mine.safetensors";
  const auto modules = engine::dit_linear_modules(tools::tiny_dit_config());
  tools::write_lora(mine, tools::tiny_dit_config(), tools::LoraFormat::kDiffusers, 4, 2.0f, modules, 1);
  DaemonProcess d(kRgbaqd, model().dir(), l.dir.path(), {{"--lora-dir", l.loras.string()}});
  const fs::path out = l.dir.path() / "out";
  const std::string csv = "prompt,seed,name,lora\na fox,1,mine,mine:1\n";
  const auto first = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, csv);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const auto old_png = storage::read_png(out / "mine_1.png");
  const std::string old_hash = header_free_sha256(mine);
  EXPECT_EQ(json::parse(old_png.texts.at("rgbaq"))["loras"][0]["sha256"], old_hash);

  // The same file again, the LoRA unchanged: its image is reused.
  const auto same = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, csv);
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("its image is already there from an earlier run: reused"), std::string::npos) << same.out;

  // A new version of mine.safetensors (another seed: other values, the same keys and size).
  tools::write_lora(mine, tools::tiny_dit_config(), tools::LoraFormat::kDiffusers, 4, 2.0f, modules, 2);
  const std::string new_hash = header_free_sha256(mine);
  ASSERT_NE(new_hash, old_hash);
  const auto again = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, csv);
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_NE(again.err.find("mine_1.png is already there and holds another image"), std::string::npos) << again.err;
  EXPECT_EQ(storage::read_png(out / "mine_1.png").rgba, old_png.rgba) << "left as it was";

  const fs::path out2 = l.dir.path() / "out2";
  const auto fresh = rgbaq(d, {"submit", "-", "--size", "128", "--out", out2.string(), "--wait"}, csv);
  ASSERT_EQ(fresh.exit_code, 0) << fresh.out << fresh.err;
  const auto new_png = storage::read_png(out2 / "mine_1.png");
  EXPECT_EQ(json::parse(new_png.texts.at("rgbaq"))["loras"][0]["sha256"], new_hash);
  EXPECT_NE(new_png.rgba, old_png.rgba) << "rendered with the new LoRA";
}

}  // namespace
}  // namespace rgbaq
