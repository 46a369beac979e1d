#pragma once
// Text from outside (a prompt, a run's name, a file's tensor key, a client's request) as a terminal or
// a log line may show it: every control character escaped, so that it can neither drive the terminal
// (OSC 52 writing the clipboard, CSI 2J clearing the screen, OSC 8 forging a link) nor forge a line of
// its own. The one function every human-readable print of rgbaq and every log line of rgbaqd uses.
#include <string>
#include <string_view>

namespace rgbaq::common {

// `text` with newline, carriage return and tab as \n, \r, \t; other C0 controls and DEL as \xHH (ESC is
// \x1b); C1 controls (U+0080..U+009F) as \u0085; each byte of invalid UTF-8 as \xHH. Printable text,
// UTF-8 included, is kept as it is. `keep_newlines`: a message of several lines keeps its line breaks.
std::string printable(std::string_view text, bool keep_newlines = false);

}  // namespace rgbaq::common
