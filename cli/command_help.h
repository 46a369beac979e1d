#pragma once
// The help of each rgbaq command (`rgbaq COMMAND --help`, `rgbaq help COMMAND`): what it does, every
// option and every default. The global usage lists the commands; each entry here is the whole story.
#include <string>

namespace rgbaq::cli {

// The global usage: every command in one line or two.
extern const char* const kUsage;

// The help of `command`, or nullptr for a command without one.
const char* command_help(const std::string& command);

}  // namespace rgbaq::cli
