#pragma once
// What a binary says for --version: the project version, the git commit it was built from (with
// "-dirty" when the tree had changes), and the engines compiled in.
#include <string>
#include <vector>

namespace rgbaq::common {

const char* project_version();
const char* git_commit();  // "unknown" when built outside a git checkout

// "rgbaqd 0.1.0 (git 1a2b3c4d5e6f)\nengines: cpu, cuda\n"
std::string version_text(const std::string& program, const std::vector<std::string>& engines);

}  // namespace rgbaq::common
