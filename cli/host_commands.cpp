#include "cli/host_commands.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <functional>
#include <iostream>
#include <map>
#include <span>

#include <nlohmann/json.hpp>

#include "common/arguments.h"
#include "common/data_files.h"
#include "common/printable_text.h"
#include "host/image_size.h"
#include "host/noise.h"
#include "host/rope.h"
#include "host/schedule.h"
#include "tokenizer/prompt_template.h"
#include "tokenizer/tokenizer.h"

namespace rgbaq::cli {

using common::Arguments;
using common::UsageError;
namespace {

constexpr const char* kHostHelp = R"(usage: rgbaq host COMMAND [options]

Print the host contract's intermediate values, one per line with 9 significant digits
(exact for fp32), or as raw little-endian f32 with --format f32.

commands:
  noise     --seed S --size SIZE [--packed]     the initial noise for a seed
  rope      --text-len L --size SIZE [--model DIR]
                                                txt_cos, txt_sin, img_cos, img_sin
  sigmas    [--model DIR] [--timesteps] [--size SIZE] [--steps N]
                                                the sampler's sigmas (terminal 0 included)
  tokenize  [--template] [--tokenizer FILE | --model DIR]
                                                token ids of prompts read from stdin

SIZE is in pixels: 256, 512, 1024 or WxH (multiples of 16, 64..4096 tokens).
Run `rgbaq host COMMAND --help` for one command's details.
)";

constexpr const char* kNoiseHelp = R"(usage: rgbaq host noise --seed S --size SIZE [--packed] [--format text|f32]

torch.randn((1, 1, 64, h, w), generator=torch.Generator("cpu").manual_seed(S)) as the x86 AVX2 wheel
draws it, bit for bit. S is an integer in 0..2^64-1. Prints the flat draw in torch's order
(channel-major [64, h, w]); with --packed, the DiT's token layout [N, 64], x[y*w+x, c] = z[c, y, x].
)";

constexpr const char* kRopeHelp = R"(usage: rgbaq host rope --text-len L --size SIZE [--model DIR] [--format text|f32]

The DiT's RoPE inputs for L text tokens and an image of SIZE: txt_cos [L,64], txt_sin [L,64],
img_cos [N,64], img_sin [N,64], in that order, row by row. Tables come from DIR/host/rope_axis*.f32
when the model directory has them, from the formula otherwise.
)";

constexpr const char* kSigmasHelp = R"(usage: rgbaq host sigmas [--model DIR] [--timesteps] [--size SIZE] [--steps N] [--format text|f32]

The sampler's sigmas, terminal 0 included (9 values for the Turbo model), from DIR's model_index.json
and scheduler config, or the Turbo model's own grid without --model. --timesteps then also prints the
DiT's timestep inputs (timesteps[i] / 1000). SIZE (default 1024) matters only for models with dynamic
shifting; --steps only for models without a fixed grid.
)";

constexpr const char* kTokenizeHelp = R"(usage: rgbaq host tokenize [--template] [--tokenizer FILE | --model DIR]

Reads prompts from stdin, one JSON string per line, and prints one JSON array of token ids per line:
the ids the HF tokenizers library gives (no special tokens added; special-token text is matched).
With --template, the ids of the whole text-to-image template around the prompt, as the encoder
receives them (an empty prompt becomes " "; the encoder's 512-token limit is checked).
The tokenizer is FILE, DIR/processor/ or DIR/tokenizer/tokenizer.json, $RGBAQ_TOKENIZER, or the Qwen3 tokenizer.json
that ships with rgbaq.
)";

enum class Format { kText, kF32 };

Format output_format(const Arguments& a) {
  const auto f = a.get("format").value_or("text");
  if (f == "text") return Format::kText;
  if (f == "f32") return Format::kF32;
  throw UsageError("--format \"" + f + "\" is not one of text, f32");
}

void write_values(std::ostream& out, std::span<const float> values, Format format) {
  if (format == Format::kF32) {
    out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size_bytes()));
    return;
  }
  char buf[32];
  std::string text;
  text.reserve(values.size() * 16);
  for (float v : values) {
    const int n = std::snprintf(buf, sizeof buf, "%.9g\n", static_cast<double>(v));
    text.append(buf, static_cast<size_t>(n));
  }
  out << text;
}

host::ImageSize size_option(const Arguments& a, const char* fallback) {
  const auto text = fallback ? a.get("size").value_or(fallback) : a.require("size");
  try {
    return host::parse_image_size(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--size: ") + e.what());
  }
}

std::filesystem::path tokenizer_path(const Arguments& a) {
  if (const auto file = a.get("tokenizer")) return *file;
  if (const auto model = a.get("model")) {  // the published layout keeps it under processor/
    const auto processor = std::filesystem::path(*model) / "processor" / "tokenizer.json";
    return std::filesystem::exists(processor) ? processor : std::filesystem::path(*model) / "tokenizer" / "tokenizer.json";
  }
  if (const char* env = std::getenv("RGBAQ_TOKENIZER"); env && *env) return env;
  return common::data_file("tokenizer/qwen3/tokenizer.json", RGBAQ_DEFAULT_TOKENIZER);
}

int tokenize_command(const Arguments& a, std::istream& in, std::ostream& out) {
  if (a.has("tokenizer") && a.has("model")) throw UsageError("give --tokenizer or --model, not both");
  const auto tk = tokenizer::Tokenizer::from_file(tokenizer_path(a));
  std::optional<tokenizer::PromptTemplate> prompt_template;
  if (a.has("template")) prompt_template.emplace(tk);
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    try {
      const auto value = nlohmann::json::parse(line);
      if (!value.is_string()) throw std::invalid_argument("expected a JSON string, got " + std::string(value.type_name()));
      const auto& prompt = value.get_ref<const std::string&>();
      const auto ids = prompt_template ? prompt_template->apply(prompt).ids : tk.encode(prompt);
      out << nlohmann::json(ids).dump() << '\n';
    } catch (const std::exception& e) {
      out.flush();
      throw std::runtime_error("stdin line " + std::to_string(line_no) + ": " + e.what());
    }
  }
  return 0;
}

int noise_command(const Arguments& a, std::istream&, std::ostream& out) {
  const uint64_t seed = a.get_u64("seed", 0);
  a.require("seed");
  const auto size = size_option(a, nullptr);
  const auto z = host::initial_noise(seed, size);
  write_values(out, a.has("packed") ? host::pack_latents(z, size) : z, output_format(a));
  return 0;
}

int rope_command(const Arguments& a, std::istream&, std::ostream& out) {
  const int text_len = a.get_int("text-len", 0);
  a.require("text-len");
  const auto size = size_option(a, nullptr);
  const auto format = output_format(a);
  const auto model = a.get("model");
  const auto tables = model ? host::RopeTables::for_model(*model) : host::RopeTables::from_formula();
  host::RopeTensors r;
  try {
    r = host::build_rope(tables, text_len, size);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  for (const auto* v : {&r.txt_cos, &r.txt_sin, &r.img_cos, &r.img_sin}) write_values(out, *v, format);
  return 0;
}

int sigmas_command(const Arguments& a, std::istream&, std::ostream& out) {
  const auto format = output_format(a);
  const auto size = size_option(a, "1024");
  const int steps = a.get_int("steps", 0);
  const auto model = a.get("model");
  const auto config = model ? host::load_scheduler_config(*model) : host::turbo_scheduler_config();
  host::Schedule schedule;
  try {
    schedule = host::make_schedule(config, size.tokens(), steps);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  write_values(out, schedule.sigmas, format);
  if (a.has("timesteps")) {
    std::vector<float> t;
    for (int i = 0; i < schedule.steps(); ++i) t.push_back(schedule.dit_timestep(i));
    write_values(out, t, format);
  }
  return 0;
}

struct Subcommand {
  const char* help;
  std::set<std::string> valued, flags;
  std::function<int(const Arguments&, std::istream&, std::ostream&)> run;
};

const std::map<std::string, Subcommand>& subcommands() {
  static const std::map<std::string, Subcommand> table = {
      {"noise", {kNoiseHelp, {"seed", "size", "format"}, {"packed", "help"}, noise_command}},
      {"rope", {kRopeHelp, {"text-len", "size", "model", "format"}, {"help"}, rope_command}},
      {"sigmas", {kSigmasHelp, {"model", "size", "steps", "format"}, {"timesteps", "help"}, sigmas_command}},
      {"tokenize", {kTokenizeHelp, {"tokenizer", "model"}, {"template", "help"}, tokenize_command}},
  };
  return table;
}

}  // namespace

int run_host_command(const std::vector<std::string>& args, std::istream& in, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    (args.empty() ? err : out) << kHostHelp;
    return args.empty() ? 2 : 0;
  }
  const auto it = subcommands().find(args[0]);
  if (it == subcommands().end()) {
    err << "rgbaq host: unknown command \"" << common::printable(args[0]) << "\"\n" << kHostHelp;
    return 2;
  }
  const Subcommand& sub = it->second;
  try {
    const Arguments a({args.begin() + 1, args.end()}, sub.valued, sub.flags);
    if (a.has("help")) {
      out << sub.help;
      return 0;
    }
    if (!a.positionals().empty()) throw UsageError("unexpected argument \"" + a.positionals()[0] + "\"");
    const int code = sub.run(a, in, out);
    out.flush();
    return code;
  } catch (const UsageError& e) {
    err << "rgbaq host " << args[0] << ": " << common::printable(e.what()) << "\n(see rgbaq host " << args[0] << " --help)\n";
    return 2;
  } catch (const std::exception& e) {
    err << "rgbaq host " << args[0] << ": " << common::printable(e.what()) << "\n";
    return 1;
  }
}

}  // namespace rgbaq::cli
