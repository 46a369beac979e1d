#pragma once
// The help of each rgbaq command (`rgbaq COMMAND --help`, `rgbaq help COMMAND`): what it does, every
// option and every default. The global usage lists the commands; each entry here is the whole story.
#include <string>

namespace rgbaq::cli {

// The global usage: every command in one line or two.
extern const char* const kUsage;

// Every command rgbaq knows (main.cpp dispatches them), for "did you mean".
inline constexpr const char* kCommands[] = {"submit",     "watch",  "status",  "ls",       "cancel",  "retry", "pause",
                                            "resume",     "prioritize", "export", "sheet", "service", "http-url",
                                            "gallery",    "mark",   "rm",      "host",     "model",   "help",
                                            "qa"};

// The help of `command`, or nullptr for a command without one.
const char* command_help(const std::string& command);

// The known command nearest to `name` within two edits ("submti": "submit"), or "".
std::string nearest_command(const std::string& name);

}  // namespace rgbaq::cli
