// LoRA adapters (engine/lora.h): the three key formats read to the same adapter, the file's hash against
// sha256sum, every malformed file an error naming the file and the key, the LRU, and the velocity of
// every backend with one and two LoRAs applied unmerged against a float64 reference that MERGES them
// (W + scale B A); at the session level: weight 0 renders the bytes of no LoRA, the three formats
// render identical bytes, and a LoRA changes the image.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "engine/lora.h"
#include "engine/lora_cache.h"
#include "engine/model/safetensors.h"
#include "engine/session.h"
#include "engine/model/weight_store.h"
#include "host/rope.h"
#include "tests/engine/backend_params.h"
#include "tests/engine/dit_reference.h"
#include "tests/engine/lora_reference.h"
#include "tests/engine/tiny_model_fixture.h"
#include "tools/tiny_model.h"

namespace rgbaq::engine {
namespace {

using testing::Vec;
using tools::LoraFormat;

DitConfig tiny() { return tools::tiny_dit_config(); }

std::string read_command(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return out;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

// The message of load_lora's error on `path`, or "" when it loads.
std::string load_error(const std::filesystem::path& path) {
  try {
    load_lora(path, "x", tiny());
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(LoraFile, ThreeFormatsReadToTheSameAdapter) {
  TempDir dir;
  tools::write_tiny_loras(dir.path(), tiny());
  const auto d = load_lora(dir.path() / "style-diffusers.safetensors", "style", tiny());
  const auto c = load_lora(dir.path() / "style-comfyui.safetensors", "style", tiny());
  const auto k = load_lora(dir.path() / "style-kohya.safetensors", "style", tiny());
  ASSERT_EQ(d->modules.size(), dit_linear_modules(tiny()).size());  // every Linear
  for (const auto* other : {c.get(), k.get()}) {
    ASSERT_EQ(other->modules.size(), d->modules.size());
    for (size_t i = 0; i < d->modules.size(); ++i) {
      EXPECT_EQ(other->modules[i].module, d->modules[i].module);
      EXPECT_EQ(other->modules[i].down, d->modules[i].down);
      EXPECT_EQ(other->modules[i].up, d->modules[i].up);
      EXPECT_EQ(other->modules[i].alpha_over_rank, 0.5f);  // alpha 2, rank 4
    }
  }
  // kohya's underscores map back to the dotted names, through "to_out.0" and "gate_layer".
  EXPECT_EQ(k->modules[0].module, "img_in");
  const auto detail = load_lora(dir.path() / "detail.safetensors", "detail", tiny());
  EXPECT_EQ(detail->modules.front().rank, 2);
  EXPECT_EQ(detail->modules.front().alpha_over_rank, 1.0f);  // no alpha: alpha = rank
}

TEST(LoraFile, HashIsSha256OfTheBytesAfterTheHeaderAsSha256sumComputesIt) {
  TempDir dir;
  tools::write_tiny_loras(dir.path(), tiny());
  const auto path = dir.path() / "detail.safetensors";
  std::ifstream in(path, std::ios::binary);
  uint64_t header = 0;
  in.read(reinterpret_cast<char*>(&header), 8);
  const std::string want = read_command("tail -c +" + std::to_string(8 + header + 1) + " '" + path.string() +
                                        "' | sha256sum | cut -c1-64");
  const auto a = load_lora(path, "detail", tiny());
  ASSERT_EQ(a->sha256.size(), 64u);
  EXPECT_EQ(a->sha256 + "\n", want);
  EXPECT_EQ(a->short_hash(), a->sha256.substr(0, 12));
  // The three formats differ in their headers only... and in the tensors' order, so only the header-free
  // hash of one file is fixed; a different adapter hashes differently.
  EXPECT_NE(load_lora(dir.path() / "style-diffusers.safetensors", "s", tiny())->sha256, a->sha256);
}

TEST(LoraFile, MalformedFilesAreErrorsNamingTheFileAndTheKey) {
  TempDir dir;
  const auto p = [&](const char* n) { return dir.path() / n; };
  auto a = [](Shape s) { return Tensor::from_f32(s, std::vector<float>(static_cast<size_t>(shape_numel(s)), 0.01f)); };
  const int64_t dim = tiny().dim();
  write_safetensors(p("unknown.safetensors"), {{"transformer.img_in.lora_A.weight", a({4, 64})},
                                               {"transformer.img_in.lora_B.weight", a({dim, 4})},
                                               {"transformer.blocks.0.attn.to_q.lora_A.weight", a({4, dim})}});
  write_safetensors(p("rank.safetensors"), {{"transformer.img_in.lora_A.weight", a({4, 64})},
                                            {"transformer.img_in.lora_B.weight", a({dim, 3})}});
  write_safetensors(p("shape.safetensors"), {{"lora_unet_img_in.lora_down.weight", a({4, 65})},
                                             {"lora_unet_img_in.lora_up.weight", a({dim, 4})}});
  write_safetensors(p("out.safetensors"), {{"diffusion_model.proj_out.lora_A.weight", a({4, dim})},
                                           {"diffusion_model.proj_out.lora_B.weight", a({63, 4})}});
  write_safetensors(p("te.safetensors"), {{"lora_te_text_model_encoder_layers_0_mlp_fc1.lora_down.weight", a({4, 8})}});
  write_safetensors(p("half.safetensors"), {{"transformer.img_in.lora_A.weight", a({4, 64})}});
  write_safetensors(p("other.safetensors"), {{"transformer.img_in.weight", a({dim, 64})}});
  const auto e = [&](const char* n) { return load_error(p(n)); };
  EXPECT_NE(e("unknown.safetensors").find("transformer.blocks.0.attn.to_q.lora_A.weight\": maps to no Linear"), std::string::npos)
      << e("unknown.safetensors");
  EXPECT_NE(e("rank.safetensors").find("rank mismatch"), std::string::npos) << e("rank.safetensors");
  EXPECT_NE(e("rank.safetensors").find("transformer.img_in.lora_B.weight"), std::string::npos);
  EXPECT_NE(e("shape.safetensors").find("lora_unet_img_in.lora_down.weight\": shape [4, 65] does not fit Linear \"img_in\""),
            std::string::npos) << e("shape.safetensors");
  EXPECT_NE(e("out.safetensors").find("diffusion_model.proj_out.lora_B.weight\": shape [63, 4] does not fit"), std::string::npos)
      << e("out.safetensors");
  EXPECT_NE(e("te.safetensors").find("only DiT LoRAs are supported"), std::string::npos) << e("te.safetensors");
  EXPECT_NE(e("half.safetensors").find("has no lora_B"), std::string::npos) << e("half.safetensors");
  EXPECT_NE(e("other.safetensors").find("transformer.img_in.weight\": is not a LoRA tensor"), std::string::npos)
      << e("other.safetensors");
  for (const char* n : {"unknown.safetensors", "rank.safetensors", "shape.safetensors", "te.safetensors", "half.safetensors"}) {
    EXPECT_NE(e(n).find(p(n).string()), std::string::npos) << n << ": " << e(n);
  }
  // Truncated: a real LoRA cut short.
  tools::write_tiny_loras(dir.path(), tiny());
  const auto good = p("style-kohya.safetensors");
  std::filesystem::resize_file(good, std::filesystem::file_size(good) - 100);
  EXPECT_NE(load_error(good).find("truncated"), std::string::npos) << load_error(good);
  EXPECT_NE(load_error(good).find(good.string()), std::string::npos);
  std::ofstream(p("empty.safetensors")).put('x');
  EXPECT_NE(load_error(p("empty.safetensors")).find("too short"), std::string::npos) << load_error(p("empty.safetensors"));
  EXPECT_NE(load_error(p("missing.safetensors")).find(p("missing.safetensors").string()), std::string::npos);
}

// A LoRA rewritten in place while it loads, as `curl -o` rewrites (truncate, then write): the issue's
// 61 MB LoRA killed the daemon with SIGBUS when it was mapped. Each load must now read the whole file
// or fail naming it; the loader runs in a child so that a SIGBUS shows here as its exit status.
TEST(LoraFile, RewrittenInPlaceWhileItLoadsIsAnErrorOrAWholeReadNeverASignal) {
  TempDir dir;
  const auto path = dir.path() / "big.safetensors";
  tools::write_lora(path, tiny(), LoraFormat::kDiffusers, 512, 2.0f, dit_linear_modules(tiny()), 3);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 8u << 20) << "big enough that a load spans many rewrites";
  const std::string expected_hash = load_lora(path, "big", tiny())->sha256;

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int whole = 0, refused = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(4);
    while (std::chrono::steady_clock::now() < until) {
      try {
        const auto adapter = load_lora(path, "big", tiny());
        if (adapter->sha256 != expected_hash) _exit(4);  // a torn read taken for the file
        ++whole;
      } catch (const std::runtime_error& e) {
        if (std::string(e.what()).find(path.string()) == std::string::npos) _exit(5);
        ++refused;
      }
    }
    std::cout << "loads while rewritten: " << whole << " whole, " << refused << " refused" << std::endl;
    _exit(refused > 0 ? 0 : 6);  // the rewrites must have been seen at least once
  }
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);  // O_TRUNC, then the bytes in chunks
    for (size_t at = 0; at < bytes.size(); at += 1u << 20) {
      out.write(bytes.data() + at, static_cast<std::streamsize>(std::min<size_t>(1u << 20, bytes.size() - at)));
      out.flush();
    }
  }
  ASSERT_FALSE(WIFSIGNALED(status)) << "the loader died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "4: a torn read passed as the file; 5: an error without the path; 6: no load saw a rewrite";
}

TEST(LoraCache, LoadsOnceEvictsLeastRecentlyUsedByBytesAndRereadsAChangedFile) {
  TempDir dir;
  tools::write_tiny_loras(dir.path(), tiny());
  const auto style = dir.path() / "style-diffusers.safetensors", detail = dir.path() / "detail.safetensors";
  const size_t style_bytes = load_lora(style, "s", tiny())->bytes(), detail_bytes = load_lora(detail, "d", tiny())->bytes();
  LoraCache cache(style_bytes + detail_bytes);  // room for both
  const auto a = cache.get("s", style, tiny());
  EXPECT_EQ(cache.get("s", style, tiny()), a);  // the same object: not read again
  cache.get("d", detail, tiny());
  EXPECT_EQ(cache.loads(), 2u);
  EXPECT_EQ(cache.bytes(), style_bytes + detail_bytes);
  EXPECT_TRUE(cache.holds_all({{"s", style, 1}, {"d", detail, 1}}));
  LoraCache small(style_bytes);  // one at a time: the least recently used goes
  small.get("s", style, tiny());
  small.get("d", detail, tiny());
  EXPECT_FALSE(small.holds_all({{"s", style, 1}}));
  EXPECT_TRUE(small.holds_all({{"d", detail, 1}}));
  EXPECT_EQ(small.bytes(), detail_bytes);
  // A file rewritten with another adapter is read again.
  tools::write_lora(style, tiny(), LoraFormat::kDiffusers, 2, std::nullopt, {"img_in"}, 9);
  std::filesystem::last_write_time(style, std::filesystem::last_write_time(style) + std::chrono::seconds(5));
  EXPECT_FALSE(cache.holds_all({{"s", style, 1}}));
  const auto b = cache.get("s", style, tiny());
  EXPECT_NE(b, a);
  EXPECT_EQ(b->modules.size(), 1u);
  EXPECT_EQ(a->modules.size(), dit_linear_modules(tiny()).size());  // the old one lives on while held
}

class LoraGraphs : public ::testing::TestWithParam<std::string> {};

TEST_P(LoraGraphs, UnmergedVelocityMatchesMergedFloat64ForOneAndTwoLoras) {
  const TinyModel model(DType::kBF16);
  TempDir loras;
  tools::write_tiny_loras(loras.path(), tiny());
  RGBAQ_OPEN_BACKEND_OR_SKIP(graphs, GetParam(), model.dir());
  const auto weights = WeightStore::open(model.dir() / "transformer");
  const auto config = load_dit_config(model.dir() / "transformer" / "config.json");
  const auto style = load_lora(loras.path() / "style-kohya.safetensors", "style", config);
  const auto detail = load_lora(loras.path() / "detail.safetensors", "detail", config);
  const host::ImageSize size{192, 128};
  const int64_t l = 11;
  const Tensor txt = Tensor::from_f32({l, config.context_dim}, testing::random_floats(l * config.context_dim, 6, 3.0f));
  const Tensor img = Tensor::from_f32({size.tokens(), 64}, testing::random_floats(size.tokens() * 64, 5, 1.7f));
  const auto rope = host::build_rope(host::RopeTables::from_formula(), static_cast<int>(l), size);
  const float t = 0.704534f;
  const Vec plain = testing::DitReference{weights, config}.velocity(img.to_f32_vector(), txt.to_f32_vector(), l,
                                                                    size.tokens(), t, rope);
  for (const auto& set : {std::vector<std::pair<std::shared_ptr<const LoraAdapter>, double>>{{style, 0.8}},
                          std::vector<std::pair<std::shared_ptr<const LoraAdapter>, double>>{{style, 0.8}, {detail, -0.6}}}) {
    LoraSet uses;
    for (const auto& [a, w] : set) uses.push_back({a, static_cast<float>(w)});
    graphs->set_loras(uses);
    const auto got = graphs->velocity({&img, &txt, t, &rope}).to_f32_vector();
    const auto deltas = testing::merged_deltas(set);
    const Vec want = testing::DitReference{weights, config, &deltas}.velocity(img.to_f32_vector(), txt.to_f32_vector(), l,
                                                                               size.tokens(), t, rope);
    const double err = testing::relative_error(got, want);
    EXPECT_LT(err, 1e-5) << set.size() << " LoRAs";
    // The LoRAs move the velocity well beyond that tolerance, so the comparison could fail.
    EXPECT_GT(testing::relative_error(got, plain), 1e-2) << set.size() << " LoRAs";
    std::cout << GetParam() << " DiT with " << set.size() << " LoRA(s): relative error " << err << " against the merged "
              << "float64 reference; " << testing::relative_error(got, plain) << " from the plain model\n";
  }
  graphs->set_loras({});
  const double back = testing::relative_error(graphs->velocity({&img, &txt, t, &rope}).to_f32_vector(), plain);
  EXPECT_LT(back, 1e-5);  // the set cleared: no weight was changed by the ones before
  graphs->begin_image(txt, rope);
  EXPECT_THROW(graphs->set_loras({{style, 1.0f}}), std::logic_error);  // the prefix is already computed
  graphs->end_image();
}

INSTANTIATE_TEST_SUITE_P(Backends, LoraGraphs, ::testing::ValuesIn(testing::backend_names()),
                         [](const auto& info) { return info.param; });

TEST(LoraSession, WeightZeroIsNoLoraFormatsAgreeAndALoraChangesTheImage) {
  const TinyModel model(DType::kBF16);
  TempDir loras;
  tools::write_tiny_loras(loras.path(), tiny());
  auto session = Session::open(model.dir(), "cpu", 2);
  RenderRequest request{"a red fox, game asset", 7, {128, 128}};
  const auto plain = session->render(request).rgba;
  const auto with = [&](std::vector<LoraRequest> l) {
    RenderRequest r = request;
    r.loras = std::move(l);
    return session->render(r).rgba;
  };
  const auto f = [&](const char* name) { return loras.path() / (std::string(name) + ".safetensors"); };
  EXPECT_EQ(with({{"style-diffusers", f("style-diffusers"), 0.0f}}), plain);
  EXPECT_EQ(with({{"style-diffusers", f("style-diffusers"), 0.0f}, {"detail", f("detail"), 0.0f}}), plain);
  const auto diffusers = with({{"style-diffusers", f("style-diffusers"), 0.9f}});
  EXPECT_NE(diffusers, plain);
  EXPECT_EQ(with({{"style-comfyui", f("style-comfyui"), 0.9f}}), diffusers);
  EXPECT_EQ(with({{"style-kohya", f("style-kohya"), 0.9f}}), diffusers);
  EXPECT_NE(with({{"style-kohya", f("style-kohya"), 0.9f}, {"detail", f("detail"), 0.5f}}), diffusers);
  EXPECT_EQ(session->render(request).rgba, plain);  // a job without LoRAs after them: no weight was rewritten
  EXPECT_EQ(session->lora_cache().loads(), 4u);     // each file read once
  RenderRequest bad = request;
  bad.loras = {{"missing", loras.path() / "missing.safetensors", 1.0f}};
  EXPECT_THROW(session->render(bad), std::runtime_error);
  EXPECT_EQ(session->render(request).rgba, plain);  // and the session goes on
}

TEST(LoraSession, SessionsGivenOneCacheReadEachFileOnce) {
  const TinyModel model(DType::kBF16);
  TempDir loras;
  tools::write_tiny_loras(loras.path(), tiny());
  EngineOptions options;
  options.backend = "cpu";
  options.threads = 1;
  options.lora_cache = std::make_shared<LoraCache>();  // a daemon's workers on one device
  auto first = Session::open(model.dir(), options), second = Session::open(model.dir(), options);
  EXPECT_EQ(&first->lora_cache(), &second->lora_cache());
  RenderRequest request{"a red fox, game asset", 7, {128, 128}};
  request.loras = {{"style-diffusers", loras.path() / "style-diffusers.safetensors", 0.9f}};
  const auto a = first->render(request).rgba;
  EXPECT_EQ(second->render(request).rgba, a);
  EXPECT_EQ(options.lora_cache->loads(), 1u) << "the second session found the adapter the first read";
  EXPECT_EQ(Session::open(model.dir(), "cpu", 1)->lora_cache().loads(), 0u) << "without one, a session has its own";
}

}  // namespace
}  // namespace rgbaq::engine
