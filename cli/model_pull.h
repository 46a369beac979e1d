#pragma once
// `rgbaq model pull [REPO[@REV]] [--to DIR] [--endpoint URL] [--token-file F] [--quantize int8]`:
// resolves the revision to a commit on the Hub, downloads the files rgbaq reads (engine/model/model_files.h)
// and the small configs beside them into the huggingface_hub cache layout (engine/model/hf_cache.h), or
// into DIR, and prints the folder to give --model. Resumable (a partial file lives as
// NAME.incomplete until its bytes are complete and verified), verified (each LFS file's SHA-256),
// checked for free disk space before the first byte.
#include <iosfwd>
#include <string>
#include <vector>

namespace rgbaq::cli {

// The words after `model pull`. Returns the exit code: 0 ok, 1 failure (network, disk, a hash that
// does not match, a hostile listing, a folder another user controls), 2 usage, a repo or revision not
// found, a token refused, a repo that lacks files. Nothing is written outside the cache or DIR, nor
// through a link.
int model_pull_command(const std::vector<std::string>& words, std::ostream& out, std::ostream& err);

}  // namespace rgbaq::cli
