#include "engine/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>
#include <sstream>

#include "engine/backend_registry.h"
#include "engine/model/model_directory.h"
#include "host/noise.h"
#include "host/rgba8.h"

namespace rgbaq::engine {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Throws RenderNotFinite when `values` hold NaN or infinity: `what` names them and when.
void require_finite(std::span<const float> values, const std::string& what, const LoraSet& loras) {
  if (std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); })) return;
  std::string message = "the render is not finite: " + what + " hold NaN or infinity";
  if (loras.empty()) throw RenderNotFinite(message + " with no LoRA applied (the model's weights may be broken)");
  std::ostringstream names;
  for (const LoraUse& use : loras) {
    names << (&use == &loras.front() ? "" : ", ") << "LoRA \"" << use.adapter->name << "\" at weight " << use.weight << " ("
          << use.adapter->path.string() << ")";
  }
  throw RenderNotFinite(message + " with " + names.str() + " applied: its values overflow the model");
}

}  // namespace

std::unique_ptr<Session> Session::open(const std::filesystem::path& model_dir, const std::string& backend, int threads) {
  EngineOptions options;
  options.backend = backend;
  options.threads = threads;
  return open(model_dir, options);
}

std::unique_ptr<Session> Session::open(const std::filesystem::path& model_dir, const EngineOptions& options) {
  const BackendEntry& backend = resolve_backend(options);
  const auto dir = ModelDirectory::open(model_dir, options.components, options.tokenizer);
  std::unique_ptr<Session> s(new Session());
  s->model_dir_ = model_dir;
  s->backend_ = backend.name;
  s->tokenizer_ = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_file(dir.tokenizer_json()));
  s->template_ = std::make_unique<tokenizer::PromptTemplate>(*s->tokenizer_);
  s->scheduler_ = dir.scheduler();
  // No directory: no host/ tables to read, so the contract's formula.
  s->rope_tables_ = model_dir.empty() ? host::RopeTables::from_formula() : host::RopeTables::for_model(model_dir);
  s->model_notes_ = dir.notes();
  s->text_encoder_convrot_ = !dir.reports()[0].convrot_linears.empty();  // reports: text encoder, DiT, VAE
  s->options_ = options;
  s->options_.backend = backend.name;
  s->graphs_ = backend.open(dir, options);
  s->dit_config_ = dir.dit_config();
  s->lora_cache_ = options.lora_cache ? options.lora_cache : std::make_shared<LoraCache>(options.lora_cache_bytes);
  return s;
}

void Session::reopen_backend() {
  graphs_.reset();  // first: a device holds one session's weights, not two
  const BackendEntry& backend = resolve_backend(options_);
  graphs_ = backend.open(ModelDirectory::open(model_dir_, options_.components, options_.tokenizer), options_);
}

Graphs& Session::graphs() {
  if (!graphs_) throw std::logic_error("the session has no backend: opening it again failed");
  return *graphs_;
}

std::string Session::precision() const {
  return graphs_ ? graphs_->precision() : std::string(backend_ == "cpu" ? "fp32" : precision_name(options_.precision));
}

std::string Session::device_description() const {
  return graphs_ ? graphs_->device_description() : backend_ + " (not open: opening it again failed)";
}

tokenizer::TemplatedPrompt Session::tokenize(const std::string& prompt) const { return template_->apply(prompt); }

Tensor Session::encode(const tokenizer::TemplatedPrompt& prompt) {
  const Tensor hidden = graphs().encode(prompt.ids);
  const int64_t d = hidden.dim(1), l = prompt.text_len();
  std::vector<float> embeds(hidden.f32() + prompt.drop_idx * d, hidden.f32() + (prompt.drop_idx + l) * d);
  return Tensor::from_f32({l, d}, std::move(embeds));
}

RenderResult Session::render_embedded(const Tensor& embeds, const RenderRequest& request, const StepCallback& on_step) {
  const auto start = Clock::now();
  host::check_image_size(request.size);
  RenderResult result;
  result.loras = lora_cache_->resolve(request.loras, dit_config_);
  Graphs& graphs = this->graphs();
  graphs.set_loras(result.loras);  // before begin_image: the text prefix runs with them too
  result.size = request.size;
  result.text_tokens = static_cast<int>(embeds.dim(0));
  const host::RopeTensors rope = host::build_rope(rope_tables_, result.text_tokens, request.size);  // once per image
  const host::Schedule schedule = host::make_schedule(scheduler_, request.size.tokens());
  result.sigmas = schedule.sigmas;
  const int64_t n = request.size.tokens();
  Tensor x = Tensor::from_f32({n, 64}, host::initial_tokens(request.seed, request.size));
  result.timings.step_s.reserve(static_cast<size_t>(schedule.steps()));
  graphs.begin_image(embeds, rope);  // the text prefix, once for the image's steps
  struct EndImage {
    Graphs& g;
    ~EndImage() { g.end_image(); }
  } end_image{graphs};
  for (int i = 0; i < schedule.steps(); ++i) {
    const auto t0 = Clock::now();
    const Tensor& vel = graphs.step(x, schedule.dit_timestep(i));
    host::euler_step({x.mutable_f32(), static_cast<size_t>(x.numel())}, vel.f32_span(), schedule.sigmas[i],
                     schedule.sigmas[i + 1]);
    require_finite(x.f32_span(), "the latents after step " + std::to_string(i + 1) + " of " + std::to_string(schedule.steps()),
                   result.loras);
    result.timings.step_s.push_back(seconds_since(t0));
    if (on_step && !on_step(i + 1, schedule.steps())) throw RenderCanceled();
  }
  const auto t0 = Clock::now();
  const Tensor image = graphs.decode(x, request.size);
  require_finite(image.f32_span(), "the decoded image's values", result.loras);
  result.rgba.resize(static_cast<size_t>(request.size.width) * request.size.height * 4);
  host::image_to_rgba8(image.f32_span(), request.size.width, request.size.height, result.rgba);
  result.timings.decode_s = seconds_since(t0);
  result.timings.total_s = seconds_since(start);
  return result;
}

RenderResult Session::render(const RenderRequest& request, const StepCallback& on_step) {
  const auto start = Clock::now();
  host::check_image_size(request.size);
  const auto prompt = tokenize(request.prompt);
  const double tokenize_s = seconds_since(start);
  const auto t0 = Clock::now();
  const Tensor embeds = encode(prompt);
  const double encode_s = seconds_since(t0);
  RenderResult result = render_embedded(embeds, request, on_step);
  result.full_tokens = prompt.full_len();
  result.timings.tokenize_s = tokenize_s;
  result.timings.encode_s = encode_s;
  result.timings.total_s = seconds_since(start);
  return result;
}

}  // namespace rgbaq::engine
