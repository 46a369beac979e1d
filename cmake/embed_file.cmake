# Run at build time (cmake -P): writes OUT, a C++ source that holds the bytes of IN as
# `std::string_view SYMBOL()` in namespace rgbaq::embedded, so rgbaqd serves them with no file beside it.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" length)
math(EXPR bytes "${length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," body "${hex}")
set(text "// Generated from ${IN} by cmake/embed_file.cmake; do not edit.\n#include <string_view>\nnamespace rgbaq::embedded {\nstatic const char data[] = {${body} 0};\nstd::string_view ${SYMBOL}() { return {data, ${bytes}}; }\n}  // namespace rgbaq::embedded\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
