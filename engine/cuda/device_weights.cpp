#include "engine/cuda/device_weights.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/w8a8_plan.h"
#include "engine/model/dtype.h"
#include "engine/model/int8_blocks.h"

namespace rgbaq::engine::cuda {

std::vector<uint8_t> host_bytes(const std::vector<float>& values, ElementType type) {
  std::vector<uint8_t> bytes(values.size() * element_size(type));
  if (type == ElementType::kF32) {
    std::memcpy(bytes.data(), values.data(), bytes.size());
  } else {
    auto* out = reinterpret_cast<uint16_t*>(bytes.data());
    for (size_t i = 0; i < values.size(); ++i) out[i] = f32_to_bf16(values[i]);
  }
  return bytes;
}

std::vector<uint8_t> raw_bytes(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data());
  return {p, p + t.nbytes()};
}

std::vector<uint8_t> host_bytes(const Tensor& t, ElementType type) {
  if (type == ElementType::kBf16 && t.dtype() == DType::kBF16) return raw_bytes(t);
  return host_bytes(t.to_f32_vector(), type);
}

DeviceBuffer upload(DeviceArena& arena, const std::vector<uint8_t>& bytes, const std::string& what) {
  DeviceBuffer b = arena.allocate(bytes.size(), what);
  check(cudaMemcpy(b.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), arena.device(),
        ("cudaMemcpy of " + what).c_str());
  // A pageable cudaMemcpy may return before its DMA has landed, and it runs on the legacy default
  // stream, which the session's non-blocking streams do not wait for: finish it before any kernel reads.
  check(cudaStreamSynchronize(nullptr), arena.device(), ("cudaMemcpy of " + what + " (waiting for it)").c_str());
  return b;
}

DeviceBuffer upload(DeviceArena& arena, const Tensor& t, ElementType type, const std::string& what) {
  return upload(arena, host_bytes(t, type), what);
}

DeviceBuffer upload(DeviceArena& arena, const std::vector<float>& values, ElementType type, const std::string& what) {
  return upload(arena, host_bytes(values, type), what);
}

DeviceBuffer WeightSource::made(int64_t n, ElementType type, float scale, float centre, const std::string& what) {
  DeviceBuffer b = arena_.allocate(static_cast<size_t>(n) * element_size(type), what);
  fill_random(b.get(), type, n, seed_++ * 0x100000001b3ull, scale, centre, stream_);
  check_launch(arena_.device(), "fill_random");
  return b;
}

DeviceBuffer WeightSource::matrix(const Tensor* host, int64_t out, int64_t in, const std::string& what) {
  if (random_) return counted(made(out * in, type_, 1.0f / std::sqrt(static_cast<float>(in)), 0.0f, what));
  return counted(upload(arena_, *host, type_, what));
}

DeviceBuffer WeightSource::matrix(const std::vector<float>* host, int64_t out, int64_t in, const std::string& what) {
  if (random_) return counted(made(out * in, type_, 1.0f / std::sqrt(static_cast<float>(in)), 0.0f, what));
  return counted(upload(arena_, *host, type_, what));
}

DeviceBuffer WeightSource::vector(const std::vector<float>* host, int64_t n, const std::string& what, float centre) {
  if (random_) return counted(made(n, ElementType::kF32, 0.1f, centre, what));
  return counted(upload(arena_, *host, ElementType::kF32, what));
}

DeviceLinear WeightSource::linear(const Tensor* host, int64_t out, int64_t in, bool block, const std::string& what) {
  DeviceLinear l;
  if (!host && !random_) throw std::logic_error("WeightSource::linear: no host weights for " + what);
  l.format = format_of(host, block);
  switch (l.format) {
    case LinearFormat::kDense:
      l.values = matrix(host, out, in, what);
      break;
    case LinearFormat::kInt8Blocks: {
      const int64_t scales = out * int8_scale_columns(in);
      if (random_) {
        // Values uniform in [-127, 127] at one scale: q * s uniform in +-1/sqrt(in), as a dense random Linear.
        l.values = arena_.allocate(static_cast<size_t>(out * in), what);
        fill_random_int8(l.values.as<int8_t>(), out * in, seed_++ * 0x100000001b3ull, stream_);
        l.scales = made(scales, ElementType::kBf16, 0.0f, 1.0f / (127.0f * std::sqrt(static_cast<float>(in))), what + " scales");
        check_launch(arena_.device(), "fill_random_int8");
      } else {
        l.values = upload(arena_, raw_bytes(*host), what);
        l.scales = upload(arena_, raw_bytes(*host->block_scales()), what + " scales");
      }
      weight_bytes_ += l.values.bytes() + l.scales.bytes();
      break;
    }
    case LinearFormat::kFp8Rows:
      check_fp8_shape(out, in, what);
      fp8_rows(host, out, in, l, what);
      break;
    case LinearFormat::kInt8ConvRot:
      l.group = host->convrot_group();  // a ConvRot format comes only from a host tensor (format_of)
      check_w8a8_shape(out, in, l.group, what);
      if (random_) {
        // As int8 blocks' random values: q s uniform in +-1/sqrt(in) (R keeps the spread).
        l.values = arena_.allocate(static_cast<size_t>(out * in), what);
        fill_random_int8(l.values.as<int8_t>(), out * in, seed_++ * 0x100000001b3ull, stream_);
        l.scales = made(out, ElementType::kF32, 0.0f, 1.0f / (127.0f * std::sqrt(static_cast<float>(in))), what + " scales");
        check_launch(arena_.device(), "fill_random_int8");
      } else {
        l.values = upload(arena_, raw_bytes(*host), what);
        l.scales = upload(arena_, raw_bytes(*host->scales()), what + " scales");
      }
      weight_bytes_ += l.values.bytes() + l.scales.bytes();
      break;
  }
  return l;
}

DeviceLinear WeightSource::stacked_linear(const std::vector<const Tensor*>& hosts, int64_t out, int64_t in, bool block,
                                          const std::string& what) {
  std::vector<LinearFormat> formats;
  for (const Tensor* h : hosts) formats.push_back(format_of(h, block));
  require_one_format(formats, what);
  std::vector<DeviceLinear> each;
  for (const Tensor* h : hosts) each.push_back(linear(h, out, in, block, what));
  DeviceLinear stack;
  stack.format = formats.front();
  stack.group = each.front().group;
  for (const DeviceLinear& l : each) {
    if (l.group != stack.group) {
      throw std::invalid_argument(what + ": --fused-blocks makes these ConvRot Linears one GEMM, so they must share a group, but "
                                  "they have " + std::to_string(stack.group) + " and " + std::to_string(l.group) +
                                  " (or --fused-blocks off)");
    }
  }
  const auto fill = [&](DeviceBuffer DeviceLinear::*part, const std::string& name) {
    const size_t bytes = (each.front().*part).bytes();
    if (bytes == 0) return;
    stack.*part = arena_.allocate(bytes * each.size(), name);
    for (size_t i = 0; i < each.size(); ++i) {
      check(cudaMemcpyAsync(static_cast<char*>((stack.*part).get()) + i * bytes, (each[i].*part).get(), bytes,
                            cudaMemcpyDeviceToDevice, stream_),
            arena_.device(), ("stacking " + name).c_str());
    }
  };
  fill(&DeviceLinear::values, what);
  fill(&DeviceLinear::scales, what + " scales");
  // `each` goes when this returns: the copies that read it must be done. Its bytes were counted once.
  check(cudaStreamSynchronize(stream_), arena_.device(), ("stacking " + what).c_str());
  return stack;
}

// The stored values go up as they are (bf16, fp32; f16 widened; int8 with its scales, dequantized there
// to the exact fp32 q * s; FP8-scaled files' codes and scales as stored, no kernel), then one kernel writes each row's codes and scale: the same math as the
// host's fp8::quantize_rows on to_f32_vector(), so streamed and resident fp8 weights are the same bytes.
void WeightSource::fp8_rows(const Tensor* host, int64_t out, int64_t in, DeviceLinear& l, const std::string& what) {
  if (!random_ && host->quant() == WeightQuant::kFp8Scaled) {
    // A ComfyUI FP8-scaled file's codes go up as stored, its scale (one per tensor, or one a row) as one
    // per row: no second rounding.
    const Tensor& stored = *host->scales();
    std::vector<float> row_scales(static_cast<size_t>(out));
    for (int64_t r = 0; r < out; ++r) row_scales[static_cast<size_t>(r)] = stored.f32()[stored.numel() == 1 ? 0 : r];
    l.values = upload(arena_, raw_bytes(*host), what + " (fp8 as stored)");
    l.scales = upload(arena_, row_scales, ElementType::kF32, what + " (fp8 row scales)");
    weight_bytes_ += l.values.bytes() + l.scales.bytes();
    return;
  }
  l.values = arena_.allocate(static_cast<size_t>(out * in), what + " (fp8)");
  l.scales = arena_.allocate(static_cast<size_t>(out) * sizeof(float), what + " (fp8 row scales)");
  DeviceBuffer source, q, q_scales;
  ElementType source_type = ElementType::kF32;
  if (random_) {
    source = made(out * in, ElementType::kBf16, 1.0f / std::sqrt(static_cast<float>(in)), 0.0f, what + " (before fp8)");
    source_type = ElementType::kBf16;
  } else if (const Tensor* scales = host->block_scales()) {
    q = upload(arena_, raw_bytes(*host), what + " (int8, before fp8)");
    q_scales = upload(arena_, raw_bytes(*scales), what + " (int8 scales, before fp8)");
    source = arena_.allocate(static_cast<size_t>(out * in) * sizeof(float), what + " (before fp8)");
    dequantize_int8(q.as<int8_t>(), q_scales.as<uint16_t>(), out, in, source.get(), ElementType::kF32, stream_);
  } else {
    source_type = host->dtype() == DType::kBF16 ? ElementType::kBf16 : ElementType::kF32;
    source = upload(arena_, *host, source_type, what + " (before fp8)");
  }
  quantize_fp8_rows(source.get(), source_type, out, in, l.values.as<uint8_t>(), l.scales.as<float>(), stream_);
  check_launch(arena_.device(), "quantize_fp8_rows (weights)");
  // The temporaries go when this returns: the kernels that read them must be done.
  check(cudaStreamSynchronize(stream_), arena_.device(), ("making " + what + " fp8").c_str());
  weight_bytes_ += l.values.bytes() + l.scales.bytes();
}

}  // namespace rgbaq::engine::cuda
