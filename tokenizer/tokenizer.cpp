#include "tokenizer/tokenizer.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "tokenizer/qwen2_split.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/unicode_text.h"

namespace rgbaq::tokenizer {
namespace {

using nlohmann::json;

// The real Qwen3 tokenizer.json is 11.4 MB of about 606,000 values (vocab and merges, which the reader
// collects without a DOM) nesting 5 deep: about three times that, and no deeper than a protocol frame.
constexpr common::JsonLimits kTokenizerJsonLimits{32u << 20, 64, 2u << 20};

[[noreturn]] void unsupported(const std::string& source, const std::string& what) {
  throw std::runtime_error(source + ": unsupported tokenizer feature: " + what);
}

std::string type_of(const json& node) {
  const auto it = node.find("type");
  return it != node.end() && it->is_string() ? it->get<std::string>() : "(no type)";
}

// A flag that must hold `expected` (absent or null counts as the library default, `expected`).
void require_flag(const std::string& source, const json& node, const char* where, const char* key, bool expected) {
  const auto it = node.find(key);
  if (it == node.end() || it->is_null()) return;
  if (!it->is_boolean() || it->get<bool>() != expected) {
    unsupported(source, std::string(where) + "." + key + " = " + it->dump());
  }
}

void check_normalizer(const std::string& source, const json& n) {
  if (n.is_null()) throw std::runtime_error(source + ": normalizer is null; this tokenizer needs NFC");
  if (type_of(n) != "NFC") unsupported(source, "normalizer " + type_of(n) + " (only NFC is implemented)");
}

void check_byte_level(const std::string& source, const json& node, const char* where) {
  require_flag(source, node, where, "add_prefix_space", false);
  require_flag(source, node, where, "use_regex", false);
}

void check_pre_tokenizer(const std::string& source, const json& p) {
  if (type_of(p) != "Sequence" || !p.contains("pretokenizers") || p["pretokenizers"].size() != 2) {
    unsupported(source, "pre_tokenizer " + type_of(p) + " (expected Sequence[Split, ByteLevel])");
  }
  const json& split = p["pretokenizers"][0];
  const json& byte_level = p["pretokenizers"][1];
  if (type_of(split) != "Split") unsupported(source, "pre_tokenizer[0] " + type_of(split) + " (expected Split)");
  const auto pattern = split.value("/pattern/Regex"_json_pointer, std::string());
  if (pattern != kQwen2SplitPattern) unsupported(source, "Split pattern " + split["pattern"].dump());
  if (split.value("behavior", std::string()) != "Isolated") {
    unsupported(source, "Split behavior " + split.value("behavior", std::string("(none)")));
  }
  require_flag(source, split, "pre_tokenizer[0]", "invert", false);
  if (type_of(byte_level) != "ByteLevel") {
    unsupported(source, "pre_tokenizer[1] " + type_of(byte_level) + " (expected ByteLevel)");
  }
  check_byte_level(source, byte_level, "pre_tokenizer[1]");
}

void check_model_options(const std::string& source, const json& m) {
  if (type_of(m) != "BPE") unsupported(source, "model type " + type_of(m) + " (only BPE is implemented)");
  for (const char* key : {"dropout", "unk_token"}) {
    if (m.contains(key) && !m[key].is_null()) unsupported(source, std::string("model.") + key + " = " + m[key].dump());
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (m.contains(key) && !m[key].is_null() && m[key] != "") {
      unsupported(source, std::string("model.") + key + " = " + m[key].dump());
    }
  }
  for (const char* key : {"fuse_unk", "byte_fallback", "ignore_merges"}) require_flag(source, m, "model", key, false);
}

std::vector<AddedToken> read_added_tokens(const std::string& source, const json& added) {
  std::vector<AddedToken> out;
  if (added.is_null()) return out;
  for (size_t i = 0; i < added.size(); ++i) {
    const json& a = added[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    for (const char* key : {"single_word", "lstrip", "rstrip", "normalized"}) {
      require_flag(source, a, where.c_str(), key, false);
    }
    if (!a.contains("content") || !a["content"].is_string() || !a.contains("id") || !a["id"].is_number_integer()) {
      throw std::runtime_error(source + ": " + where + " needs a string content and an integer id");
    }
    out.push_back({a["content"].get<std::string>(), a["id"].get<int32_t>(), a.value("special", false)});
  }
  return out;
}

}  // namespace

Tokenizer::Tokenizer(std::string source, std::unique_ptr<BpeModel> model, AddedTokens added)
    : source_(std::move(source)), model_(std::move(model)), added_(std::move(added)) {}

Tokenizer Tokenizer::from_file(const std::filesystem::path& path) {
  return from_json(common::read_json_file(path, kTokenizerJsonLimits), path.string());
}

Tokenizer Tokenizer::from_json(std::string_view json_text, const std::string& source) {
  common::check_json_limits(json_text, kTokenizerJsonLimits, source);
  TokenizerJson parsed = read_tokenizer_json(json_text, source);
  const json& doc = parsed.rest;
  try {
    if (!doc.is_object()) throw std::runtime_error(source + ": not a JSON object");
    for (const char* key : {"truncation", "padding"}) {
      if (doc.contains(key) && !doc[key].is_null()) unsupported(source, std::string(key) + " = " + doc[key].dump());
    }
    check_normalizer(source, doc.value("normalizer", json()));
    check_pre_tokenizer(source, doc.value("pre_tokenizer", json()));
    for (const char* key : {"decoder", "post_processor"}) {
      const json node = doc.value(key, json());
      if (node.is_null()) continue;
      if (type_of(node) != "ByteLevel") unsupported(source, std::string(key) + " " + type_of(node));
      check_byte_level(source, node, key);
    }
    if (!doc.contains("model")) throw std::runtime_error(source + ": no model");
    const json& m = doc["model"];
    check_model_options(source, m);
    if (!parsed.has_vocab) throw std::runtime_error(source + ": model.vocab is missing");
    auto model = std::make_unique<BpeModel>(parsed.vocab, parsed.merges);
    return Tokenizer(source, std::move(model), AddedTokens(read_added_tokens(source, doc.value("added_tokens", json()))));
  } catch (const json::exception& e) {
    throw std::runtime_error(source + ": malformed tokenizer.json: " + e.what());
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (what.rfind(source, 0) == 0) throw;
    throw std::runtime_error(source + ": " + what);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  validate_utf8(text);
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  added_.split(
      text,
      [&](std::string_view segment) {
        const std::string normalized = nfc(segment);
        qwen2_split(normalized, [&](std::string_view piece) { model_->encode_word(piece, ids); });
      },
      [&](const AddedToken& token) { ids.push_back(token.id); });
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (const int32_t id : ids) {
    if (const auto* added = added_.find_by_id(id)) {
      out += added->content;
    } else if (const auto* bytes = model_->bytes_of(id)) {
      out += *bytes;
    } else {
      throw std::invalid_argument("token id " + std::to_string(id) + " is not in the vocabulary of " + source_);
    }
  }
  return out;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view content) const {
  if (const auto* added = added_.find_by_content(content)) return added->id;
  const int32_t id = model_->id_of(content);
  return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
}

int32_t Tokenizer::id_limit() const {
  int32_t limit = static_cast<int32_t>(model_->vocab_size());
  for (const auto& t : added_.all()) limit = std::max(limit, t.id + 1);
  return limit;
}

}  // namespace rgbaq::tokenizer
