#pragma once
// Output file names: a function of the job, never a raw prompt. "<name>_<seed>.png" when the row
// named it, else "<prompt-slug>-<hash>_<seed>.png", the hash (of prompt and size) keeping prompts that
// slug alike, or differ only in size, apart.
#include <cstdint>
#include <string>

#include "host/image_size.h"

namespace rgbaq::jobs {

// Lower-case ASCII letters and digits, other runs as one '-', at most 48 characters; "image" if empty.
std::string slug(const std::string& text);

// The file name without "_<seed>.png": jobs whose bases are equal differ only by seed. A LoRA set
// (jobs/lora_list.h; "" for none, which leaves the name as it was before LoRAs) goes into the hash.
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

}  // namespace rgbaq::jobs
