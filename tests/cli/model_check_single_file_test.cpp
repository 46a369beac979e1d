// `rgbaq model check` with single component files (issue 39), through the real binary: a ComfyUI-style
// DiT file (the tiny transformer's tensors under ComfyUI's "model.diffusion_model." names, written by
// the test's own safetensors writer) beside make_tiny_model's directory is listed with its path, format,
// bytes and hash (--json) and the same in the text; a file it cannot use, a missing file and a missing
// model are refused with exit 2 naming the flag and the file.
#include <gtest/gtest.h>

#include <regex>

#include <nlohmann/json.hpp>

#include "tests/daemon/comfy_single_file.h"
#include "tests/run_process.h"
#include "tests/test_temp_dir.h"

namespace rgbaq {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kRgbaq = RGBAQ_CLI_PATH;
const std::string kMakeTinyModel = RGBAQ_MAKE_TINY_MODEL_PATH;

json component(const json& report, const std::string& role) {
  for (const auto& c : report["components"])
    if (c["role"] == role) return c;
  return {};
}

// The tensors a safetensors file's header lists (its own reading: the JSON header's keys, less __metadata__).
size_t tensors_in(const fs::path& file) {
  const json h = safetensors_header(file);
  return h.size() - (h.contains("__metadata__") ? 1 : 0);
}

class ModelCheckSingleFile : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(run_process({kMakeTinyModel, model.string()}).exit_code, 0);
    write_prefixed_single_file(model / "transformer" / "diffusion_pytorch_model.safetensors", dit, "model.diffusion_model.");
  }
  TempDir tmp;
  const fs::path model = tmp.path() / "model", dit = tmp.path() / "qwen21t_dit.safetensors";
};

TEST_F(ModelCheckSingleFile, ListsTheDitFileWithItsFormatAndBytes) {
  auto r = run_process({kRgbaq, "model", "check", model.string(), "--dit", dit.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(report["usable"], true);
  const json transformer = component(report, "transformer");
  ASSERT_TRUE(transformer.contains("file")) << transformer.dump();
  const json& file = transformer["file"];
  EXPECT_EQ(file.value("path", ""), fs::absolute(dit).lexically_normal().string());
  EXPECT_EQ(file.value("format", ""), "bf16");  // the tiny model's weights as stored
  EXPECT_EQ(file.value("bytes", uint64_t{0}), fs::file_size(dit));
  EXPECT_TRUE(std::regex_match(file.value("hash", ""), std::regex("[0-9a-f]{16}"))) << file.dump();
  EXPECT_EQ(transformer["tensors"].get<size_t>(), tensors_in(dit)) << "the file's tensors, all of them read";
  EXPECT_EQ(transformer["dtypes"], (json{{"BF16", tensors_in(dit)}}));
  // The other components are the directory's own: no file of their own.
  EXPECT_FALSE(component(report, "text_encoder").contains("file")) << component(report, "text_encoder").dump();
  EXPECT_FALSE(component(report, "vae").contains("file"));

  r = run_process({kRgbaq, "model", "check", model.string(), "--dit", dit.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string line = "file " + fs::absolute(dit).lexically_normal().string() + ": bf16, " +
                           std::to_string(fs::file_size(dit)) + " bytes";
  EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

TEST_F(ModelCheckSingleFile, ThreeFilesWithoutADirectoryAreListed) {
  const fs::path te = tmp.path() / "te.safetensors", vae = tmp.path() / "vae.safetensors";
  write_prefixed_single_file(model / "text_encoder", te, "text_encoders.qwen3vl.transformer.");
  write_prefixed_single_file(model / "vae", vae, "");
  const auto r = run_process({kRgbaq, "model", "check", "--dit", dit.string(), "--text-encoder", te.string(), "--vae", vae.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  for (const auto& [role, file] : {std::pair{"transformer", dit}, {"text_encoder", te}, {"vae", vae}}) {
    const json c = component(report, role);
    EXPECT_EQ(c["file"].value("path", ""), fs::absolute(file).lexically_normal().string()) << role << ": " << c.dump();
    EXPECT_EQ(c["file"].value("bytes", uint64_t{0}), fs::file_size(file)) << role;
    EXPECT_EQ(c["tensors"].get<size_t>(), tensors_in(file)) << role;
  }
}

TEST_F(ModelCheckSingleFile, RefusesWhatItCannotUseNamingTheFlagAndFile) {
  const fs::path bad = tmp.path() / "bad_dit.safetensors";
  write_prefixed_single_file(model / "transformer" / "diffusion_pytorch_model.safetensors", bad, "model.diffusion_model.",
                             "model.diffusion_model.bogus_layer.weight");
  auto r = run_process({kRgbaq, "model", "check", model.string(), "--dit", bad.string(), "--json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  for (const std::string f : {"--dit", "bad_dit.safetensors", "bogus_layer"}) EXPECT_NE(r.err.find(f), std::string::npos) << f << "\n" << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(report["usable"], false);

  r = run_process({kRgbaq, "model", "check", model.string(), "--dit", (tmp.path() / "none.safetensors").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dit " + (tmp.path() / "none.safetensors").string() + ": no such file"), std::string::npos) << r.err;

  r = run_process({kRgbaq, "model", "check", "--dit", dit.string()});  // no directory, and not all three files
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dit, --text-encoder and --vae"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace rgbaq
