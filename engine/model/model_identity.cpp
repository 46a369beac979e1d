#include "engine/model/model_identity.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

namespace rgbaq::engine {
namespace {

constexpr size_t kSample = 64 * 1024;

class Hasher {
 public:
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ull;
  }
  void add(const std::string& s) { add(s.data(), s.size()); }
  void add_file(const std::filesystem::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      add(path.filename().string() + ":missing");
      return;
    }
    const auto size = static_cast<uintmax_t>(st.st_size);
    // Size and modification time as well as sampled bytes: a file rewritten in the middle (same size,
    // same ends) still changes the identity, so a changed model is a new model at the next open.
    add(path.filename().string() + ":" + std::to_string(size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
        std::to_string(st.st_mtim.tv_nsec));
    std::ifstream in(path, std::ios::binary);
    std::vector<char> buf(kSample);
    in.read(buf.data(), static_cast<std::streamsize>(std::min<uintmax_t>(size, kSample)));
    add(buf.data(), static_cast<size_t>(in.gcount()));
    if (size > 2 * kSample) {
      in.seekg(static_cast<std::streamoff>(size - kSample));
      in.read(buf.data(), static_cast<std::streamsize>(kSample));
      add(buf.data(), static_cast<size_t>(in.gcount()));
    }
  }
  void add_component(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const auto name = e.path().filename().string();
      if (name.ends_with(".json") || name.ends_with(".safetensors")) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) add_file(f);
  }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace

std::string text_encoder_identity(const std::filesystem::path& model_dir, const ComponentFiles& files) {
  Hasher h;
  if (!files.text_encoder.empty()) {
    h.add("text_encoder file:");
    h.add_file(files.text_encoder);
    if (!model_dir.empty()) h.add_file(model_dir / "text_encoder" / "config.json");  // the dimensions it is read with
  } else {
    h.add_component(model_dir / "text_encoder");
  }
  return h.hex();
}

std::string model_identity(const std::filesystem::path& model_dir, const ComponentFiles& files,
                           const std::filesystem::path& tokenizer_json) {
  Hasher h;
  if (model_dir.empty() && !tokenizer_json.empty()) {
    h.add("tokenizer file:");
    h.add_file(tokenizer_json);
  }
  if (!model_dir.empty()) {
    h.add_file(model_dir / "model_index.json");
    // The published pipelines keep the tokenizer under processor/ (hashed by file name, so either folder
    // gives the same identity for the same file).
    const auto processor_tokenizer = model_dir / "processor" / "tokenizer.json";
    h.add_file(std::filesystem::exists(processor_tokenizer) ? processor_tokenizer : model_dir / "tokenizer" / "tokenizer.json");
  }
  for (const char* c : {"text_encoder", "transformer", "vae", "scheduler"}) {
    const std::filesystem::path& file = files.for_role(c);
    if (file.empty()) {
      if (!model_dir.empty()) h.add_component(model_dir / c);
      continue;
    }
    h.add(std::string(c) + " file:");  // a file in the folder's place: never the same stream as a folder
    h.add_file(file);
    if (!model_dir.empty()) h.add_file(model_dir / c / "config.json");
  }
  return h.hex();
}

std::string file_identity(const std::filesystem::path& file) {
  Hasher h;
  h.add_file(file);
  return h.hex();
}

}  // namespace rgbaq::engine
