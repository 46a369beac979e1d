// Single files as components (issue 39), through the real binaries on the tiny model: a ComfyUI-style
// DiT file (the tiny transformer's tensors, renamed with ComfyUI's "model.diffusion_model." prefix by
// the test's own safetensors writer) given with --dit beside --model renders the same pixels as the
// model directory (the same weights under other names), from `rgbaqd render` and, with a text encoder
// file too, from a daemon's queue; the PNG's rgbaq chunk and the job's record in the queue name the
// files, their format, bytes and hash; the model identity and the encoder cache's key change with the
// files; a ConvRot DiT file (`rgbaq model quantize --format int8-convrot`) renders a queued job within
// 30 dB of the bf16 model and its record says so; errors name the flag and the file; the config file
// takes the same keys, relative to itself.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "daemon/base/daemon_config.h"
#include "engine/model/model_identity.h"
#include "storage/png_file.h"
#include "tests/daemon/comfy_single_file.h"
#include "tests/daemon/daemon_test_helpers.h"
#include "tests/engine/reference_math.h"

namespace rgbaq {
namespace {

constexpr const char* kComfyDitPrefix = "model.diffusion_model.";

fs::path transformer_file(const fs::path& model_dir) { return model_dir / "transformer" / "diffusion_pytorch_model.safetensors"; }

// `rgbaqd render` of "a red fox" at 128x128, seed 7, 2 threads, with `extra` flags; the PNG read back.
storage::PngImage render(const fs::path& out, std::vector<std::string> extra) {
  std::vector<std::string> argv = {kRgbaqd, "render", "--prompt", "a red fox", "--seed", "7", "--size", "128", "--threads", "2",
                                   "-o", out.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const auto r = run_process(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return storage::read_png(out);
}

// What every record of a single DiT file must say: its name, the bytes on disk, its format, a 16-hex hash.
void expect_dit_record(const json& dit, const fs::path& file) {
  EXPECT_EQ(dit.value("file", ""), file.filename().string()) << dit.dump();
  EXPECT_EQ(dit.value("bytes", uint64_t{0}), fs::file_size(file)) << dit.dump();
  EXPECT_EQ(dit.value("format", ""), "bf16") << dit.dump();  // the tiny model's weights, stored as bf16
  EXPECT_TRUE(std::regex_match(dit.value("hash", ""), std::regex("[0-9a-f]{16}"))) << dit.dump();
}

TEST(SingleFileComponents, RenderWithADitFileGivesTheDirectorysPixelsAndRecordsTheFile) {
  TempDir dir;
  const fs::path dit = dir.path() / "qwen21t_dit.safetensors";
  write_prefixed_single_file(transformer_file(model().dir()), dit, kComfyDitPrefix);

  const auto plain = render(dir.path() / "plain.png", {"--model", model().dir().string()});
  const auto single = render(dir.path() / "single.png", {"--model", model().dir().string(), "--dit", dit.string()});
  ASSERT_EQ(single.width, 128);
  EXPECT_EQ(single.rgba, plain.rgba) << "the same bf16 weights under ComfyUI's names render the same image";

  const auto plain_meta = json::parse(plain.texts.at("rgbaq")), meta = json::parse(single.texts.at("rgbaq"));
  ASSERT_TRUE(meta["model"].contains("components")) << meta["model"].dump();
  const json& dit_record = meta["model"]["components"]["dit"];
  expect_dit_record(dit_record, dit);
  EXPECT_FALSE(dit_record.contains("path")) << "a shared image never says where the file lies: " << dit_record.dump();
  EXPECT_EQ(meta["model"]["components"].size(), 1u) << "only the DiT is a single file";
  EXPECT_FALSE(plain_meta["model"].contains("components")) << plain_meta["model"].dump();
  EXPECT_EQ(meta["model"]["name"], "model");
  // Another DiT is another model: the identity (and A1111's Model hash, its first 10 digits) changes.
  const std::string identity = meta["model"]["identity"];
  EXPECT_NE(identity, plain_meta["model"]["identity"].get<std::string>());
  EXPECT_EQ(plain_meta["model"]["identity"], engine::model_identity(model().dir()));
  EXPECT_NE(single.texts.at("parameters").find("Model hash: " + identity.substr(0, 10) + ", Model: model,"), std::string::npos)
      << single.texts.at("parameters");

  // A different DiT file (another seed's weights, same names and shapes): a new identity and hash, new pixels.
  const TinyModel other(engine::DType::kBF16, /*seed=*/1);
  const fs::path other_dit = dir.path() / "other_dit.safetensors";
  write_prefixed_single_file(transformer_file(other.dir()), other_dit, kComfyDitPrefix);
  const auto changed = render(dir.path() / "changed.png", {"--model", model().dir().string(), "--dit", other_dit.string()});
  const auto changed_meta = json::parse(changed.texts.at("rgbaq"));
  EXPECT_NE(changed_meta["model"]["identity"], identity);
  EXPECT_NE(changed_meta["model"]["components"]["dit"]["hash"], dit_record["hash"]);
  EXPECT_NE(changed.rgba, single.rgba);
}

// The identity an encoder cache entry (engine/encoder_cache.cpp's layout: magic[8], u32 length, identity) was stored under.
std::string entry_identity(const fs::path& entry) {
  std::ifstream in(entry, std::ios::binary);
  char head[12];
  in.read(head, 12);
  const uint32_t n = static_cast<uint8_t>(head[8]) | static_cast<uint8_t>(head[9]) << 8 | static_cast<uint8_t>(head[10]) << 16 |
                     static_cast<uint32_t>(static_cast<uint8_t>(head[11])) << 24;
  std::string identity(n, '\0');
  in.read(identity.data(), n);
  return identity;
}

TEST(SingleFileComponents, ADaemonWithDitAndTextEncoderFilesRendersAQueuedJobAndRecordsThem) {
  TempDir dir;
  const fs::path dit = dir.path() / "qwen21t_dit.safetensors", te = dir.path() / "qwen3vl_te.safetensors", out = dir.path() / "out";
  write_prefixed_single_file(transformer_file(model().dir()), dit, kComfyDitPrefix);
  // A ComfyUI checkpoint's text encoder: both shards in one file, under "text_encoders.NAME.transformer.".
  write_prefixed_single_file(model().dir() / "text_encoder", te, "text_encoders.qwen3vl.transformer.");
  // The reference: the model directory's own DiT, rendered with no queue.
  const auto reference = render(dir.path() / "reference.png", {"--model", model().dir().string()});
  const auto with_file = render(dir.path() / "with_file.png", {"--model", model().dir().string(), "--dit", dit.string()});
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--dit", dit.string(), "--text-encoder", te.string()}});
    const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, "prompt,seed,name\na red fox,7,fox\n");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << log_tail(d);
    const auto pngs = pngs_in(out);
    ASSERT_EQ(pngs.size(), 1u);
    const auto png = storage::read_png(pngs[0]);
    EXPECT_EQ(png.rgba, reference.rgba) << "the queued job, rendered with the DiT and encoder files, is the directory's image";
    const auto meta = json::parse(png.texts.at("rgbaq"));
    expect_dit_record(meta["model"]["components"]["dit"], dit);
    EXPECT_FALSE(meta["model"]["components"]["dit"].contains("path"));
    const json& te_record = meta["model"]["components"]["text_encoder"];
    EXPECT_EQ(te_record.value("file", ""), te.filename().string()) << te_record.dump();
    EXPECT_EQ(te_record.value("bytes", uint64_t{0}), fs::file_size(te));
    EXPECT_EQ(te_record.value("format", ""), "bf16");
    EXPECT_NE(meta["model"]["identity"], json::parse(with_file.texts.at("rgbaq"))["model"]["identity"])
        << "another text encoder file is another model";
    EXPECT_NE(meta["model"]["identity"], engine::model_identity(model().dir()));
    EXPECT_EQ(meta["model"]["identity"], engine::model_identity(model().dir(), {.dit = dit, .text_encoder = te}));
    // The prompt's embedding is cached under the encoder file's identity, not the directory's encoder's.
    std::vector<fs::path> entries;
    for (const auto& e : fs::directory_iterator(d.data_dir() / "cache" / "embeddings"))
      if (e.path().extension() == ".emb") entries.push_back(e.path());
    ASSERT_EQ(entries.size(), 1u);
    const std::string cached_as = entry_identity(entries[0]);
    EXPECT_NE(cached_as, engine::text_encoder_identity(model().dir()));
    EXPECT_EQ(cached_as, engine::text_encoder_identity(model().dir(), {.text_encoder = te}));
    // The job's record in the queue names the file with its path on this host.
    const auto exported = rgbaq(d, {"export", "1", "--format", "jsonl"});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const json job = json::parse(exported.out.substr(0, exported.out.find('\n')));
    const json& recorded = job["metadata"]["model"]["components"]["dit"];
    expect_dit_record(recorded, dit);
    EXPECT_EQ(recorded.value("path", ""), fs::absolute(dit).lexically_normal().string()) << job.dump();
    EXPECT_EQ(recorded["hash"], meta["model"]["components"]["dit"]["hash"]);
    EXPECT_EQ(job["metadata"]["model"]["components"]["text_encoder"].value("path", ""), fs::absolute(te).lexically_normal().string());
    d.signal(SIGTERM);
    EXPECT_EQ(d.wait_exit(), 0);
  }
}

// The tensors of a safetensors file's header (read here, not by the engine) whose names end with `suffix`.
size_t tensors_ending_with(const fs::path& file, const std::string& suffix) {
  size_t count = 0;
  const auto header = safetensors_header(file);  // held here: items() of a temporary would dangle in the loop
  for (const auto& [name, info] : header.items()) count += name.ends_with(suffix);
  return count;
}

TEST(SingleFileComponents, ThreeFilesAndNoModelDirectoryRenderWithRgbaqsOwnTokenizerAndSigmas) {
  TempDir dir;
  const fs::path dit = dir.path() / "qwen21t_dit.safetensors", te = dir.path() / "te.safetensors", vae = dir.path() / "vae.safetensors";
  write_prefixed_single_file(transformer_file(model().dir()), dit, kComfyDitPrefix);
  write_prefixed_single_file(model().dir() / "text_encoder", te, "text_encoders.qwen3vl.transformer.");
  write_prefixed_single_file(model().dir() / "vae", vae, "first_stage_model.");
  const auto png = render(dir.path() / "files.png", {"--dit", dit.string(), "--text-encoder", te.string(), "--vae", vae.string()});
  ASSERT_EQ(png.width, 128);
  ASSERT_EQ(png.rgba.size(), 128u * 128u * 4u);
  const auto meta = json::parse(png.texts.at("rgbaq"));
  EXPECT_EQ(meta["model"]["name"], "qwen21t_dit") << "no directory: the model is named after its DiT file";
  EXPECT_EQ(meta["model"]["components"].size(), 3u) << meta["model"].dump();
  EXPECT_EQ(meta["model"]["components"]["vae"].value("bytes", uint64_t{0}), fs::file_size(vae));
  // The tiny model's model_index.json holds the Turbo's published sigmas: rgbaq's own are the same.
  const auto directory = json::parse(render(dir.path() / "dir.png", {"--model", model().dir().string()}).texts.at("rgbaq"));
  EXPECT_EQ(meta["sigmas"], directory["sigmas"]);
  EXPECT_NE(meta["model"]["identity"], directory["model"]["identity"]);

  // A daemon of the three files alone renders the same image from its queue.
  const fs::path out = dir.path() / "out";
  DaemonProcess d(kRgbaqd, "", dir.path(), {.extra_args = {"--dit", dit.string(), "--text-encoder", te.string(), "--vae", vae.string()}});
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, "prompt,seed,name\na red fox,7,fox\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << log_tail(d);
  const auto pngs = pngs_in(out);
  ASSERT_EQ(pngs.size(), 1u);
  const auto queued = storage::read_png(pngs[0]);
  EXPECT_EQ(queued.rgba, png.rgba);
  EXPECT_EQ(json::parse(queued.texts.at("rgbaq"))["model"]["identity"], meta["model"]["identity"]);
}

TEST(SingleFileComponents, ADaemonRendersAQueuedJobWithAConvRotDitFile) {
  TempDir dir;
  const fs::path quantized = dir.path() / "comfy", out = dir.path() / "out";
  // ComfyUI's INT8 ConvRot layout, group 64 (the tiny DiT's width is 256), written by `rgbaq model quantize`.
  const auto q = run_process({kRgbaq, "model", "quantize", model().dir().string(), quantized.string(), "--format", "int8-convrot",
                              "--group", "64", "--components", "transformer"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const fs::path dit = quantized / "transformer.safetensors";
  const size_t modules = tensors_ending_with(dit, ".comfy_quant");
  EXPECT_EQ(modules, 22u) << "every Linear of the tiny DiT: 7 in each of its 2 blocks, 8 outside them";
  const auto reference = render(dir.path() / "reference.png", {"--model", model().dir().string()});
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--dit", dit.string()}});
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, "prompt,seed,name\na red fox,7,fox\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << log_tail(d);
  const auto pngs = pngs_in(out);
  ASSERT_EQ(pngs.size(), 1u);
  const auto png = storage::read_png(pngs[0]);
  const double db = testing::psnr(png.rgba, reference.rgba);
  std::cout << "[ figures  ] ConvRot G64 DiT from the queue against the bf16 directory's render: " << db << " dB\n";
  EXPECT_GE(db, 30.0);
  EXPECT_LT(db, 1e9) << "W8A8 is not the bf16 DiT: the int8 file was read, not the directory's";
  const json dit_record = json::parse(png.texts.at("rgbaq"))["model"]["components"]["dit"];
  EXPECT_EQ(dit_record.value("format", ""), "int8-convrot G64 (" + std::to_string(modules) + " linears) + bf16") << dit_record.dump();
  EXPECT_EQ(dit_record.value("bytes", uint64_t{0}), fs::file_size(dit));
  EXPECT_EQ(dit_record.value("file", ""), "transformer.safetensors");
}

TEST(SingleFileComponents, ErrorsNameTheFlagAndTheFile) {
  TempDir dir;
  const std::string m = model().dir().string(), out = (dir.path() / "x.png").string();
  const fs::path bad = dir.path() / "bad_dit.safetensors";
  write_prefixed_single_file(transformer_file(model().dir()), bad, kComfyDitPrefix, "model.diffusion_model.bogus_layer.weight");
  const fs::path dit = dir.path() / "dit.safetensors";
  write_prefixed_single_file(transformer_file(model().dir()), dit, kComfyDitPrefix);
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {{"--model", m, "--dit", "/nonexistent/dit.safetensors"}, {"--dit /nonexistent/dit.safetensors: no such file"}},
      {{"--model", m, "--vae", dir.path().string()}, {"--vae " + dir.path().string() + ": not a file"}},
      {{"--dit", dit.string()}, {"--text-encoder, --vae not given"}},
      {{"--model", m, "--dit", bad.string()}, {"--dit", "bad_dit.safetensors", "bogus_layer"}},
  };
  for (const auto& c : cases) {
    std::vector<std::string> render_argv = {kRgbaqd, "render", "--prompt", "x", "--size", "128", "-o", out};
    render_argv.insert(render_argv.end(), c.args.begin(), c.args.end());
    const auto r = run_process(render_argv);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    for (const auto& f : c.fragments) EXPECT_NE(r.err.find(f), std::string::npos) << "rgbaqd render: " << f << "\n" << r.err;
    // The daemon refuses to start the same way, before it serves anything.
    std::vector<std::string> serve_argv = {kRgbaqd, "--socket", (dir.path() / "run" / "rgbaqd.sock").string(), "--data-dir",
                                           (dir.path() / "data").string(), "--http", "off"};
    serve_argv.insert(serve_argv.end(), c.args.begin(), c.args.end());
    const auto s = run_process(serve_argv);
    EXPECT_EQ(s.exit_code, 2) << s.err;
    for (const auto& f : c.fragments) EXPECT_NE(s.err.find(f), std::string::npos) << "rgbaqd: " << f << "\n" << s.err;
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(SingleFileComponents, TheConfigFileNamesComponentFilesRelativeToItself) {
  TempDir dir;
  fs::create_directories(dir.path() / "conf" / "models");
  write_file(dir.path() / "conf" / "models" / "dit.safetensors", "x");
  write_file(dir.path() / "conf" / "models" / "te.safetensors", "x");
  write_file(dir.path() / "conf" / "models" / "vae.safetensors", "x");
  const fs::path config = dir.path() / "conf" / "rgbaqd.json";
  write_file(config, R"({"dit": "models/dit.safetensors", "text_encoder": "models/te.safetensors", "vae": "models/vae.safetensors"})");
  // All three and no model: no --model needed.
  const auto c = daemon::parse_daemon_config({"--config", config.string(), "--data-dir", dir.path().string()});
  EXPECT_TRUE(c.model_dir.empty());
  EXPECT_EQ(c.components.dit, dir.path() / "conf" / "models" / "dit.safetensors");
  EXPECT_EQ(c.components.text_encoder, dir.path() / "conf" / "models" / "te.safetensors");
  EXPECT_EQ(c.components.vae, dir.path() / "conf" / "models" / "vae.safetensors");
  EXPECT_EQ(c.engine_options().components.dit, c.components.dit);
  EXPECT_EQ(c.engine_options().components.vae, c.components.vae);
  EXPECT_EQ(c.engine_options().tokenizer.filename(), "tokenizer.json") << "no model: rgbaq's own tokenizer";
  EXPECT_TRUE(fs::is_regular_file(c.engine_options().tokenizer)) << c.engine_options().tokenizer;
  // A flag wins over the file's key.
  const auto flagged = daemon::parse_daemon_config(
      {"--config", config.string(), "--data-dir", dir.path().string(), "--dit", (dir.path() / "conf" / "models" / "te.safetensors").string()});
  EXPECT_EQ(flagged.components.dit, dir.path() / "conf" / "models" / "te.safetensors");
  // A key naming no file names the config file, the key and the file.
  write_file(config, R"({"model": ")" + model().dir().string() + R"(", "vae": "models/missing.safetensors"})");
  try {
    daemon::parse_daemon_config({"--config", config.string()});
    ADD_FAILURE() << "a missing VAE file was taken";
  } catch (const common::UsageError& e) {
    EXPECT_EQ(std::string(e.what()), config.string() + ": \"vae\": " + (dir.path() / "conf" / "models" / "missing.safetensors").string() +
                                         ": no such file");
  }
}

}  // namespace
}  // namespace rgbaq
