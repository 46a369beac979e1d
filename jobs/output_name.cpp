#include "jobs/output_name.h"

#include <cstdio>

#include "common/hash.h"

namespace rgbaq::jobs {
namespace {

using common::fnv1a;
using common::mix;

std::string hex(uint64_t v, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return std::string(buf + 16 - digits);
}

// Fields joined with a separator that cannot occur in UTF-8 text.
std::string record(const std::string& prompt, uint64_t seed, const host::ImageSize& size, const std::string& name,
                   const std::string& out_dir) {
  return prompt + '\xff' + std::to_string(seed) + '\xff' + size.to_string() + '\xff' + name + '\xff' + out_dir;
}

}  // namespace

std::string slug(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= 48) break;
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      out += static_cast<char>(c);
    } else if (c >= 'A' && c <= 'Z') {
      out += static_cast<char>(c - 'A' + 'a');
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "image" : out;
}

std::string output_base_name(const std::string& prompt, const std::string& name, const host::ImageSize& size,
                             const std::string& lora) {
  if (!name.empty()) return slug(name);
  // No LoRA: the key of before LoRAs existed, so earlier outputs keep their names.
  const uint64_t h = mix(fnv1a(prompt + '\xff' + size.to_string() + (lora.empty() ? "" : '\xff' + lora)));
  return slug(prompt) + "-" + hex(h, 8);
}

std::string output_file_name(const std::string& prompt, const std::string& name, uint64_t seed, const host::ImageSize& size,
                             const std::string& lora) {
  return output_base_name(prompt, name, size, lora) + "_" + std::to_string(seed) + ".png";
}

uint64_t prompt_key(const std::string& prompt) { return mix(fnv1a(prompt)); }

uint64_t content_key(const std::string& prompt, uint64_t seed, const host::ImageSize& size, const std::string& name,
                     const std::string& out_dir, const std::string& lora) {
  const std::string r = record(prompt, seed, size, name, out_dir) + (lora.empty() ? "" : '\xff' + lora);
  return mix(fnv1a(r, 0x84222325cbf29ce4ull));
}

}  // namespace rgbaq::jobs
