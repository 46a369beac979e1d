#include "tokenizer/tokenizer_json.h"

#include <stdexcept>

namespace rgbaq::tokenizer {
namespace {

using nlohmann::json;

// Forwards every event to a DOM builder except inside /model/vocab and /model/merges, which it
// collects itself; the DOM gets null in their place.
class Reader {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  Reader(TokenizerJson& out, const std::string& source) : out_(out), source_(source), dom_(out.rest) {}

  bool null() { return scalar([&] { return dom_.null(); }, "null"); }
  bool boolean(bool v) { return scalar([&] { return dom_.boolean(v); }, "a boolean"); }
  bool number_integer(number_integer_t v) { return integer(static_cast<int64_t>(v), [&] { return dom_.number_integer(v); }); }
  bool number_unsigned(number_unsigned_t v) {
    return integer(v > INT64_MAX ? -1 : static_cast<int64_t>(v), [&] { return dom_.number_unsigned(v); });
  }
  bool number_float(number_float_t v, const string_t& s) { return scalar([&] { return dom_.number_float(v, s); }, "a float"); }
  bool binary(binary_t& b) { return scalar([&] { return dom_.binary(b); }, "binary"); }

  bool string(string_t& s) {
    switch (mode_) {
      case Mode::kDom: return dom_.string(s);
      case Mode::kMerges:
        if (depth_ != 1) fail("model.merges[" + std::to_string(out_.merges.size()) + "] is not a string or a pair");
        split_merge(s);
        return true;
      case Mode::kMergePair:
        merge_parts_.push_back(std::move(s));
        return true;
      case Mode::kVocab: fail("model.vocab[\"" + key_ + "\"] is a string, not an integer id");
    }
    return true;
  }

  bool start_object(std::size_t n) {
    if (mode_ != Mode::kDom) fail(where() + " holds an object");
    ++dom_depth_;
    if (entering_ == Mode::kVocab) {
      entering_ = Mode::kDom;
      mode_ = Mode::kVocab;
      out_.has_vocab = true;
      return dom_.null();
    }
    if (entering_ == Mode::kMerges) fail("model.merges is an object, not an array");
    return dom_.start_object(n);
  }

  bool end_object() {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kDom;
      --dom_depth_;
      return true;
    }
    --dom_depth_;
    in_model_ = in_model_ && dom_depth_ >= 2;
    return dom_.end_object();
  }

  bool start_array(std::size_t n) {
    if (entering_ == Mode::kMerges) {
      entering_ = Mode::kDom;
      mode_ = Mode::kMerges;
      depth_ = 1;
      return dom_.null();
    }
    if (mode_ == Mode::kMerges) {
      if (depth_ != 1) fail("model.merges[" + std::to_string(out_.merges.size()) + "] is nested too deep");
      mode_ = Mode::kMergePair;
      depth_ = 2;
      merge_parts_.clear();
      return true;
    }
    if (mode_ != Mode::kDom) fail(where() + " holds an array");
    if (entering_ == Mode::kVocab) fail("model.vocab is an array, not an object");
    ++dom_depth_;
    return dom_.start_array(n);
  }

  bool end_array() {
    if (mode_ == Mode::kMergePair) {
      if (merge_parts_.size() != 2) fail("model.merges[" + std::to_string(out_.merges.size()) + "] is not a pair");
      out_.merges.emplace_back(std::move(merge_parts_[0]), std::move(merge_parts_[1]));
      mode_ = Mode::kMerges;
      depth_ = 1;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kDom;
      return true;
    }
    --dom_depth_;
    return dom_.end_array();
  }

  bool key(string_t& k) {
    if (mode_ == Mode::kVocab) {
      key_ = std::move(k);
      return true;
    }
    // The root object is depth 1, model's object depth 2.
    if (dom_depth_ == 1) in_model_ = (k == "model");
    if (in_model_ && dom_depth_ == 2 && (k == "vocab" || k == "merges")) {
      entering_ = k == "vocab" ? Mode::kVocab : Mode::kMerges;
    }
    return dom_.key(k);
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    throw std::runtime_error(source_ + ": not valid JSON at byte " + std::to_string(position) + ": " + e.what());
  }

 private:
  enum class Mode { kDom, kVocab, kMerges, kMergePair };

  [[noreturn]] void fail(const std::string& what) const { throw std::runtime_error(source_ + ": " + what); }

  std::string where() const {
    return mode_ == Mode::kVocab ? "model.vocab[\"" + key_ + "\"]" : "model.merges[" + std::to_string(out_.merges.size()) + "]";
  }

  template <typename F>
  bool scalar(F&& forward, const char* kind) {
    if (mode_ != Mode::kDom) fail(where() + " is " + kind);
    if (entering_ != Mode::kDom) fail(std::string(entering_ == Mode::kVocab ? "model.vocab" : "model.merges") + " is " + kind);
    return forward();
  }

  template <typename F>
  bool integer(int64_t v, F&& forward) {
    if (mode_ != Mode::kVocab) return scalar(forward, "a number");
    if (v < 0 || v > INT32_MAX) fail("model.vocab[\"" + key_ + "\"] = " + std::to_string(v) + " is not a valid id");
    out_.vocab.emplace_back(std::move(key_), static_cast<int32_t>(v));
    return true;
  }

  void split_merge(const std::string& s) {
    const auto space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
      fail("model.merges[" + std::to_string(out_.merges.size()) + "] \"" + s + "\" is not two tokens separated by one space");
    }
    out_.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
  }

  TokenizerJson& out_;
  const std::string& source_;
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  Mode mode_ = Mode::kDom;
  Mode entering_ = Mode::kDom;  // the next value is model.vocab or model.merges
  int dom_depth_ = 0;
  int depth_ = 0;
  bool in_model_ = false;
  std::string key_;
  std::vector<std::string> merge_parts_;
};

}  // namespace

TokenizerJson read_tokenizer_json(std::string_view text, const std::string& source) {
  TokenizerJson out;
  out.vocab.reserve(160000);
  out.merges.reserve(160000);
  Reader reader(out, source);
  json::sax_parse(text.begin(), text.end(), &reader);
  return out;
}

}  // namespace rgbaq::tokenizer
