#include "jobs/output_name.h"

#include <cstdio>
#include <stdexcept>

#include "common/hash.h"
#include "common/printable_text.h"

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

bool name_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

// The character that starts at name[i], as a message names it (a control character or a non-ASCII one
// by its code, which a terminal shows as it is).
std::string describe_char(std::string_view name, size_t i) {
  const auto c = static_cast<unsigned char>(name[i]);
  char buf[48];
  if (c == ' ') return "a space";
  if (c < 0x20 || c == 0x7f) {
    std::snprintf(buf, sizeof buf, "the control character \\x%02x", c);
    return buf;
  }
  if (c < 0x80) return std::string("'") + static_cast<char>(c) + "'";
  const size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  uint32_t cp = n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
  bool ok = n != 0 && i + n <= name.size();
  for (size_t k = 1; ok && k < n; ++k) {
    const auto cc = static_cast<unsigned char>(name[i + k]);
    ok = (cc & 0xC0) == 0x80;
    cp = (cp << 6) | (cc & 0x3f);
  }
  if (!ok) {
    std::snprintf(buf, sizeof buf, "the byte \\x%02x (not UTF-8)", c);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "the non-ASCII character U+%04X", static_cast<unsigned>(cp));
  return buf;
}

// A usable spelling of a refused name: each run of other characters as one '_', no '.' or '_' at either
// end, cut to the limit. None ("") for a name with non-ASCII text, which this would only mangle.
std::string suggested_name(std::string_view name) {
  std::string out;
  for (unsigned char c : name) {
    if (c >= 0x80) return "";
    if (name_char(c)) out += static_cast<char>(c);
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  const size_t b = out.find_first_not_of("._");
  if (b == std::string::npos) return "";
  return out.substr(b, out.find_last_not_of("._") - b + 1).substr(0, kMaxNameLength);
}

}  // namespace

std::string name_problem(std::string_view name) {
  constexpr const char* kRule = "a name is kept as written, so it may hold only ASCII letters, digits, '_', '-' and '.'";
  if (name.empty()) return "it is empty (leave the field out to name the files after the prompt)";
  const auto try_instead = [&] {
    const std::string s = suggested_name(name);
    return s.empty() ? std::string() : " (say \"" + s + "\")";
  };
  if (name[0] == '.') return "it starts with '.' (a hidden file; \".\" and \"..\" are folders)" + try_instead();
  for (size_t i = 0; i < name.size(); ++i) {
    if (name_char(static_cast<unsigned char>(name[i]))) continue;
    // Every character before this one is ASCII: its byte offset is its position.
    return describe_char(name, i) + " (character " + std::to_string(i + 1) + ") is not allowed: " + kRule + try_instead();
  }
  if (name.size() > kMaxNameLength) {
    return "it is " + std::to_string(name.size()) + " characters long; a name is at most " + std::to_string(kMaxNameLength);
  }
  return "";
}

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
  if (!name.empty()) {
    if (const std::string why = name_problem(name); !why.empty()) {
      throw std::invalid_argument("name \"" + common::printable(name.substr(0, kMaxNameLength)) + "\" is not a usable file name: " + why);
    }
    return name;
  }
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

uint64_t row_key(const std::string& prompt, const host::ImageSize& size, const std::string& name, const std::string& out_dir,
                 const std::string& lora) {
  const std::string r = record(prompt, 0, size, name, out_dir) + (lora.empty() ? "" : '\xff' + lora);
  return mix(fnv1a(r, 0x1f0e3d5c7b9a8f6eull));  // a basis of its own: never seed 0's content key
}

}  // namespace rgbaq::jobs
