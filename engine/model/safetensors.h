#pragma once
// The safetensors format: an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the data. Model files are memory-mapped (open); user files that may
// change under the daemon, LoRAs, are read into memory (read). Every offset is checked before a byte is
// read, so a truncated or corrupt file is an error naming the file and the tensor, never an
// out-of-bounds read. The header is bounded (16 MiB, 8 levels, 262,144 values) before it is parsed.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/tensor.h"

namespace rgbaq::engine {

class SafetensorsFile {
 public:
  // Throws std::runtime_error naming the file (and tensor) when it is unreadable, truncated, or its
  // header is malformed: length past the end, bad JSON, unknown dtype, a byte range that does not match
  // the shape, lies outside the data section, or overlaps another tensor.
  static SafetensorsFile open(const std::filesystem::path& path);
  // As open, from a private copy read with pread: a file truncated or rewritten while it is read (as
  // `curl -o` rewrites in place) is an error, never a SIGBUS, and the tensors and data_section() are
  // the bytes of one read. A file over `max_bytes` is refused before it is read.
  static SafetensorsFile read(const std::filesystem::path& path, uint64_t max_bytes);

  const std::filesystem::path& path() const { return path_; }
  bool contains(const std::string& name) const { return entries_.count(name) > 0; }
  std::vector<std::string> names() const;
  // A view into the mapping (F32 data that is not 4-byte aligned is copied). Throws when absent.
  Tensor tensor(const std::string& name) const;
  // The bytes after the header (what AUTOMATIC1111 hashes to name a LoRA file).
  const uint8_t* data_section() const { return data_; }
  // The header's "__metadata__" string values (ComfyUI keeps `_quantization_metadata` there). The
  // format says string to string; other values (some LoRA trainers write them) are left out here.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  size_t data_section_size() const { return data_size_; }

 private:
  static SafetensorsFile parse(const std::filesystem::path& path, const uint8_t* bytes, uint64_t size,
                               std::shared_ptr<const void> keep_alive);

  struct Entry {
    DType dtype;
    Shape shape;
    size_t begin, end;  // within the data section
  };
  std::filesystem::path path_;
  std::shared_ptr<const void> mapping_;  // the mapping or the copy: goes when the last tensor view does
  const uint8_t* data_ = nullptr;        // start of the data section
  size_t data_size_ = 0;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Writes tensors (any DType), their data widest element type first so each starts aligned (in the given
// order within a type), the header padded to 8 bytes, atomically (a temporary
// file renamed into place); `metadata`, when not empty, becomes the header's "__metadata__".
// hollow: only the header is written and the data is a hole in the file (it reads as zeros and takes no
// disk): benchmark checkpoints at real size whose values come from elsewhere (--random-weights).
void write_safetensors(const std::filesystem::path& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       bool hollow = false);
void write_safetensors(const std::filesystem::path& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata, bool hollow = false);

}  // namespace rgbaq::engine
