#include "cli/model_command.h"

#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/download_progress.h"
#include "cli/model_pull.h"
#include "common/arguments.h"
#include "common/data_files.h"
#include "common/printable_text.h"
#include "engine/model/component_files.h"
#include "engine/model/hf_cache.h"
#include "engine/model/model_directory.h"
#include "engine/model/comfy_quantizer.h"
#include "engine/model/convrot.h"
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
  check DIR|REPO [--dit FILE] [--text-encoder FILE] [--vae FILE] [--json] [--precision bf16|fp32|fp8]
                 [--gpu-int8 widen|keep|w8a8] [--vae-tiles on|off] [--attention gemm|fused] [--fused-blocks on|off]
  check --dit FILE --text-encoder FILE --vae FILE [...]   (no directory: rgbaq's own tokenizer)
                          read a model directory (or a repo's snapshot in the Hugging Face cache)
                          without rendering: per component its class, dtypes, tensors (used /
                          ignored), bytes; a single file (ComfyUI's) given for a component, as
                          rgbaqd takes it: its file, format and bytes; the sampler; the memory a render needs on each engine
                          at 256, 512 and 1024 (estimated; cuda at the rgbaqd flags given, as its
                          session counts it). Exit 2 when rgbaq cannot use it.
  quantize SRC DST [--components transformer,text_encoder]
                          write a copy of SRC whose Linear weights are int8 (one bf16 scale per 32
                          inputs, stored as WEIGHT_scale); norms, embeddings and the VAE as stored
  quantize SRC DST --format int8-convrot|fp8-scaled [--group 256] [--components ...]
                          write each component as one ComfyUI-layout file, DST/transformer.safetensors
                          and DST/text_encoder.safetensors (for --dit / --text-encoder, or ComfyUI's
                          models/ folders): Linear weights INT8 ConvRot (one scale a row, inputs
                          rotated in groups of --group, a power of four) or FP8 E4M3 with one scale
)";

int threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// `cuda`: the cuda session the memory rows are for (rgbaqd's --precision, --gpu-int8, --vae-tiles,
// --attention and --fused-blocks).
std::vector<engine::RenderMemory> memory_rows(const engine::ModelDirectory& model, const engine::EngineOptions& cuda) {
  return engine::estimate_render_memory(model, threads(), cuda);
}

// The model's components; with no directory (three component files), one per weight component checked.
std::vector<engine::ModelComponent> listed_components(const engine::ModelDirectory& model) {
  if (!model.root().empty()) return model.components();
  std::vector<engine::ModelComponent> out;
  for (const auto& r : model.reports()) out.push_back({r.component, "", "", ""});
  return out;
}

// The single file standing in for the component of `role`, or null.
const std::filesystem::path* single_file(const engine::ComponentFiles& files, const std::string& role) {
  const auto& file = files.for_role(role);
  return file.empty() ? nullptr : &file;
}

json check_json(const engine::ModelDirectory& model, const engine::ComponentFiles& files, const engine::EngineOptions& cuda) {
  json components = json::array();
  for (const auto& c : listed_components(model)) {
    json entry = {{"role", c.role}, {"folder", c.folder}, {"library", c.library}, {"class", c.class_name}};
    if (const auto* file = single_file(files, c.role)) {
      const auto d = engine::describe_component_file(*file);
      entry["file"] = {{"path", file->string()}, {"format", d.format}, {"bytes", d.bytes}, {"hash", d.identity}};
    }
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
          {"components", components}, {"memory", memory}, {"memory_threads", threads()}, {"notes", model.notes()}};
}

void print_check(const engine::ModelDirectory& model, const engine::ComponentFiles& files, const engine::EngineOptions& cuda,
                 std::ostream& out) {
  out << printable(model.root().empty() ? "component files" : model.root().string()) << ": " << printable(model.pipeline_class())
      << ", usable\n";
  out << "sampler: " << model.sampler_description() << "\n";
  for (const auto& note : model.notes()) out << "note: " << printable(note) << "\n";  // what came from rgbaq's own data
  for (const auto& c : listed_components(model)) {
    out << "  " << std::left << std::setw(13) << c.role << std::setw(14) << printable(c.folder.empty() ? "" : c.folder + "/") << printable(c.class_name);
    if (const auto* file = single_file(files, c.role)) {
      const auto d = engine::describe_component_file(*file);
      out << "\n      file " << printable(file->string()) << ": " << d.format << ", " << d.bytes << " bytes (" << format_bytes(d.bytes)
          << "), hash " << d.identity;
    }
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

// --dit, --text-encoder, --vae (rgbaqd's flags): the single files standing in for components.
engine::ComponentFiles component_files(const Arguments& a) {
  engine::ComponentFiles files;
  for (const auto& [flag, file] : {std::pair{"dit", &files.dit}, {"text-encoder", &files.text_encoder}, {"vae", &files.vae}}) {
    const auto v = a.get(flag);
    if (!v) continue;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*v, ec)) throw UsageError(std::string("--") + flag + " " + *v + ": no such file");
    *file = std::filesystem::absolute(*v).lexically_normal();
  }
  return files;
}

int check_command(const std::vector<std::string>& words, std::ostream& out, std::ostream& err) {
  const Arguments a(words, {"precision", "gpu-int8", "vae-tiles", "attention", "fused-blocks", "dit", "text-encoder", "vae"},
                    {"json", "help"});
  if (a.has("help")) {
    out << kModelHelp;
    return 0;
  }
  const engine::ComponentFiles files = component_files(a);
  const bool all_files = !files.dit.empty() && !files.text_encoder.empty() && !files.vae.empty();
  if (a.positionals().size() > 1 || (a.positionals().empty() && !all_files)) {
    throw UsageError("model check takes one directory or repo id, or --dit, --text-encoder and --vae without one");
  }
  const std::string dir = a.positionals().empty() ? "" : a.positionals()[0];
  engine::EngineOptions cuda;
  cuda.precision = common::parse_option("precision", a.get("precision").value_or("bf16"), engine::parse_precision);
  cuda.gpu_int8 = common::parse_option("gpu-int8", a.get("gpu-int8").value_or("widen"), engine::parse_gpu_int8);
  cuda.vae_tiles = common::parse_option("vae-tiles", a.get("vae-tiles").value_or("off"), engine::parse_on_off);
  cuda.attention = common::parse_option("attention", a.get("attention").value_or("gemm"), engine::parse_attention_kernel);
  cuda.fused_blocks = common::parse_option("fused-blocks", a.get("fused-blocks").value_or("off"), engine::parse_on_off);
  try {
    // No directory: rgbaq's own tokenizer, as rgbaqd takes it.
    const auto model = dir.empty() ? engine::ModelDirectory::open({}, files, common::data_file("tokenizer/qwen3/tokenizer.json", RGBAQ_DEFAULT_TOKENIZER))
                                   : engine::ModelDirectory::open(engine::resolve_model_argument(dir), files);
    if (a.has("json")) {
      out << check_json(model, files, cuda).dump(2) << "\n";
    } else {
      print_check(model, files, cuda, out);
    }
    return 0;
  } catch (const std::runtime_error& e) {
    // The engine names the file at fault; the flag that gave it is said before it.
    std::string reason = e.what();
    for (const auto& [flag, file] : {std::pair{"--dit", &files.dit}, {"--text-encoder", &files.text_encoder}, {"--vae", &files.vae}}) {
      if (!file->empty() && reason.find(file->filename().string()) != std::string::npos) {
        reason = flag + (": " + reason);
        break;
      }
    }
    if (a.has("json")) out << json{{"model", dir}, {"usable", false}, {"reason", reason}}.dump(2) << "\n";
    err << "rgbaq model check: cannot use " << printable(dir.empty() ? "the component files" : dir) << ": " << printable(reason) << "\n";
    return 2;
  }
}

// quantize --format: ComfyUI-layout single files (engine/model/comfy_quantizer.h).
int quantize_comfy_command(const Arguments& a, const std::vector<std::string>& roles, std::ostream& out, std::ostream& err) {
  engine::ComfyQuantizeOptions options;
  options.format = common::parse_option("format", *a.get("format"), engine::parse_comfy_format);
  options.roles = roles;
  if (const auto group = a.get("group")) {
    if (options.format != engine::ComfyFormat::kInt8ConvRot) throw UsageError("--group is for --format int8-convrot");
    options.convrot_group = common::parse_option("group", *group, [](const std::string& v) {
      const auto g = common::parse_u64(v);
      if (!g || *g > static_cast<uint64_t>(engine::kMaxConvRotWidth) || !engine::is_convrot_group(static_cast<int64_t>(*g))) {
        throw std::invalid_argument("\"" + v + "\" is not a power of four >= 4");
      }
      return static_cast<int>(*g);
    });
  }
  try {
    const auto result = engine::quantize_model_comfy(a.positionals()[0], a.positionals()[1], options);
    for (const auto& c : result.components) {
      out << c.role << ": " << c.quantized << " Linear weights to " << engine::comfy_format_name(options.format) << ", "
          << format_bytes(c.bytes_before) << " -> " << format_bytes(c.bytes_after) << ": "
          << printable((std::filesystem::path(a.positionals()[1]) / (c.role + ".safetensors")).string()) << "\n";
    }
    return 0;
  } catch (const std::runtime_error& e) {
    err << "rgbaq model quantize: " << printable(e.what()) << "\n";
    return 2;
  }
}

int quantize_command(const std::vector<std::string>& words, std::ostream& out, std::ostream& err) {
  const Arguments a(words, {"components", "format", "group"}, {"help"});
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
  if (a.get("format")) return quantize_comfy_command(a, roles, out, err);
  if (a.get("group")) throw UsageError("--group is for --format int8-convrot");
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
