// A safetensors header is bounded before it is parsed (issue 26, item 1): a header bomb costs its file
// an error, not the daemon a gigabyte. Memory is measured (the kernel's peak RSS), not assumed, and
// the bounds are held against the real model's headers, worked out from the weight schema.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "common/json_nesting.h"
#include "engine/model/safetensors.h"
#include "engine/model/weight_schema.h"
#include "tests/peak_memory.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

namespace rgbaq::engine {
namespace {

constexpr uint64_t kMiB = 1u << 20;

// A file of `header` and no data, as a hostile writer would make it.
void write_raw(const std::filesystem::path& p, const std::string& header) {
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << len << header;
}

std::string open_error(const std::filesystem::path& p) {
  try {
    SafetensorsFile::open(p);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// `{"__metadata__":` + `depth` nested arrays + `}`, at least `bytes` long (padded with spaces).
std::string nested_header(size_t depth, size_t bytes) {
  std::string h = "{\"__metadata__\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  if (h.size() < bytes) h += std::string(bytes - h.size(), ' ');
  return h;
}

// The header write_safetensors would give these tensors as BF16, with data offsets of the real files'
// magnitude (a shard is several GB, so offsets have 10 digits).
std::string real_header(const ComponentSchema& schema) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = uint64_t{1} << 33;
  for (const WeightSpec& spec : schema.tensors) {
    const uint64_t bytes = static_cast<uint64_t>(shape_numel(spec.shape)) * 2;
    header[spec.name] = {{"dtype", "BF16"}, {"shape", spec.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  header["__metadata__"] = {{"format", "pt"}};
  return header.dump();
}

TEST(SafetensorsLimits, TheScanCountsTheValuesAParserMakes) {
  // Worked by hand: the root, "a"'s array, [], [1, 2], 1, 2 and "b"'s object.
  const std::string text = R"( {"a": [[], [1, 2]], "b": {}, "s": "[,{,"} )";
  EXPECT_EQ(common::scan_json(text, 8).values, 8u);  // ... and "s"'s string, whose brackets do not count
  size_t dom_values = 0;
  const auto parsed = nlohmann::json::parse(text, [&](int, nlohmann::json::parse_event_t e, nlohmann::json&) {
    dom_values += e == nlohmann::json::parse_event_t::value || e == nlohmann::json::parse_event_t::object_end ||
                  e == nlohmann::json::parse_event_t::array_end;
    return true;
  });
  EXPECT_FALSE(parsed.is_discarded());
  EXPECT_EQ(dom_values, 8u) << "nlohmann's own events agree";
  EXPECT_EQ(common::scan_json("[]", 8).values, 1u);
  EXPECT_EQ(common::scan_json("", 8).values, 0u);
}

TEST(SafetensorsLimits, TheRealModelsHeadersAreFarUnderTheBounds) {
  // The text encoder's used tensors (the published one holds about as many more: lm_head and the
  // vision tower, which rgbaq ignores), the DiT's and the VAE's, each as if one file.
  const auto text = real_header(text_encoder_schema(tools::real_text_encoder_config(), "model.language_model."));
  const auto dit = real_header(dit_schema(tools::real_dit_config()));
  const auto vae = real_header(vae_schema(tools::real_vae_config()));
  const size_t largest = std::max({text.size(), dit.size(), vae.size()});
  std::cout << "real headers: text encoder " << text.size() << " B, DiT " << dit.size() << " B, VAE " << vae.size()
            << " B\n";
  // Twice the largest (for the tensors rgbaq ignores) is still under a hundredth of the byte bound.
  EXPECT_LT(2 * largest * 100, 16 * kMiB);
  EXPECT_GT(largest, 20000u) << "the schema lists hundreds of tensors";
  // And it opens: the bounds refuse no real header.
  TempDir dir;
  write_raw(dir.path() / "text.safetensors", text);
  EXPECT_EQ(open_error(dir.path() / "text.safetensors").find("bytes of JSON"), std::string::npos);
}

TEST(SafetensorsLimits, AHeaderBombNested16MDeepIsRefusedWithoutParsing) {
  // The issue's bomb: a 32 MiB header (under the old 100 MiB cap) nesting arrays 16M deep took the
  // daemon from 205 to 1,525 MiB.
  TempDir dir;
  const auto path = dir.path() / "bomb.safetensors";
  write_raw(path, nested_header(16u << 20, 32 * kMiB));
  std::string error;
  const uint64_t growth = peak_rss_growth([&] { error = open_error(path); });
  std::cout << "peak RSS growth opening the 32 MiB bomb: " << growth / kMiB << " MiB\n";
  EXPECT_NE(error.find(path.string()), std::string::npos) << error;
  EXPECT_NE(error.find("over the 16777216 allowed"), std::string::npos) << error;
  EXPECT_LT(growth, 16 * kMiB);
}

TEST(SafetensorsLimits, DeepOrCrowdedHeadersUnderTheByteBoundAreRefusedByNameOfTheLimit) {
  TempDir dir;
  const auto deep = dir.path() / "deep.safetensors";
  write_raw(deep, nested_header(500000, 0));  // 1 MB
  std::string error;
  const uint64_t growth = peak_rss_growth([&] { error = open_error(deep); });
  EXPECT_NE(error.find(deep.string() + ": header: JSON nests deeper than 8 levels (at byte "), std::string::npos) << error;
  EXPECT_LT(growth, 16 * kMiB);

  // 15 MiB of empty arrays: 5M values, a DOM of ~500 MiB.
  std::string crowded = "{\"__metadata__\":{\"a\":[";
  while (crowded.size() < 15 * kMiB) crowded += "[],";
  crowded += "[]]}}";
  const auto many = dir.path() / "many.safetensors";
  write_raw(many, crowded);
  const uint64_t many_growth = peak_rss_growth([&] { error = open_error(many); });
  EXPECT_NE(error.find(many.string() + ": header: JSON holds about "), std::string::npos) << error;
  EXPECT_NE(error.find("values, over the 262144 allowed"), std::string::npos) << error;
  EXPECT_LT(many_growth, 32 * kMiB);
}

TEST(SafetensorsLimits, TheWorstHeaderWithinTheBoundsParsesInBoundedMemory) {
  // Just under every bound: 262,000 values (empty arrays, the costliest per byte) and a long string.
  std::string h = "{\"__metadata__\":{\"a\":[";
  for (int i = 0; i < 262000 - 10; ++i) h += "[],";
  h += "[]],\"b\":\"" + std::string(16 * kMiB - h.size() - 64, 'x') + "\"}}";
  TempDir dir;
  const auto path = dir.path() / "worst.safetensors";
  write_raw(path, h);
  std::string error = "not run";
  const uint64_t growth = peak_rss_growth([&] { error = open_error(path); });
  std::cout << "peak RSS growth parsing the worst header within the bounds (" << h.size() / kMiB
            << " MiB): " << growth / kMiB << " MiB\n";
  EXPECT_EQ(error, "");
  EXPECT_LT(growth, 128 * kMiB);
}

}  // namespace
}  // namespace rgbaq::engine
