#include "engine/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/json_limits.h"

namespace rgbaq::engine {
namespace {

using nlohmann::json;

// A real header is a flat object of tensor entries, nesting 3 deep (file, entry, shape) with ~8 values an
// entry: the real model's largest, its text encoder's, is 52,658 bytes for the tensors rgbaq reads
// (tests/engine/safetensors_limits_test.cpp works it out from the weight schema), about twice that
// with the vision tower the published file also holds. The bounds leave ~100 times that for LoRA
// metadata (kohya's tag counts, thumbnails) and keep the costliest header within them at ~40 MiB of
// parse (measured): refused before the parser sees it, as protocol frames are.
constexpr common::JsonLimits kHeaderLimits{16u << 20, 8, 1u << 18};

struct Mapping {
  void* address = nullptr;
  size_t length = 0;
  ~Mapping() {
    if (address && length) munmap(address, length);
  }
};

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": " + what);
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(path, std::strerror(e));
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  auto mapping = std::make_shared<Mapping>();
  if (size > 0) {
    mapping->address = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping->address == MAP_FAILED) {
      mapping->address = nullptr;
      const int e = errno;
      ::close(fd);
      fail(path, std::string("mmap failed: ") + std::strerror(e));
    }
    mapping->length = size;
  }
  ::close(fd);
  return parse(path, static_cast<const uint8_t*>(mapping->address), size, std::shared_ptr<const void>(mapping, mapping->address));
}

SafetensorsFile SafetensorsFile::read(const std::filesystem::path& path, uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat before {};
  if (fstat(fd, &before) != 0) fail(path, std::strerror(errno));
  if (!S_ISREG(before.st_mode)) fail(path, "is not a regular file");
  const auto size = static_cast<uint64_t>(before.st_size);
  if (size > max_bytes) {
    fail(path, "is " + std::to_string(size) + " bytes, over the " + std::to_string(max_bytes) + " read into memory at most");
  }
  auto buffer = std::make_shared<std::vector<uint8_t>>(size);
  for (uint64_t got = 0; got < size;) {
    const ssize_t n = ::pread(fd, buffer->data() + got, size - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(path, std::string("read failed: ") + std::strerror(errno));
    if (n == 0) fail(path, "shrank from " + std::to_string(size) + " to " + std::to_string(got) + " bytes while being read (rewritten meanwhile?)");
    got += static_cast<uint64_t>(n);
  }
  struct stat after {};
  if (fstat(fd, &after) != 0) fail(path, std::strerror(errno));
  if (after.st_size != before.st_size || after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
      after.st_mtim.tv_nsec != before.st_mtim.tv_nsec) {
    fail(path, "changed while being read (rewritten meanwhile?)");
  }
  const uint8_t* bytes = buffer->data();
  return parse(path, bytes, size, std::shared_ptr<const void>(buffer, bytes));
}

SafetensorsFile SafetensorsFile::parse(const std::filesystem::path& path, const uint8_t* bytes, uint64_t size,
                                       std::shared_ptr<const void> keep_alive) {
  SafetensorsFile file;
  file.path_ = path;
  if (size < 8) fail(path, "file is " + std::to_string(size) + " bytes, too short for a safetensors header");
  const uint64_t header_len = read_u64_le(bytes);
  if (header_len > size - 8) {
    fail(path, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                   std::to_string(size) + " bytes)");
  }
  const std::string_view header_text(reinterpret_cast<const char*>(bytes + 8), header_len);
  try {
    common::check_json_limits(header_text, kHeaderLimits, "header");
  } catch (const std::runtime_error& e) {
    fail(path, e.what());
  }
  json header;
  try {
    header = json::parse(header_text);
  } catch (const json::exception& e) {
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  const uint64_t data_size = size - 8 - header_len;
  std::vector<std::pair<size_t, std::string>> by_begin;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) fail(path, "__metadata__ is not an object");
      for (const auto& [key, value] : info.items()) {
        if (value.is_string()) file.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor \"" + name + "\"";
    if (!info.is_object()) fail(path, where + ": header entry is not an object");
    const auto dtype_it = info.find("dtype");
    const auto shape_it = info.find("shape");
    const auto offsets_it = info.find("data_offsets");
    if (dtype_it == info.end() || !dtype_it->is_string() || shape_it == info.end() || !shape_it->is_array() ||
        offsets_it == info.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
      fail(path, where + ": needs dtype, shape and data_offsets [begin, end]");
    }
    const auto dtype = parse_dtype(dtype_it->get<std::string>());
    if (!dtype) fail(path, where + ": dtype " + dtype_it->get<std::string>() + " is not supported (F32, BF16, F16, I8, F8_E4M3, U8)");
    Entry e{*dtype, {}, 0, 0};
    uint64_t numel = 1;
    for (const auto& d : *shape_it) {
      if (!d.is_number_unsigned()) fail(path, where + ": shape " + shape_it->dump() + " is not a list of sizes");
      const uint64_t v = d.get<uint64_t>();
      if (v > (1ull << 40) || (v && numel > (1ull << 40) / v)) fail(path, where + ": shape " + shape_it->dump() + " is too large");
      numel *= v;
      e.shape.push_back(static_cast<int64_t>(v));
    }
    for (const auto& o : *offsets_it) {
      if (!o.is_number_unsigned()) fail(path, where + ": data_offsets " + offsets_it->dump() + " are not byte offsets");
    }
    const uint64_t begin = (*offsets_it)[0].get<uint64_t>(), end = (*offsets_it)[1].get<uint64_t>();
    if (end < begin || end - begin != numel * dtype_size(*dtype)) {
      fail(path, where + ": data_offsets " + offsets_it->dump() + " hold " + std::to_string(end - begin) +
                     " bytes; shape " + shape_string(e.shape) + " of " + std::string(dtype_name(*dtype)) + " needs " +
                     std::to_string(numel * dtype_size(*dtype)));
    }
    if (end > data_size) {
      fail(path, where + ": data_offsets " + offsets_it->dump() + " run past the data section (" +
                     std::to_string(data_size) + " bytes; the file may be truncated)");
    }
    e.begin = begin;
    e.end = end;
    file.entries_.emplace(name, std::move(e));
    by_begin.emplace_back(begin, name);
  }
  std::sort(by_begin.begin(), by_begin.end());
  size_t max_end = 0;
  std::string max_end_name;
  for (const auto& [begin, name] : by_begin) {
    const Entry& cur = file.entries_.at(name);
    if (cur.end == cur.begin) continue;
    if (cur.begin < max_end) fail(path, "tensors \"" + max_end_name + "\" and \"" + name + "\" overlap");
    max_end = cur.end;
    max_end_name = name;
  }
  file.data_ = bytes + 8 + header_len;
  file.data_size_ = data_size;
  file.mapping_ = std::move(keep_alive);
  return file;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

Tensor SafetensorsFile::tensor(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) fail(path_, "no tensor \"" + name + "\"");
  const Entry& e = it->second;
  const uint8_t* p = data_ + e.begin;
  // Element types wider than a byte are read through typed pointers: a file (ours, or one a hostile or
  // careless writer laid out) whose tensor starts off its alignment gets a copy, never a misaligned view.
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(e.dtype) != 0) {
    Tensor copy = Tensor::zeros(e.dtype, e.shape);
    std::memcpy(copy.mutable_data(), p, e.end - e.begin);
    return copy;
  }
  return Tensor::view(e.dtype, e.shape, p, mapping_);
}

void write_safetensors(const std::filesystem::path& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       bool hollow) {
  write_safetensors(path, tensors, {}, hollow);
}

void write_safetensors(const std::filesystem::path& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata, bool hollow) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  // The data in order of element size, widest first (as Python's safetensors lays it out), so every
  // tensor starts aligned for its type after the 8-byte-aligned header, with no gap (readers refuse holes).
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dtype_size(tensors[a].second.dtype()) > dtype_size(tensors[b].second.dtype());
  });
  uint64_t offset = 0;
  for (size_t i : order) {
    const auto& [name, t] = tensors[i];
    header[name] = {{"dtype", dtype_name(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';
  const auto tmp = std::filesystem::path(path.string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(tmp, "cannot create");
    uint8_t len[8];
    uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!hollow) {
      for (size_t i : order) {
        const Tensor& t = tensors[i].second;
        out.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.nbytes()));
      }
    }
    if (!out.flush()) fail(tmp, "write failed");
  }
  if (hollow) std::filesystem::resize_file(tmp, 8 + text.size() + offset);
  std::filesystem::rename(tmp, path);
}

}  // namespace rgbaq::engine
