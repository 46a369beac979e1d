#pragma once
// Reads an HF tokenizer.json quickly: the vocabulary and the merges (almost all of the 11 MB) stream
// straight into vectors through nlohmann's SAX interface; everything else becomes a small DOM.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rgbaq::tokenizer {

struct TokenizerJson {
  nlohmann::json rest;  // the document with model.vocab and model.merges left out
  std::vector<std::pair<std::string, int32_t>> vocab;          // spelling -> id, in file order
  std::vector<std::pair<std::string, std::string>> merges;     // by rank
  bool has_vocab = false;
};

// Throws std::runtime_error naming `source` and what is malformed (not JSON, a vocabulary id that is
// not an integer, a merge that is neither "a b" nor ["a", "b"]).
TokenizerJson read_tokenizer_json(std::string_view text, const std::string& source);

}  // namespace rgbaq::tokenizer
