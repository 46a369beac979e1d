#include "engine/cuda/cuda_text_encoder.h"

#include <cmath>

#include "engine/cuda/attention.h"
#include "engine/cuda/attention_plan.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/flash_attention.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/workspace_plan.h"

namespace rgbaq::engine::cuda {
CudaTextEncoder::CudaTextEncoder(const TextEncoderConfig& c, const cpu::TextEncoder* e, WeightSource& source,
                                 LinearRunner& linears, cudaStream_t stream, bool fused_attention)
    : config_(c), arena_(source.arena()), linears_(linears), gemm_(linears.gemm()), stream_(stream), type_(source.type()),
      fused_attention_(fused_attention) {
  if (fused_attention) {
    AttentionArgs shape;
    shape.ldq = shape.ldo = int64_t{c.heads} * c.head_dim, shape.ldk = shape.ldv = int64_t{c.kv_heads} * c.head_dim;
    shape.q_heads = c.heads, shape.kv_heads = c.kv_heads, shape.head_dim = c.head_dim;
    require_fused_attention(shape, type_, "the text encoder");
  }
  const int64_t h = c.hidden, q_dim = int64_t{c.heads} * c.head_dim, kv_dim = int64_t{c.kv_heads} * c.head_dim, inter = c.intermediate;
  embed_ = source.matrix(e ? &e->embedding() : nullptr, c.vocab, h, "text encoder embed_tokens");
  for (int i = 0; i < c.layers; ++i) {
    const cpu::TextEncoder::Layer* l = e ? &e->layers()[i] : nullptr;
    const std::string name = "text encoder layer " + std::to_string(i);
    Layer d;
    d.input_norm = source.vector(l ? &l->input_norm : nullptr, h, name);
    d.post_norm = source.vector(l ? &l->post_norm : nullptr, h, name);
    d.q_norm = source.vector(l ? &l->q_norm : nullptr, c.head_dim, name);
    d.k_norm = source.vector(l ? &l->k_norm : nullptr, c.head_dim, name);
    d.q = source.linear(l ? &l->q : nullptr, q_dim, h, true, name);
    d.k = source.linear(l ? &l->k : nullptr, kv_dim, h, true, name);
    d.v = source.linear(l ? &l->v : nullptr, kv_dim, h, true, name);
    d.o = source.linear(l ? &l->o : nullptr, h, q_dim, true, name);
    d.gate = source.linear(l ? &l->gate : nullptr, inter, h, true, name);
    d.up = source.linear(l ? &l->up : nullptr, inter, h, true, name);
    d.down = source.linear(l ? &l->down : nullptr, h, inter, true, name);
    layers_.push_back(std::move(d));
  }
  RGBAQ_CUDA_CHECK(cudaStreamSynchronize(stream_), arena_.device());
}

// The plan's buffers for `tokens` (workspace_plan.h), kept for the next prompt. Query chunks keep the
// scores linear in Lfull (heads x n x n would be quadratic).
void CudaTextEncoder::ensure_work(int64_t tokens) {
  const auto plan = encoder_workspace(config_, static_cast<int64_t>(element_size(type_)), tokens, fused_attention_);
  if (plan.size() != 14) throw std::logic_error("CudaTextEncoder: the workspace plan has another shape");
  work_.resize(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) arena_.ensure(work_[i], static_cast<size_t>(plan[i].bytes), plan[i].what);
}

void CudaTextEncoder::reserve(int64_t tokens) { ensure_work(tokens); }

Tensor CudaTextEncoder::encode(std::span<const int32_t> ids) {
  const int64_t n = static_cast<int64_t>(ids.size()), h = config_.hidden, d = config_.head_dim;
  const int64_t q_dim = int64_t{config_.heads} * d, kv_dim = int64_t{config_.kv_heads} * d, inter = config_.intermediate;
  const float eps = static_cast<float>(config_.rms_eps);
  const int device = arena_.device();
  const int64_t f = sizeof(float);
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= config_.vocab) {
      throw std::invalid_argument("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                  " is outside the encoder's vocabulary of " + std::to_string(config_.vocab));
    }
  }
  std::vector<float> cos, sin;
  cpu::rotate_half_rope_tables(n, config_, cos, sin);  // the CPU backend's tables, bit for bit
  ensure_work(n);
  std::vector<DeviceBuffer>& b = work_;
  DeviceBuffer &ids_d = b[0], &cos_d = b[1], &sin_d = b[2], &x = b[3], &normed = b[4], &proj = b[5], &q = b[6], &k = b[7],
               &v = b[8], &attn = b[9], &up = b[10], &mlp = b[11], &scores = b[12], &probs = b[13];
  const int64_t score_elements = attention_score_elements(config_.heads, n, n, kEncoderScoreBudget);
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(ids_d.get(), ids.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice, stream_), device);
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(cos_d.get(), cos.data(), cos.size() * f, cudaMemcpyHostToDevice, stream_), device);
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(sin_d.get(), sin.data(), sin.size() * f, cudaMemcpyHostToDevice, stream_), device);
  embed_rows(embed_.get(), type_, ids_d.as<int32_t>(), n, h, x.as<float>(), stream_);
  AttentionArgs a;
  a.q = q.get(), a.k = k.get(), a.v = v.get(), a.out = attn.as<float>();
  a.ldq = a.ldo = q_dim, a.ldk = a.ldv = kv_dim;
  a.q_rows = a.kv_rows = a.causal_rows = n;
  a.q_heads = config_.heads, a.kv_heads = config_.kv_heads, a.head_dim = static_cast<int>(d);
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  for (const Layer& l : layers_) {
    rms_norm(x.as<float>(), n, h, l.input_norm.as<float>(), 0.0f, eps, normed.get(), type_, stream_);
    linears_.run(l.q.view(), normed.get(), n, q_dim, h, proj.as<float>());
    head_norm_rope(proj.as<float>(), q_dim, n, config_.heads, static_cast<int>(d), l.q_norm.as<float>(), eps, cos_d.as<float>(),
                   sin_d.as<float>(), false, q.get(), q_dim, type_, stream_);
    linears_.run(l.k.view(), normed.get(), n, kv_dim, h, proj.as<float>());
    head_norm_rope(proj.as<float>(), kv_dim, n, config_.kv_heads, static_cast<int>(d), l.k_norm.as<float>(), eps,
                   cos_d.as<float>(), sin_d.as<float>(), false, k.get(), kv_dim, type_, stream_);
    linears_.run(l.v.view(), normed.get(), n, kv_dim, h, proj.as<float>());
    convert(proj.as<float>(), n * kv_dim, v.get(), type_, stream_);
    if (fused_attention_) {
      a.out_bf16 = mlp.get();  // straight into o_proj's input
      flash_attention(a, stream_);
    } else {
      attention(gemm_, type_, a, {scores.as<float>(), probs.get(), score_elements}, stream_);
      convert(attn.as<float>(), n * q_dim, mlp.get(), type_, stream_);
    }
    linears_.run(l.o.view(), mlp.get(), n, h, q_dim, x.as<float>(), 1.0f);  // x += o_proj(attention)
    rms_norm(x.as<float>(), n, h, l.post_norm.as<float>(), 0.0f, eps, normed.get(), type_, stream_);
    linears_.run(l.gate.view(), normed.get(), n, inter, h, proj.as<float>());
    linears_.run(l.up.view(), normed.get(), n, inter, h, up.as<float>());
    swiglu(proj.as<float>(), up.as<float>(), n * inter, mlp.get(), type_, stream_);
    linears_.run(l.down.view(), mlp.get(), n, h, inter, x.as<float>(), 1.0f);  // x += down_proj(...)
    check_launch(device, "a text encoder layer's kernels");
  }
  Tensor out = Tensor::zeros(DType::kF32, {n, h});
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(out.mutable_f32(), x.get(), out.nbytes(), cudaMemcpyDeviceToHost, stream_), device);
  RGBAQ_CUDA_CHECK(cudaStreamSynchronize(stream_), device);
  return out;
}

}  // namespace rgbaq::engine::cuda
