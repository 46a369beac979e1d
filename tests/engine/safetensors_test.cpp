// The safetensors reader against files written by hand: round trips, and every corruption the issue
// lists giving an error that names the file and tensor, never a crash or an out-of-bounds read.
#include "engine/model/safetensors.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <set>
#include <random>

#include <nlohmann/json.hpp>

#include "engine/model/model_config.h"
#include "engine/model/model_files.h"
#include "engine/model/weight_store.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::engine {
namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_all(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file from a raw header and data, as a corrupt writer might produce.
std::string raw_file(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + std::string(data_bytes, '\x01');
}

void expect_error(const std::filesystem::path& path, const std::string& fragment) {
  try {
    SafetensorsFile::open(path);
    FAIL() << "opened despite: " << fragment;
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

TEST(Safetensors, RoundTripsEveryDtype) {
  TempDir dir;
  Tensor f32 = Tensor::from_f32({2, 3}, {1, -2, 3.5f, 0, 1e-3f, -7});
  Tensor bf16 = Tensor::zeros(DType::kBF16, {3});
  Tensor f16 = Tensor::zeros(DType::kF16, {2});
  Tensor i8 = Tensor::zeros(DType::kI8, {5});
  auto* b = static_cast<uint16_t*>(bf16.mutable_data());
  b[0] = f32_to_bf16(1.5f), b[1] = f32_to_bf16(-0.25f), b[2] = f32_to_bf16(3.0f);
  auto* h = static_cast<uint16_t*>(f16.mutable_data());
  h[0] = 0x3c00, h[1] = 0xc000;  // 1.0, -2.0
  static_cast<int8_t*>(i8.mutable_data())[4] = -128;
  write_safetensors(dir.path() / "a.safetensors", {{"f32", f32}, {"bf16", bf16}, {"f16", f16}, {"i8", i8}});
  const auto file = SafetensorsFile::open(dir.path() / "a.safetensors");
  EXPECT_EQ(file.tensor("f32").to_f32_vector(), f32.to_f32_vector());
  EXPECT_EQ(file.tensor("bf16").to_f32_vector(), (std::vector<float>{1.5f, -0.25f, 3.0f}));
  EXPECT_EQ(file.tensor("f16").to_f32_vector(), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(file.tensor("i8").to_f32_vector()[4], -128.0f);
  EXPECT_EQ(file.tensor("f32").shape(), (Shape{2, 3}));
  EXPECT_THROW(file.tensor("nope"), std::runtime_error);
}

// A U8 tensor of odd length (a comfy_quant) before BF16 and F32 ones: the writer lays the data out widest
// type first, so each tensor starts aligned for its type, with no gap (Python's safetensors refuses holes);
// read from the header's own offsets.
TEST(Safetensors, WrittenTensorsStartAlignedForTheirTypeWithNoGap) {
  TempDir dir;
  Tensor u8 = Tensor::zeros(DType::kU8, {3});
  Tensor bf16 = Tensor::zeros(DType::kBF16, {3});
  static_cast<uint16_t*>(bf16.mutable_data())[1] = f32_to_bf16(-0.25f);
  const Tensor f32 = Tensor::from_f32({1}, {2.5f});
  const auto path = dir.path() / "a.safetensors";
  write_safetensors(path, {{"a.comfy_quant", u8}, {"b.bf16", bf16}, {"c.f32", f32}, {"d.i8", Tensor::zeros(DType::kI8, {1})}});
  const std::string bytes = read_all(path);
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= uint64_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
  const auto header = nlohmann::json::parse(bytes.substr(8, header_len));
  const uint64_t data_start = 8 + header_len;
  EXPECT_EQ(data_start % 8, 0u);
  uint64_t covered = 0;
  for (const auto& [name, size] : std::vector<std::pair<std::string, uint64_t>>{{"a.comfy_quant", 1}, {"b.bf16", 2}, {"c.f32", 4}, {"d.i8", 1}}) {
    const uint64_t begin = header[name]["data_offsets"][0], end = header[name]["data_offsets"][1];
    EXPECT_EQ((data_start + begin) % size, 0u) << name << " starts at " << begin;
    covered += end - begin;
  }
  EXPECT_EQ(covered, bytes.size() - data_start);  // no gap, nothing past the tensors
  EXPECT_EQ(SafetensorsFile::open(path).tensor("b.bf16").to_f32_vector(), (std::vector<float>{0.0f, -0.25f, 0.0f}));
}

// A file laid out by another writer with a BF16 tensor at an odd address: read as a copy, values intact.
TEST(Safetensors, AMisalignedBf16TensorIsReadAsACopy) {
  TempDir dir;
  const std::string header = R"({"u":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[1,5]}})";
  std::string file = raw_file(header + std::string((8 - (8 + header.size()) % 8) % 8, ' '), 0);
  file[0] = static_cast<char>(file.size() - 8);  // the padded header's length (< 256)
  const uint16_t values[2] = {f32_to_bf16(1.5f), f32_to_bf16(-3.0f)};
  file += '\x07';
  file.append(reinterpret_cast<const char*>(values), 4);
  write_all(dir.path() / "m.safetensors", file);
  const auto st = SafetensorsFile::open(dir.path() / "m.safetensors");
  const Tensor b = st.tensor("b");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 2, 0u);
  EXPECT_EQ(b.to_f32_vector(), (std::vector<float>{1.5f, -3.0f}));
}

// make_tiny_model --hollow: the header of the whole file, then a hole the data would fill, which reads as
// zeros and takes no disk.
TEST(Safetensors, AHollowFileIsTheWholeFilesHeaderOverAHoleOfZeros) {
  TempDir dir;
  Tensor t = Tensor::zeros(DType::kBF16, {2048, 4096});  // 16 MiB
  auto* v = static_cast<uint16_t*>(t.mutable_data());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = f32_to_bf16(static_cast<float>(i % 251) - 125.0f);
  const Tensor bias = Tensor::from_f32({7}, {1, 2, 3, 4, 5, 6, 7});
  const auto whole = dir.path() / "whole.safetensors", hollow = dir.path() / "hollow.safetensors";
  write_safetensors(whole, {{"w", t}, {"b", bias}});
  write_safetensors(hollow, {{"w", t}, {"b", bias}}, true);
  ASSERT_EQ(std::filesystem::file_size(hollow), std::filesystem::file_size(whole));
  auto bytes = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string a = bytes(whole), b = bytes(hollow);
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = header << 8 | static_cast<uint8_t>(a[static_cast<size_t>(i)]);
  EXPECT_EQ(a.substr(0, 8 + header), b.substr(0, 8 + header));  // the same length prefix and JSON
  EXPECT_EQ(b.find_first_not_of('\0', 8 + header), std::string::npos) << "the data reads as zeros";
  struct stat st {};
  ASSERT_EQ(stat(hollow.c_str(), &st), 0);
  EXPECT_LT(st.st_blocks * 512, 1 << 20) << "a hole takes no disk (" << st.st_blocks * 512 << " bytes allocated)";
  const auto file = SafetensorsFile::open(hollow);
  EXPECT_EQ(file.tensor("w").shape(), (Shape{2048, 4096}));
  EXPECT_EQ(file.tensor("b").to_f32_vector(), std::vector<float>(7, 0.0f));
}

TEST(Safetensors, CorruptAndTruncatedFilesAreNamedErrors) {
  TempDir dir;
  const auto p = dir.path() / "bad.safetensors";
  write_all(p, "abc");
  expect_error(p, "too short");
  write_all(p, raw_file("{}", 0).substr(0, 8) + "{");
  expect_error(p, "header length 2 runs past the end");
  write_all(p, raw_file("{not json", 0));
  expect_error(p, "not valid JSON");
  write_all(p, raw_file(R"({"w": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}})", 8));
  expect_error(p, "tensor \"w\": dtype F64 is not supported");
  write_all(p, raw_file(R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}})", 16));
  expect_error(p, "tensor \"w\": data_offsets [0,12] hold 12 bytes; shape [2, 2] of F32 needs 16");
  write_all(p, raw_file(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 10));
  expect_error(p, "tensor \"w\": data_offsets [0,16] run past the data section (10 bytes");
  write_all(p, raw_file(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                           "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})", 16));
  expect_error(p, "tensors \"a\" and \"b\" overlap");
  write_all(p, raw_file(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4));
  expect_error(p, "is not a list of sizes");
  write_all(p, raw_file(R"({"w": {"dtype": "F32", "shape": [1]}})", 4));
  expect_error(p, "needs dtype, shape and data_offsets");
  write_all(p, raw_file(R"([1, 2])", 0));
  expect_error(p, "not a JSON object");
  expect_error(dir.path() / "missing.safetensors", "No such file");
}

TEST(Safetensors, TruncatingAValidFileAnywhereIsAnError) {
  TempDir dir;
  Tensor t = Tensor::from_f32({64}, std::vector<float>(64, 0.5f));
  write_safetensors(dir.path() / "ok.safetensors", {{"a", t}, {"b", t}});
  const std::string bytes = read_all(dir.path() / "ok.safetensors");
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    write_all(dir.path() / "cut.safetensors", bytes.substr(0, cut));
    EXPECT_THROW(SafetensorsFile::open(dir.path() / "cut.safetensors"), std::runtime_error) << "cut at " << cut;
  }
}

TEST(Safetensors, RandomHeaderDamageNeverCrashes) {
  // Run under the asan preset, this is where an out-of-bounds read would show.
  TempDir dir;
  Tensor t = Tensor::from_f32({8, 8}, std::vector<float>(64, 0.25f));
  write_safetensors(dir.path() / "ok.safetensors", {{"weight", t}, {"bias", Tensor::from_f32({8}, std::vector<float>(8, 1))}});
  const std::string bytes = read_all(dir.path() / "ok.safetensors");
  std::mt19937 rng(1);
  int opened = 0, refused = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string damaged = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      const size_t at = rng() % std::min<size_t>(damaged.size(), 200);  // the length and the header
      damaged[at] = static_cast<char>(rng());
    }
    write_all(dir.path() / "d.safetensors", damaged);
    try {
      const auto file = SafetensorsFile::open(dir.path() / "d.safetensors");
      for (const auto& name : file.names()) {
        const Tensor x = file.tensor(name);
        volatile float sink = x.numel() ? x.to_f32_vector().back() : 0.0f;  // touch the last byte it claims
        (void)sink;
      }
      ++opened;
    } catch (const std::runtime_error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 1000);
  EXPECT_EQ(opened + refused, 2000);
}

TEST(WeightStore, ShardsDuplicatesAndShapes) {
  TempDir dir;
  Tensor t = Tensor::from_f32({2, 2}, {1, 2, 3, 4});
  write_safetensors(dir.path() / "s1.safetensors", {{"a", t}});
  write_safetensors(dir.path() / "s2.safetensors", {{"b", t}});
  std::ofstream(dir.path() / "w.safetensors.index.json") << R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})";
  const auto store = WeightStore::open(dir.path());
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.require("b", {2, 2}).to_f32_vector()[3], 4.0f);
  try {
    store.require("a", {4});
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("s1.safetensors: tensor \"a\" has shape [2, 2], expected [4]"), std::string::npos) << e.what();
  }
  try {
    store.get("c");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor \"c\" is missing"), std::string::npos) << e.what();
  }
  std::ofstream(dir.path() / "w.safetensors.index.json", std::ios::trunc)
      << R"({"weight_map": {"a": "s1.safetensors", "b": "s3.safetensors"}})";
  EXPECT_THROW(WeightStore::open(dir.path()), std::runtime_error);
  std::ofstream(dir.path() / "w.safetensors.index.json", std::ios::trunc)
      << R"({"weight_map": {"a": "s1.safetensors", "z": "s2.safetensors"}})";
  try {
    WeightStore::open(dir.path());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor \"z\" is not in its shard s2.safetensors"), std::string::npos) << e.what();
  }
  std::filesystem::remove(dir.path() / "w.safetensors.index.json");
  write_safetensors(dir.path() / "s2.safetensors", {{"a", t}});
  EXPECT_THROW(WeightStore::open(dir.path()), std::runtime_error);  // "a" in two files
  TempDir empty;
  EXPECT_THROW(WeightStore::open(empty.path()), std::runtime_error);
}

// What `rgbaq model pull` downloads (model_files_needed) and what WeightStore::open reads are one
// rule: the plain index or weights file beside dtype variants, and a clear error where none is plain.
TEST(WeightStore, TheStoreReadsTheFilesAPullDownloads) {
  TempDir dir;
  const auto folder = dir.path() / "transformer";
  std::filesystem::create_directories(folder);
  const Tensor t = Tensor::from_f32({2}, {1, 2});
  const auto needed_weights = [&] {
    std::set<std::string> listing = {"model_index.json"};
    for (const auto& e : std::filesystem::directory_iterator(folder)) listing.insert("transformer/" + e.path().filename().string());
    std::vector<std::string> out;
    for (const auto& f : model_files_needed(listing, [&](const std::string& rel) {
           if (rel == "model_index.json") return nlohmann::json::parse(R"({"transformer": ["diffusers", "X"]})");
           return read_json_object(dir.path() / rel);
         })) {
      if (f.starts_with("transformer/") && f != "transformer/config.json") out.push_back(f.substr(12));
    }
    return out;
  };
  const auto store_files = [&] {
    std::set<std::string> files;
    const auto store = WeightStore::open(folder);
    for (const auto& n : store.names()) files.insert(store.file_of(n).filename().string());
    return std::vector<std::string>(files.begin(), files.end());
  };

  // The plain file and its fp16 variant (the same tensors): the plain one only, or "w" is in both.
  write_safetensors(folder / "diffusion_pytorch_model.safetensors", {{"w", t}});
  write_safetensors(folder / "diffusion_pytorch_model.fp16.safetensors", {{"w", t}});
  EXPECT_EQ(store_files(), std::vector<std::string>{"diffusion_pytorch_model.safetensors"});
  EXPECT_EQ(needed_weights(), std::vector<std::string>{"diffusion_pytorch_model.safetensors"});

  // The plain index beside a variant's index: the plain one and the shards it names.
  write_safetensors(folder / "s1.safetensors", {{"w", t}});
  write_safetensors(folder / "s2.safetensors", {{"v", t}});
  std::ofstream(folder / "diffusion_pytorch_model.safetensors.index.json")
      << R"({"weight_map": {"w": "s1.safetensors", "v": "s2.safetensors"}})";
  std::ofstream(folder / "diffusion_pytorch_model.fp16.safetensors.index.json")
      << R"({"weight_map": {"w": "diffusion_pytorch_model.fp16.safetensors"}})";
  EXPECT_EQ(store_files(), (std::vector<std::string>{"s1.safetensors", "s2.safetensors"}));
  EXPECT_EQ(needed_weights(), (std::vector<std::string>{"diffusion_pytorch_model.safetensors.index.json", "s1.safetensors",
                                                        "s2.safetensors"}));

  // Two variants' indexes and no plain one: both refuse, naming the folder.
  std::filesystem::rename(folder / "diffusion_pytorch_model.safetensors.index.json",
                          folder / "diffusion_pytorch_model.bf16.safetensors.index.json");
  for (const auto& attempt : {std::function<void()>([&] { store_files(); }), std::function<void()>([&] { needed_weights(); })}) {
    try {
      attempt();
      ADD_FAILURE() << "two indexes, none plain, were taken";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("2 shard indexes"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("transformer"), std::string::npos) << e.what();
    }
  }
}

TEST(Dtype, ConversionsMatchTheFormats) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);   // exactly half way: to even
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);   // 1 + 3/256: half way, to even (up)
  EXPECT_EQ(bf16_to_f32(0xc0a0), -5.0f);
}

}  // namespace
}  // namespace rgbaq::engine
