#include "engine/cuda/cuda_dit.h"

#include <algorithm>
#include <cmath>

#include "engine/cuda/attention_plan.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/flash_attention.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/workspace_plan.h"
#include "host/contract_limits.h"

namespace rgbaq::engine::cuda {
namespace {

constexpr int kTimestepDim = 256;

std::vector<const Tensor*> block_linears(const cpu::Dit::Block& b) {
  return {&b.to_q, &b.to_k, &b.to_v, &b.to_out, &b.gate, &b.proj, &b.out};
}

std::string stack_name(int block, int first) {
  return "DiT block " + std::to_string(block) + (first == kToQ ? " to_q|to_k|to_v" : " MLP gate|up");
}

// --fused-blocks: every block's stacks in one format each, checked before anything is uploaded.
void require_stackable(const cpu::Dit& dit, int layers, const WeightSource& source) {
  for (int i = 0; i < layers; ++i) {
    const std::vector<const Tensor*> l = block_linears(dit.blocks()[i]);
    const auto format = [&](int j) { return source.format_of(l[j], true); };
    require_one_format({format(kToQ), format(kToK), format(kToV)}, stack_name(i, kToQ));
    require_one_format({format(kMlpGate), format(kMlpProj)}, stack_name(i, kMlpGate));
  }
}

}  // namespace

CudaDit::CudaDit(const DitConfig& config, const cpu::Dit* dit, WeightSource& source, LinearRunner& linears,
                 cudaStream_t stream, bool stream_blocks, bool fused_attention, bool fused_blocks)
    : config_(config), arena_(source.arena()), linears_(linears), gemm_(linears.gemm()), stream_(stream),
      type_(source.type()), esize_(element_size(type_)), fused_attention_(fused_attention), fused_blocks_(fused_blocks) {
  if (fused_attention) {
    AttentionArgs shape;
    shape.ldq = shape.ldk = shape.ldv = shape.ldo = config.dim();
    shape.q_heads = shape.kv_heads = config.heads;
    shape.head_dim = config.head_dim;
    require_fused_attention(shape, type_, "the DiT");
  }
  if (fused_blocks && dit) require_stackable(*dit, config.layers, source);
  const int64_t d = config.dim(), mlp = d * config.mlp_ratio, ctx = config.context_dim;
  auto* w = dit;  // null: random weights
  img_in_ = source.linear(w ? &w->img_in() : nullptr, d, 64, false, "DiT img_in");
  txt_in_ = source.linear(w ? &w->txt_in() : nullptr, d, ctx, false, "DiT txt_in.in_layer");
  txt_out_ = source.linear(w ? &w->txt_out() : nullptr, d, d, false, "DiT txt_in.out_layer");
  time_1_ = source.linear(w ? &w->time_1() : nullptr, d, kTimestepDim, false, "DiT timestep linear_1");
  time_2_ = source.linear(w ? &w->time_2() : nullptr, d, d, false, "DiT timestep linear_2");
  modulation_ = source.linear(w ? &w->modulation_weight() : nullptr, 4 * d, d, false, "DiT modulation.1");
  norm_out_ = source.linear(w ? &w->norm_out() : nullptr, d, d, false, "DiT norm_out.linear");
  proj_out_ = source.linear(w ? &w->proj_out() : nullptr, 64, d, false, "DiT proj_out");
  text_norm_ = source.vector(w ? &w->text_norm() : nullptr, ctx, "DiT txt_in.text_norm", 0.0f);
  if (stream_blocks && !w) throw std::logic_error("CudaDit: streaming needs host weights");
  const int64_t shapes[kDitBlockLinears][2] = {{d, d}, {d, d}, {d, d}, {d, d}, {mlp, d}, {mlp, d}, {d, mlp}};
  std::vector<std::vector<std::vector<uint8_t>>> staged;
  for (int i = 0; i < config.layers; ++i) {
    const cpu::Dit::Block* b = w ? &w->blocks()[i] : nullptr;
    const std::string name = "DiT block " + std::to_string(i);
    Block dev;
    dev.norm_q = source.vector(b ? &b->norm_q : nullptr, config.head_dim, name + " norm_q");
    dev.norm_k = source.vector(b ? &b->norm_k : nullptr, config.head_dim, name + " norm_k");
    const std::vector<const Tensor*> linears = b ? block_linears(*b) : std::vector<const Tensor*>(kDitBlockLinears, nullptr);
    // Fused, the first of a stack (Q|K|V, gate|up) holds it all and the others stay empty.
    const auto stack_of = [&](int j) -> std::vector<const Tensor*> {
      if (!fused_blocks) return {linears[j]};
      if (j == kToQ) return {linears[kToQ], linears[kToK], linears[kToV]};
      if (j == kMlpGate) return {linears[kMlpGate], linears[kMlpProj]};
      if (j == kToK || j == kToV || j == kMlpProj) return {};
      return {linears[j]};
    };
    if (stream_blocks) staged.emplace_back();  // each linear's parts in its format, in order (BlockStreamer packs them)
    for (int j = 0; j < kDitBlockLinears; ++j) {
      const std::vector<const Tensor*> stack = stack_of(j);
      dev.formats.push_back(source.format_of(linears[j], true));
      dev.linears.emplace_back();
      dev.first_part.push_back(stream_blocks ? static_cast<int>(staged.back().size()) : 0);
      dev.groups.push_back(linears[j] ? linears[j]->convrot_group() : 0);
      if (stack.empty()) continue;
      if (!stream_blocks) {
        dev.linears.back() = stack.size() == 1 ? source.linear(stack[0], shapes[j][0], shapes[j][1], true, name + " linears")
                                               : source.stacked_linear(stack, shapes[j][0], shapes[j][1], true, stack_name(i, j));
        continue;
      }
      const std::string what = stack.size() == 1 ? name + " linears" : stack_name(i, j);
      for (auto& part : staged_stack(stack, dev.formats[j], type_, what)) staged.back().push_back(std::move(part));
    }
    blocks_.push_back(std::move(dev));
  }
  if (stream_blocks) streamer_ = std::make_unique<BlockStreamer>(arena_, staged, stream);
  const int64_t dim = config_.dim();
  DeviceArena& arena = arena_;
  emb_f32_ = arena.allocate(kTimestepDim * sizeof(float), "DiT time embedding");
  emb_ = arena.allocate(kTimestepDim * esize_, "DiT time embedding");
  hidden_ = arena.allocate(dim * sizeof(float), "DiT time hidden");
  hidden_t_ = arena.allocate(dim * esize_, "DiT time hidden");
  temb_ = arena.allocate(dim * sizeof(float), "DiT temb");
  temb_t_ = arena.allocate(dim * esize_, "DiT temb");
  text_mod_ = arena.allocate(5 * dim * sizeof(float), "DiT text modulation");
  image_mod_ = arena.allocate(5 * dim * sizeof(float), "DiT image modulation");
  emb_host_ = PinnedBuffer(kTimestepDim * sizeof(float), arena.device(), "DiT time embedding staging");
  RGBAQ_CUDA_CHECK(cudaStreamSynchronize(stream_), arena.device());  // random fills done
  lora_terms_.resize(dit_linear_modules(config_).size());
}

void CudaDit::set_loras(const LoraSet& set) {
  // Adapters no set has used for a while go first: at most this many stay on the device.
  constexpr size_t kKeptAdapters = 8;
  const auto terms = bind_loras(set, config_);  // throws for a module this DiT lacks, before anything changes
  for (const LoraUse& use : set) {
    if (lora_uploads_.count(use.adapter.get())) continue;
    DeviceLora up;  // kept only once every module is up (an allocation that fails leaves nothing half done)
    up.adapter = use.adapter;
    for (const LoraModule& m : use.adapter->modules) {
      const std::string what = "LoRA " + use.adapter->name + " " + m.module;
      up.modules.emplace(&m, std::pair{upload(arena_, m.down, type_, what), upload(arena_, m.up, type_, what)});
    }
    lora_uploads_.emplace(use.adapter.get(), std::move(up));
  }
  for (auto it = lora_uploads_.begin(); it != lora_uploads_.end() && lora_uploads_.size() > kKeptAdapters;) {
    const bool used = std::any_of(set.begin(), set.end(), [&](const LoraUse& u) { return u.adapter.get() == it->first; });
    it = used ? std::next(it) : lora_uploads_.erase(it);
  }
  std::vector<std::vector<DeviceLoraTerm>> device_terms(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    for (const LoraTerm& t : terms[i]) {
      for (const auto& [adapter, up] : lora_uploads_) {
        if (const auto f = up.modules.find(t.module); f != up.modules.end()) {
          device_terms[i].push_back({f->second.first.get(), f->second.second.get(), t.module->rank, t.scale});
          break;
        }
      }
    }
  }
  lora_terms_ = std::move(device_terms);
}

void CudaDit::project(int index, const void* x, int64_t rows, const LinearView& w, int64_t out, int64_t in, float* y,
                      int stacked) {
  const int64_t ld = stacked * out;
  linears_.run(w, x, rows, ld, in, y);
  for (int part = 0; part < stacked; ++part) {
    for (const DeviceLoraTerm& t : lora_terms_[static_cast<size_t>(index + part)]) {
      const size_t need = static_cast<size_t>(rows * t.rank);
      arena_.ensure(lora_mid_, need * sizeof(float), "DiT LoRA x A^T");
      arena_.ensure(lora_mid_t_, need * esize_, "DiT LoRA x A^T");
      gemm_.linear(type_, x, rows, t.down, t.rank, in, lora_mid_.as<float>());            // [rows, rank] = x A^T
      convert(lora_mid_.as<float>(), rows * t.rank, lora_mid_t_.get(), type_, stream_);  // the second GEMM's type
      // y += scale * (x A^T) B^T: B [out, rank] as a Linear weight, accumulated (beta 1) into this part's columns.
      gemm_.run({rows, out, t.rank, t.rank, t.rank, ld, true, 1, 0, 0, 0}, type_, lora_mid_t_.get(), t.up, y + part * out,
                t.scale, 1.0f);
    }
  }
}

LinearView CudaDit::linear(int block, int which, const std::vector<const void*>* streamed) const {
  const Block& b = blocks_[block];
  if (!streamed) return b.linears[which].view();
  return view_of_parts(b.formats[which], streamed->data() + b.first_part[which], b.groups[which]);
}

// [scale1 | gate1 | scale2 | gate2] (gates through tanh) then the final scale: 5 * dim fp32 at `out`.
void CudaDit::modulation(float t, float* out) {
  const int64_t dim = config_.dim();
  const int device = arena_.device();
  // The previous step has been waited for, so the staging buffer is free to rewrite.
  cpu::Dit::timestep_embedding(t, static_cast<float*>(emb_host_.get()));
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(emb_f32_.get(), emb_host_.get(), kTimestepDim * sizeof(float), cudaMemcpyHostToDevice, stream_), device);
  convert(emb_f32_.as<float>(), kTimestepDim, emb_.get(), type_, stream_);
  project(kTime1, emb_.get(), 1, time_1_.view(), dim, kTimestepDim, hidden_.as<float>());
  silu(hidden_.as<float>(), dim, hidden_t_.get(), type_, stream_);
  project(kTime2, hidden_t_.get(), 1, time_2_.view(), dim, dim, temb_.as<float>());
  silu(temb_.as<float>(), dim, temb_t_.get(), type_, stream_);  // both heads read silu(temb)
  project(kModulation, temb_t_.get(), 1, modulation_.view(), 4 * dim, dim, out);
  project(kNormOut, temb_t_.get(), 1, norm_out_.view(), dim, dim, out + 4 * dim);
  tanh_gates(out, dim, stream_);
  check_launch(device, "the DiT's modulation kernels");
}

void CudaDit::ensure_workspace(int64_t text_rows, int64_t image_rows) {
  if (text_rows <= ws_text_ && image_rows <= ws_image_) return;
  // ws_text_/ws_image_ change only once every buffer is allocated: after a failed allocation (the job
  // fails) the next image must not skip this with buffers too small or empty.
  const int64_t l = std::max(text_rows, ws_text_), n = std::max(image_rows, ws_image_), r = std::max(l, n), k = l + n;
  // The plan's buffers, in its order (workspace_plan.h: what the session's fit check counted).
  DeviceBuffer* buffers[] = {&x_,     &h_,     &qf_,    &q_,      &k_,      &v_,      &attn_, &attn_t_, &delta_,
                             &gate_,  &up_,    &mlp_t_, &scores_, &probs_,  &tokens_, &txt_,  &vel_};
  const auto plan = dit_workspace(config_, static_cast<int64_t>(esize_), l, n, fused_attention_, fused_blocks_);
  if (plan.size() != std::size(buffers)) throw std::logic_error("CudaDit: the workspace plan has another shape");
  for (size_t i = 0; i < plan.size(); ++i) arena_.ensure(*buffers[i], static_cast<size_t>(plan[i].bytes), plan[i].what);
  score_elements_ = fused_attention_ ? 0 : attention_score_elements(config_.heads, r, k, kDitScoreBudget);
  ws_text_ = l;
  ws_image_ = n;
}

void CudaDit::norm_rows(int64_t rows, const RowScales& scales) {
  layer_norm_modulate(x_.as<float>(), rows, config_.dim(), static_cast<float>(config_.eps), scales.text, scales.image,
                      scales.text_rows, h_.get(), type_, stream_);
}

void CudaDit::run_block(int i, int64_t rows, int64_t text_rows, const float* cos, const float* sin, int64_t prefix_rows,
                        bool store, const RowScales* next) {
  const int64_t dim = config_.dim(), mlp = dim * config_.mlp_ratio, keys = prefix_rows + rows;
  const float eps = static_cast<float>(config_.eps);
  const int device = arena_.device();
  const std::vector<const void*>* streamed = streamer_ ? &streamer_->begin_block(i) : nullptr;
  const float* tmod = text_mod_.as<float>();
  const float* imod = image_mod_.as<float>();
  auto* k = static_cast<char*>(k_.get());
  auto* v = static_cast<char*>(v_.get());
  const size_t row_bytes = static_cast<size_t>(dim) * esize_;
  const Block& b = blocks_[i];

  const auto* h = static_cast<const char*>(h_.get());
  const int64_t half = config_.head_dim / 2;
  if (fused_blocks_) {  // h_ holds this block's normed rows already (the pass before it); Q|K|V one GEMM a chunk
    const LinearView qkv_w = linears_.prepared(linear(i, kToQ, streamed), 3 * dim, dim);
    float* qkv = gate_.as<float>();
    for (int64_t r0 = 0; r0 < rows; r0 += kDitChunkRows) {
      const int64_t n = std::min(kDitChunkRows, rows - r0);
      const size_t at = static_cast<size_t>(r0) * row_bytes, kv_at = static_cast<size_t>(prefix_rows + r0) * row_bytes;
      project(dit_linear_index(i, kToQ), h + at, n, qkv_w, dim, dim, qkv, 3);
      head_norm_rope(qkv, 3 * dim, n, config_.heads, config_.head_dim, b.norm_q.as<float>(), eps, cos + r0 * half,
                     sin + r0 * half, true, static_cast<char*>(q_.get()) + at, dim, type_, stream_);
      head_norm_rope(qkv + dim, 3 * dim, n, config_.heads, config_.head_dim, b.norm_k.as<float>(), eps, cos + r0 * half,
                     sin + r0 * half, true, k + kv_at, dim, type_, stream_);
      convert_rows(qkv + 2 * dim, 3 * dim, n, dim, v + kv_at, dim, type_, stream_);
    }
  } else {
    norm_rows(rows, {tmod, imod, text_rows});
    project(dit_linear_index(i, kToQ), h_.get(), rows, linear(i, kToQ, streamed), dim, dim, qf_.as<float>());
    head_norm_rope(qf_.as<float>(), dim, rows, config_.heads, config_.head_dim, b.norm_q.as<float>(), eps, cos, sin, true,
                   q_.get(), dim, type_, stream_);
    project(dit_linear_index(i, kToK), h_.get(), rows, linear(i, kToK, streamed), dim, dim, qf_.as<float>());
    head_norm_rope(qf_.as<float>(), dim, rows, config_.heads, config_.head_dim, b.norm_k.as<float>(), eps, cos, sin, true,
                   k + prefix_rows * row_bytes, dim, type_, stream_);
    project(dit_linear_index(i, kToV), h_.get(), rows, linear(i, kToV, streamed), dim, dim, qf_.as<float>());
    convert(qf_.as<float>(), rows * dim, v + prefix_rows * row_bytes, type_, stream_);
  }
  const size_t prefix_bytes = static_cast<size_t>(text_len_) * row_bytes;
  if (prefix_rows > 0) {  // this block's text keys/values, computed once per image
    RGBAQ_CUDA_CHECK(cudaMemcpyAsync(k, static_cast<char*>(prefix_k_.get()) + i * prefix_bytes, prefix_rows * row_bytes,
                                     cudaMemcpyDeviceToDevice, stream_), device);
    RGBAQ_CUDA_CHECK(cudaMemcpyAsync(v, static_cast<char*>(prefix_v_.get()) + i * prefix_bytes, prefix_rows * row_bytes,
                                     cudaMemcpyDeviceToDevice, stream_), device);
  }
  if (store) {
    RGBAQ_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(prefix_k_.get()) + i * prefix_bytes, k, text_rows * row_bytes,
                                     cudaMemcpyDeviceToDevice, stream_), device);
    RGBAQ_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(prefix_v_.get()) + i * prefix_bytes, v, text_rows * row_bytes,
                                     cudaMemcpyDeviceToDevice, stream_), device);
  }
  AttentionArgs a;
  a.q = q_.get(), a.k = k, a.v = v, a.out = attn_.as<float>();
  a.ldq = a.ldk = a.ldv = a.ldo = dim;
  a.q_rows = rows, a.kv_rows = keys, a.causal_rows = text_rows;
  a.q_heads = a.kv_heads = config_.heads;
  a.head_dim = config_.head_dim;
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(config_.head_dim)));
  if (fused_attention_) {
    a.out_bf16 = attn_t_.get();  // straight into the out-projection's input
    flash_attention(a, stream_);
  } else {
    attention(gemm_, type_, a, {scores_.as<float>(), probs_.get(), score_elements_}, stream_);
    convert(attn_.as<float>(), rows * dim, attn_t_.get(), type_, stream_);
  }
  project(dit_linear_index(i, kToOut), attn_t_.get(), rows, linear(i, kToOut, streamed), dim, dim, delta_.as<float>());
  const RowScales mlp_norm{tmod + 2 * dim, imod + 2 * dim, text_rows};
  if (fused_blocks_) {  // the residual and the MLP's norm in one pass; gate|up one GEMM a chunk
    gated_residual_norm(x_.as<float>(), delta_.as<float>(), rows, dim, tmod + dim, imod + dim, text_rows, eps, mlp_norm.text,
                        mlp_norm.image, mlp_norm.text_rows, h_.get(), type_, stream_);
    const LinearView gate_up = linears_.prepared(linear(i, kMlpGate, streamed), 2 * mlp, dim);
    for (int64_t r0 = 0; r0 < rows; r0 += kDitChunkRows) {
      const int64_t n = std::min(kDitChunkRows, rows - r0);
      project(dit_linear_index(i, kMlpGate), h + r0 * row_bytes, n, gate_up, mlp, dim, gate_.as<float>(), 2);
      swiglu_rows(gate_.as<float>(), n, mlp, static_cast<char*>(mlp_t_.get()) + r0 * mlp * esize_, type_, stream_);
    }
  } else {
    gated_residual(x_.as<float>(), delta_.as<float>(), rows, dim, tmod + dim, imod + dim, text_rows, stream_);
    norm_rows(rows, mlp_norm);
    project(dit_linear_index(i, kMlpGate), h_.get(), rows, linear(i, kMlpGate, streamed), mlp, dim, gate_.as<float>());
    project(dit_linear_index(i, kMlpProj), h_.get(), rows, linear(i, kMlpProj, streamed), mlp, dim, up_.as<float>());
    swiglu(gate_.as<float>(), up_.as<float>(), rows * mlp, mlp_t_.get(), type_, stream_);
  }
  project(dit_linear_index(i, kMlpOut), mlp_t_.get(), rows, linear(i, kMlpOut, streamed), dim, mlp, delta_.as<float>());
  if (fused_blocks_ && next) {
    gated_residual_norm(x_.as<float>(), delta_.as<float>(), rows, dim, tmod + 3 * dim, imod + 3 * dim, text_rows, eps, next->text,
                        next->image, next->text_rows, h_.get(), type_, stream_);
  } else {
    gated_residual(x_.as<float>(), delta_.as<float>(), rows, dim, tmod + 3 * dim, imod + 3 * dim, text_rows, stream_);
  }
  if (streamer_) streamer_->end_block(i);
  check_launch(device, "a DiT block's kernels");
}

// The blocks over x_'s rows (see run_block): fused, each block's last pass norms the rows for the next
// (the first block's norm before the loop, and the last block's with `after`, when given, for what
// follows the blocks); unfused, each block norms its own input and `after` is applied after the last.
void CudaDit::run_blocks(int64_t rows, int64_t text_rows, const float* cos, const float* sin, int64_t prefix_rows, bool store,
                         const RowScales* after) {
  const RowScales first{text_mod_.as<float>(), image_mod_.as<float>(), text_rows};
  if (fused_blocks_ && config_.layers > 0) norm_rows(rows, first);
  for (int i = 0; i < config_.layers; ++i) {
    run_block(i, rows, text_rows, cos, sin, prefix_rows, store, i + 1 < config_.layers ? &first : after);
  }
  if ((!fused_blocks_ || config_.layers == 0) && after) norm_rows(rows, *after);
}

void CudaDit::reserve(int64_t text_tokens, int64_t image_tokens) {
  const int64_t l = text_tokens, n = image_tokens;
  ensure_workspace(l, n);
  DeviceBuffer* buffers[] = {&txt_cos_, &txt_sin_, &img_cos_, &img_sin_, &prefix_k_, &prefix_v_};
  const auto plan = dit_image_buffers(config_, static_cast<int64_t>(esize_), l, n);
  if (plan.size() != std::size(buffers)) throw std::logic_error("CudaDit: the image buffer plan has another shape");
  for (size_t i = 0; i < plan.size(); ++i) arena_.ensure(*buffers[i], static_cast<size_t>(plan[i].bytes), plan[i].what);
}

void CudaDit::begin_image(const Tensor& txt_feats, const host::RopeTensors& rope) {
  const int64_t l = txt_feats.dim(0), n = rope.image_tokens, dim = config_.dim();
  const int device = arena_.device();
  text_len_ = l;
  image_tokens_ = n;
  ensure_workspace(l, n);
  auto put = [&](DeviceBuffer& b, const std::vector<float>& host, const char* what) {
    arena_.ensure(b, host.size() * sizeof(float), what);
    RGBAQ_CUDA_CHECK(cudaMemcpyAsync(b.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, stream_), device);
  };
  put(txt_cos_, rope.txt_cos, "DiT RoPE");
  put(txt_sin_, rope.txt_sin, "DiT RoPE");
  put(img_cos_, rope.img_cos, "DiT RoPE");
  put(img_sin_, rope.img_sin, "DiT RoPE");
  const size_t prefix_bytes = static_cast<size_t>(config_.layers) * l * dim * esize_;
  arena_.ensure(prefix_k_, prefix_bytes, "DiT text prefix keys");
  arena_.ensure(prefix_v_, prefix_bytes, "DiT text prefix values");
  modulation(0.0f, text_mod_.as<float>());
  // txt_in: zero-centred RMSNorm, in_layer, GELU (tanh), out_layer.
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(txt_.get(), txt_feats.f32(), txt_feats.nbytes(), cudaMemcpyHostToDevice, stream_), device);
  rms_norm(txt_.as<float>(), l, config_.context_dim, text_norm_.as<float>(), 1.0f, static_cast<float>(config_.eps), h_.get(),
           type_, stream_);
  // Fused: no projections buffer; the gate buffer's chunk of 3 dim wide rows holds L rows of dim.
  static_assert(host::kMaxTextTokens <= 3 * kDitChunkRows);
  float* txt_hidden = fused_blocks_ ? gate_.as<float>() : qf_.as<float>();
  project(kTxtIn, h_.get(), l, txt_in_.view(), dim, config_.context_dim, txt_hidden);
  gelu_tanh(txt_hidden, l * dim, attn_t_.get(), type_, stream_);
  project(kTxtOut, attn_t_.get(), l, txt_out_.view(), dim, dim, x_.as<float>());
  // The text rows use the text modulation whatever image_mod_ holds (text_rows = rows); the last
  // block's output is not read (only its keys and values are kept).
  run_blocks(l, l, txt_cos_.as<float>(), txt_sin_.as<float>(), 0, true, nullptr);
  // The host's inputs may go once this returns.
  RGBAQ_CUDA_CHECK(cudaStreamSynchronize(stream_), device);
}

void CudaDit::step(const Tensor& img_tokens, float t, float* vel) {
  const int64_t n = image_tokens_, dim = config_.dim();
  const int device = arena_.device();
  modulation(t, image_mod_.as<float>());
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(tokens_.get(), img_tokens.f32(), img_tokens.nbytes(), cudaMemcpyHostToDevice, stream_), device);
  convert(tokens_.as<float>(), n * 64, h_.get(), type_, stream_);
  project(kImgIn, h_.get(), n, img_in_.view(), dim, 64, x_.as<float>());
  const float* final_scale = image_mod_.as<float>() + 4 * dim;
  const RowScales final_norm{final_scale, final_scale, 0};
  run_blocks(n, 0, img_cos_.as<float>(), img_sin_.as<float>(), text_len_, false, &final_norm);
  project(kProjOut, h_.get(), n, proj_out_.view(), 64, dim, vel_.as<float>());
  check_launch(device, "the DiT's output kernels");
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(vel, vel_.get(), static_cast<size_t>(n) * 64 * sizeof(float), cudaMemcpyDeviceToHost, stream_), device);
  RGBAQ_CUDA_CHECK(cudaStreamSynchronize(stream_), device);  // the host needs the velocity for its Euler step
}

void CudaDit::end_image() { text_len_ = image_tokens_ = 0; }

}  // namespace rgbaq::engine::cuda
