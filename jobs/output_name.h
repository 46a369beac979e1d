#pragma once
// Output file names: a function of the job, never a raw prompt. "<name>_<seed>.png" when the row
// named it, the name kept as the user wrote it (game and UI assets are named `Treasure_Chest`, and the
// file must be found by that name), else "<prompt-slug>-<hash>_<seed>.png", the hash (of prompt and size)
// keeping prompts that slug alike, or differ only in size, apart. A seed has no '_', so the last '_' of a
// file name splits it back into name and seed: `a_1` seed 2 (`a_1_2.png`) is no other name's file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "host/image_size.h"

namespace rgbaq::jobs {

// Lower-case ASCII letters and digits, other runs as one '-', at most 48 characters; "image" if empty.
std::string slug(const std::string& text);

// The longest name a row may give: the file adds "_<seed>.png" (at most 25 bytes), far under the 255
// bytes a file name may have on every file system we write to.
inline constexpr size_t kMaxNameLength = 100;

// Why `name` cannot be used, as written, to name a row's files, or "" when it can: a usable name is 1 to
// kMaxNameLength ASCII letters, digits, '_', '-' and '.', not starting with '.' (a hidden file, "..").
// Nothing else, so that no name needs quoting in a shell, a URL or an asset path, none is a path, and
// none changes under a file system's Unicode normalisation (macOS). The reason names the first bad
// character and its position, and offers a usable spelling when one is plain ("Hero Shot": "Hero_Shot").
std::string name_problem(std::string_view name);

// The file name without "_<seed>.png": jobs whose bases are equal differ only by seed. A given name is
// the base as it is (only a prompt is slugged); one name_problem refuses throws std::invalid_argument,
// so no unchecked name becomes a path. A LoRA set (jobs/lora_list.h; "" for none, which leaves the name
// as it was before LoRAs) goes into the prompt's hash.
std::string output_base_name(const std::string& prompt, const std::string& name, const host::ImageSize& size,
                             const std::string& lora = "");

std::string output_file_name(const std::string& prompt, const std::string& name, uint64_t seed, const host::ImageSize& size,
                             const std::string& lora = "");

// A stable 64-bit key of a prompt: jobs that share it share an embedding.
uint64_t prompt_key(const std::string& prompt);

// A stable 64-bit key of a job's content (prompt, seed, size, name, output directory, LoRA set), for detecting
// resubmissions. 64 bits keep the index small; a collision among even ten million jobs has a chance
// of about 3e-6, and costs at worst one job skipped on an explicit --skip-duplicates.
uint64_t content_key(const std::string& prompt, uint64_t seed, const host::ImageSize& size, const std::string& name,
                        const std::string& out_dir, const std::string& lora = "");

// content_key's fields less the seed, keyed apart from it: the jobs of one row (one expansion of it),
// which differ only in seed, share it. Re-seeding finds a row's seeds by it (QueueStore::row_seeds).
uint64_t row_key(const std::string& prompt, const host::ImageSize& size, const std::string& name, const std::string& out_dir,
                 const std::string& lora = "");

}  // namespace rgbaq::jobs
