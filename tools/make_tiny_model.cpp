// make_tiny_model DIR [--seed N] [--f32] [--layout ours|published] [--dims tiny|real] [--int8] [--tokenizer FILE]: writes the tiny checkpoint (real layout,
// real tensor names, small dims) that every rendering test uses. --lora LORA_DIR writes its test LoRAs too (alone
// when DIR is left out).
#include <iostream>
#include <string>
#include <vector>

#include "common/arguments.h"
#include "common/data_files.h"
#include "tools/tiny_model.h"

int main(int argc, char** argv) {
  try {
    const rgbaq::common::Arguments args({argv + 1, argv + argc}, {"seed", "tokenizer", "layout", "dims", "lora"}, {"f32", "int8", "hollow", "help"});
    const auto lora_dir = args.get("lora");
    if (args.has("help") || args.positionals().size() > 1 || (args.positionals().empty() && !lora_dir)) {
      (args.has("help") ? std::cout : std::cerr)
          << "usage: make_tiny_model DIR [--seed N] [--f32] [--layout ours|published] [--dims tiny|real]\n"
             "                       [--int8] [--hollow] [--tokenizer FILE] [--lora LORA_DIR]\n"
             "       make_tiny_model --lora LORA_DIR [--seed N]\n"
             "Writes a tiny diffusers-layout RGBA-Image-2.1-Turbo checkpoint to DIR: BF16 weights (F32 with\n"
             "--f32), deterministic for a seed (default 0), the Qwen3 tokenizer.json that ships with rgbaq.\n"
             "--layout published lays it out as the published Qwen-Image-2.1 directory: processor/, the whole\n"
             "Qwen3-VL text encoder (lm_head, model.visual.*), the VAE encoder, 4-D convolutions.\n"
             "--int8 writes the Linear weights as int8 with bf16 block scales. --dims real writes the real\n"
             "model's dimensions with random weights (bf16: ~30 GB; --int8: ~16 GB), for benchmarks only.\n"
             "--hollow writes each weights file as its header and a hole (zeros, no disk, in moments): a\n"
             "real-dims model for the cuda engine's --random-weights (scripts/device-check).\n"
             "--lora LORA_DIR writes the tiny DiT's test LoRAs there: style-diffusers, style-comfyui and\n"
             "style-kohya (one adapter in the three key formats) and detail, each NAME.safetensors.\n";
      return args.has("help") ? 0 : 2;
    }
    rgbaq::tools::TinyModelOptions options;
    options.seed = args.get_u64("seed", 0);
    options.dtype = args.has("f32") ? rgbaq::engine::DType::kF32 : rgbaq::engine::DType::kBF16;
    const std::string layout = args.get("layout").value_or("ours");
    if (layout != "ours" && layout != "published") {
      throw rgbaq::common::UsageError("--layout must be ours or published, not \"" + layout + "\"");
    }
    options.layout = layout == "published" ? rgbaq::tools::Layout::kPublished : rgbaq::tools::Layout::kOurs;
    const std::string dims = args.get("dims").value_or("tiny");
    if (dims != "tiny" && dims != "real") throw rgbaq::common::UsageError("--dims must be tiny or real, not \"" + dims + "\"");
    options.real_dims = dims == "real";
    options.int8_linears = args.has("int8");
    options.hollow = args.has("hollow");
    options.tokenizer_json = args.get("tokenizer").value_or(
        rgbaq::common::data_file("tokenizer/qwen3/tokenizer.json", RGBAQ_DEFAULT_TOKENIZER).string());
    if (lora_dir) {
      rgbaq::tools::write_tiny_loras(*lora_dir, rgbaq::tools::tiny_dit_config(), options.seed);
      std::cout << "wrote the tiny model's test LoRAs to " << *lora_dir << "\n";
    }
    if (args.positionals().empty()) return 0;
    rgbaq::tools::write_tiny_model(args.positionals()[0], options);
    std::cout << "wrote the tiny model to " << args.positionals()[0] << "\n";
    return 0;
  } catch (const rgbaq::common::UsageError& e) {
    std::cerr << "make_tiny_model: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "make_tiny_model: " << e.what() << "\n";
    return 1;
  }
}
