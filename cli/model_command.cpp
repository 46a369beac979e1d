#include "cli/model_command.h"

#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/download_progress.h"
#include "cli/model_pull.h"
#include "common/arguments.h"
#include "common/printable_text.h"
#include "engine/model/hf_cache.h"
#include "engine/model/model_directory.h"
#include "engine/model/model_quantizer.h"
#include "engine/render_memory.h"

namespace rgbaq::cli {
namespace {

using common::Arguments;
using common::UsageError;
using common::printable;
using nlohmann::json;

constexpr const char* kModelHelp = R"(usage: rgbaq model COMMAND [options]

commands:
  pull [REPO[@REV]] [--to DIR] [--endpoint URL] [--token-file F] [--quantize int8]
                          download a pipeline from the Hugging Face Hub (default
                          Qwen/Qwen-Image-2.1-Turbo) into its cache or DIR (see rgbaq model pull --help)
  check DIR|REPO [--json] [--precision bf16|fp32|fp8] [--gpu-int8 widen|keep] [--vae-tiles on|off]
                 [--attention gemm|fused] [--fused-blocks on|off]
                          read a model directory (or a repo's snapshot in the Hugging Face cache)
                          without rendering: per component its class, dtypes, tensors (used /
                          ignored), bytes; the sampler; the memory a render needs on each engine
                          at 256, 512 and 1024 (estimated; cuda at the rgbaqd flags given, as its
                          session counts it). Exit 2 when rgbaq cannot use it.
  quantize SRC DST [--components transformer,text_encoder]
                          write a copy of SRC whose Linear weights are int8 (one bf16 scale per 32
                          inputs, stored as WEIGHT_scale); norms, embeddings and the VAE as stored
)";

int threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// `cuda`: the cuda session the memory rows are for (rgbaqd's --precision, --gpu-int8, --vae-tiles,
// --attention and --fused-blocks).
std::vector<engine::RenderMemory> memory_rows(const engine::ModelDirectory& model, const engine::EngineOptions& cuda) {
  return engine::estimate_render_memory(model, threads(), cuda);
}

json check_json(const engine::ModelDirectory& model, const engine::EngineOptions& cuda) {
  json components = json::array();
  for (const auto& c : model.components()) {
    json entry = {{"role", c.role}, {"folder", c.folder}, {"library", c.library}, {"class", c.class_name}};
    for (const auto& r : model.reports()) {
      if (r.component != c.role) continue;
      entry["dtypes"] = r.dtypes;
      entry["tensors"] = r.tensors;
      entry["used"] = r.used;
      entry["ignored"] = r.ignored;
      entry["int8_linears"] = r.quantized;
      entry["bytes"] = r.bytes;
      entry["used_bytes"] = r.used_bytes;
    }
    components.push_back(entry);
  }
  json memory = json::array();
  for (const auto& m : memory_rows(model, cuda)) {
    memory.push_back({{"engine", m.engine}, {"precision", m.precision}, {"size", m.size}, {"weights_bytes", m.weights},
                      {"text_encoder_work_bytes", m.text_encoder}, {"dit_work_bytes", m.dit}, {"vae_work_bytes", m.vae},
                      {"total_bytes", m.total()}});
  }
  return {{"model", model.root().string()}, {"pipeline", model.pipeline_class()}, {"usable", true},
          {"sampler", model.sampler_description()}, {"steps", model.scheduler().sample_sigmas.empty()
                                                                  ? model.scheduler().default_steps
                                                                  : static_cast<int>(model.scheduler().sample_sigmas.size())},
          {"components", components}, {"memory", memory}, {"memory_threads", threads()}};
}

void print_check(const engine::ModelDirectory& model, const engine::EngineOptions& cuda, std::ostream& out) {
  out << printable(model.root().string()) << ": " << printable(model.pipeline_class()) << ", usable\n";
  out << "sampler: " << model.sampler_description() << "\n";
  for (const auto& c : model.components()) {
    out << "  " << std::left << std::setw(13) << c.role << std::setw(14) << printable(c.folder + "/") << printable(c.class_name);
    for (const auto& r : model.reports()) {
      if (r.component != c.role) continue;
      std::string dtypes;
      for (const auto& [name, count] : r.dtypes) dtypes += (dtypes.empty() ? "" : " ") + name + "x" + std::to_string(count);
      out << "\n      " << r.tensors << " tensors (" << r.used << " used, " << r.ignored << " ignored), " << format_bytes(r.bytes)
          << " (" << format_bytes(r.used_bytes) << " used), dtypes " << dtypes;
      if (r.quantized) out << ", " << r.quantized << " int8 Linear weights";
    }
    out << "\n";
  }
  out << "memory a render needs (estimated: resident weights + work buffers, on cpu the largest graph's with "
      << threads() << " threads, on cuda every graph's; a 512-token prompt):\n";
  for (const auto& m : memory_rows(model, cuda)) {
    out << "  " << std::left << std::setw(5) << m.engine << std::right << std::setw(5) << m.size << "x" << std::left
        << std::setw(5) << m.size << " " << format_bytes(m.total()) << " (" << m.precision << ": weights "
        << format_bytes(m.weights) << ", encoder "
        << format_bytes(m.text_encoder) << ", DiT " << format_bytes(m.dit) << ", VAE " << format_bytes(m.vae) << ")\n";
  }
}

int check_command(const std::vector<std::string>& words, std::ostream& out, std::ostream& err) {
  const Arguments a(words, {"precision", "gpu-int8", "vae-tiles", "attention", "fused-blocks"}, {"json", "help"});
  if (a.has("help")) {
    out << kModelHelp;
    return 0;
  }
  if (a.positionals().size() != 1) throw UsageError("model check takes one directory or repo id");
  const std::string dir = a.positionals()[0];
  engine::EngineOptions cuda;
  cuda.precision = common::parse_option("precision", a.get("precision").value_or("bf16"), engine::parse_precision);
  cuda.gpu_int8 = common::parse_option("gpu-int8", a.get("gpu-int8").value_or("widen"), engine::parse_gpu_int8);
  cuda.vae_tiles = common::parse_option("vae-tiles", a.get("vae-tiles").value_or("off"), engine::parse_on_off);
  cuda.attention = common::parse_option("attention", a.get("attention").value_or("gemm"), engine::parse_attention_kernel);
  cuda.fused_blocks = common::parse_option("fused-blocks", a.get("fused-blocks").value_or("off"), engine::parse_on_off);
  try {
    const auto model = engine::ModelDirectory::open(engine::resolve_model_argument(dir));
    if (a.has("json")) {
      out << check_json(model, cuda).dump(2) << "\n";
    } else {
      print_check(model, cuda, out);
    }
    return 0;
  } catch (const std::runtime_error& e) {
    if (a.has("json")) out << json{{"model", dir}, {"usable", false}, {"reason", e.what()}}.dump(2) << "\n";
    err << "rgbaq model check: cannot use " << printable(dir) << ": " << printable(e.what()) << "\n";
    return 2;
  }
}

int quantize_command(const std::vector<std::string>& words, std::ostream& out, std::ostream& err) {
  const Arguments a(words, {"components"}, {"help"});
  if (a.has("help")) {
    out << kModelHelp;
    return 0;
  }
  if (a.positionals().size() != 2) throw UsageError("model quantize takes SRC and DST");
  std::vector<std::string> roles;
  std::stringstream list(a.get("components").value_or("transformer,text_encoder"));
  for (std::string role; std::getline(list, role, ',');) {
    if (role != "transformer" && role != "text_encoder") {
      throw UsageError("--components: \"" + role + "\" is not transformer or text_encoder");
    }
    roles.push_back(role);
  }
  if (roles.empty()) throw UsageError("--components names no component");
  try {
    const auto result = engine::quantize_model(a.positionals()[0], a.positionals()[1], roles);
    for (const auto& c : result.components) {
      out << c.role << ": " << c.quantized << " Linear weights to int8, " << format_bytes(c.bytes_before) << " -> "
          << format_bytes(c.bytes_after) << "\n";
    }
    out << "wrote " << printable(a.positionals()[1]) << "\n";
    return 0;
  } catch (const std::runtime_error& e) {
    err << "rgbaq model quantize: " << printable(e.what()) << "\n";
    return 2;
  }
}

}  // namespace

int run_model_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
      (args.empty() ? err : out) << kModelHelp;
      return args.empty() ? 2 : 0;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "check") return check_command(rest, out, err);
    if (args[0] == "quantize") return quantize_command(rest, out, err);
    if (args[0] == "pull") return model_pull_command(rest, out, err);
    throw UsageError("unknown model command \"" + args[0] + "\"");
  } catch (const UsageError& e) {
    err << "rgbaq model: " << printable(e.what()) << "\n" << kModelHelp;
    return 2;
  } catch (const std::exception& e) {
    err << "rgbaq model: " << printable(e.what()) << "\n";
    return 1;
  }
}

}  // namespace rgbaq::cli
