#include "daemon/render_command.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "assets/alpha_check.h"
#include "common/arguments.h"
#include "common/printable_text.h"
#include "daemon/base/daemon_config.h"
#include "daemon/base/lora_folders.h"
#include "daemon/base/render_record.h"
#include "engine/backend_registry.h"
#include "engine/model/hf_cache.h"
#include "engine/model/model_directory.h"
#include "engine/model/model_identity.h"
#include "engine/session.h"
#include "host/image_size.h"
#include "jobs/lora_list.h"
#include "storage/png_file.h"
#include "storage/render_metadata.h"

namespace rgbaq::daemon {
namespace {

constexpr const char* kHelp = R"(usage: rgbaqd render --model DIR --prompt TEXT [--seed S] [--size SIZE] -o FILE.png
                     [--dit FILE] [--text-encoder FILE] [--vae FILE]
                     [--engine auto|cpu|cuda] [--threads N] [--device N] [--precision bf16|fp32|fp8]
                     [--gpu-int8 widen|keep|w8a8] [--vae-tiles on|off] [--attention gemm|fused]
                     [--fused-blocks on|off] [--gpu-memory GIB] [--lora NAME:W[;NAME:W] --lora-dir DIR ...]
                     [--random-weights SEED]

Renders one image with no queue: tokenize, encode, 8 Euler steps, decode, then an RGBA PNG with its
parameters embedded (a `parameters` text chunk in the AUTOMATIC1111 form and an `rgbaq` JSON chunk).
  --model DIR    a diffusers-layout model directory (tools/make_tiny_model writes a tiny one), or a
                 Hugging Face repo id ORG/NAME[@REV] in the huggingface_hub cache (rgbaq model pull)
  --dit FILE, --text-encoder FILE, --vae FILE
                 single .safetensors files (ComfyUI's: bf16, FP8 scaled or INT8 ConvRot) replacing
                 those components of --model; with all three, --model may be left out (the tokenizer
                 is then rgbaq's own, the sigmas the Turbo's published ones)
  --seed S       0..2^64-1 (default 0); the noise is torch's randn for this seed
  --size SIZE    256, 512, 1024 or WxH in pixels (multiples of 16; default 256)
  --engine E     auto (default: cuda when a CUDA device is visible, else cpu), cpu or cuda
  --threads N    CPU threads (default: all)
  --lora L       LoRAs to apply, NAME:WEIGHT items separated by ";" (the prompt's <lora:NAME:W> tags
                 add to them); NAME is NAME.safetensors in a --lora-dir (repeatable)
  --device N, --precision bf16|fp32|fp8, --gpu-int8 widen|keep|w8a8, --vae-tiles on|off,
  --attention gemm|fused, --fused-blocks on|off, --gpu-memory GIB: the cuda engine's device, GEMM
                 precision, int8 weights, tiled VAE, attention kernel, fused DiT passes and memory
                 budget (see rgbaqd --help)
  --random-weights SEED  cuda only, for speed measurements: every weight random, made on the device,
                 not read from the model (whose files give only the shapes: make_tiny_model --dims real
                 --hollow writes such a model in moments); the image is noise
Exit codes: 0 ok, 1 failure, 2 usage or bad input (unknown model directory, bad size, prompt too long,
an engine that cannot run here).
)";

}  // namespace

int run_render_command(const std::vector<std::string>& raw_args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> args;
  for (const auto& a : raw_args) args.push_back(a == "-o" ? "--output" : a);
  try {
    const common::Arguments a(args, {"model", "dit", "text-encoder", "vae", "prompt", "seed", "size", "output", "engine", "threads", "device", "precision", "gpu-int8",
                               "vae-tiles", "attention", "fused-blocks", "gpu-memory", "lora", "lora-dir", "random-weights"}, {"help"});
    if (a.has("help")) {
      out << kHelp;
      return 0;
    }
    if (!a.positionals().empty()) throw common::UsageError("unexpected argument \"" + a.positionals()[0] + "\"");
    engine::RenderRequest request;
    const std::string prompt = a.require("prompt");  // recorded as written; the tokenizer sees it without tags
    std::string lora_error;
    const auto tagged = jobs::split_prompt_loras(prompt, lora_error);
    if (!tagged) throw common::UsageError("--prompt: " + lora_error);
    request.prompt = tagged->text;
    auto loras = jobs::parse_lora_list(a.get("lora").value_or(""), lora_error);
    if (!loras) throw common::UsageError("--lora: " + lora_error);
    loras->insert(loras->end(), tagged->loras.begin(), tagged->loras.end());
    std::vector<std::filesystem::path> lora_dirs;
    for (const auto& d : a.get_all("lora-dir")) lora_dirs.push_back(d);
    try {
      request.loras = lora_requests(lora_dirs, jobs::lora_list_string(*loras));
    } catch (const std::runtime_error& e) {
      throw common::UsageError(std::string("--lora: ") + e.what());
    }
    request.seed = a.get_u64("seed", 0);
    try {
      request.size = host::parse_image_size(a.get("size").value_or("256"));
    } catch (const std::invalid_argument& e) {
      throw common::UsageError(std::string("--size: ") + e.what());
    }
    const std::string output = a.require("output");
    engine::EngineOptions options;
    read_component_flags(a, options.components);
    std::filesystem::path model;
    if (a.has("model") || options.components.empty()) {
      try {
        model = engine::resolve_model_argument(a.require("model"));
      } catch (const engine::InvalidModel& e) {
        throw common::UsageError(std::string("--model: ") + e.what());
      }
    }
    check_component_files(options.components, model);  // without --model: names the files missing
    if (model.empty()) options.tokenizer = own_tokenizer();
    options.backend = a.get("engine").value_or("auto");
    options.threads = a.get_int("threads", 0);
    options.device = a.get_int("device", 0);
    if (const auto v = a.get("gpu-memory")) options.gpu_memory_gib = parse_gpu_memory(*v);
    if (a.has("random-weights")) options.random_weights = a.get_u64("random-weights", 0);
    options.precision = common::parse_option("precision", a.get("precision").value_or("bf16"), engine::parse_precision);
    options.gpu_int8 = common::parse_option("gpu-int8", a.get("gpu-int8").value_or("widen"), engine::parse_gpu_int8);
    options.vae_tiles = common::parse_option("vae-tiles", a.get("vae-tiles").value_or("off"), engine::parse_on_off);
    options.attention = common::parse_option("attention", a.get("attention").value_or("gemm"), engine::parse_attention_kernel);
    options.fused_blocks = common::parse_option("fused-blocks", a.get("fused-blocks").value_or("off"), engine::parse_on_off);
    std::unique_ptr<engine::Session> session;
    try {
      session = engine::Session::open(model, options);
    } catch (const engine::BackendUnavailable& e) {
      throw common::UsageError(std::string("--engine: ") + e.what());
    } catch (const std::invalid_argument& e) {
      throw common::UsageError(std::string("--engine: ") + e.what());
    } catch (const std::exception& e) {
      const std::string message = name_component_flag(e.what(), options.components);
      if (message != e.what()) throw common::UsageError(message);
      const std::string hint = how_to_get_a_model(model);
      throw common::UsageError(std::string("--model: ") + e.what() + (hint.empty() ? "" : ". " + hint));
    }
    // The LoRA files read now (the render then finds them loaded): one that is no LoRA for this DiT is
    // bad input, named with its key.
    try {
      session->lora_cache().resolve(request.loras, session->dit_config());
    } catch (const std::runtime_error& e) {
      throw common::UsageError(std::string("--lora: ") + e.what());
    }

    engine::RenderResult result;
    const bool show_progress = isatty(STDERR_FILENO) != 0;  // progress is for people, not logs
    try {
      result = session->render(request, [&](int done, int total) {
        if (show_progress) err << "\rstep " << done << "/" << total << (done == total ? "\n" : "") << std::flush;
        return true;
      });
    } catch (const std::invalid_argument& e) {
      if (show_progress) err << "\n";
      throw common::UsageError(e.what());
    }
    const std::string identity = engine::model_identity(model, options.components, options.tokenizer) + engine::random_weights_mark(options);
    storage::RenderMetadata m =
        describe_render(request, result, model, options.components, identity, session->backend_name(), session->precision());
    m.prompt = prompt;
    // Its alpha check in its record, as the daemon's outputs have it (rgbaq qa prints the same).
    const auto qa = assets::alpha_check_json(assets::check_alpha(result.rgba.data(), result.size.width, result.size.height));
    storage::write_png_atomic(output, result.rgba.data(), result.size.width, result.size.height,
                              png_texts_with_qa(m, qa, describe_component_files(options.components)));
    out << output << " (" << result.size.to_string() << ", seed " << request.seed << ", " << result.timings.total_s
        << " s, engine " << session->backend_name() << " on " << session->device_description()
        << (options.random_weights ? ", random weights: a speed measurement" : "") << ")\n";
    for (const auto& note : session->model_notes()) out << "note: " << note << "\n";
    if (const uint64_t peak = session->device_peak_bytes()) {
      char gib[32];
      std::snprintf(gib, sizeof gib, "%.2f", static_cast<double>(peak) / double(uint64_t{1} << 30));
      out << "peak device memory: " << gib << " GiB\n";
    }
    return 0;
  } catch (const common::UsageError& e) {
    err << "rgbaqd render: " << common::printable(e.what()) << "\n(see rgbaqd render --help)\n";
    return 2;
  } catch (const std::exception& e) {
    err << "rgbaqd render: " << common::printable(e.what()) << "\n";
    return 1;
  }
}

}  // namespace rgbaq::daemon
