#pragma once
// Where a character of a field's value sits in its job file, for a message about a part of a value (a
// template's unclosed '{' in a prompt): its line and column (1-based, columns in characters as
// jobs/csv_reader.h counts them), through CSV quoting and JSON string escapes.
#include <cstddef>
#include <string_view>

namespace rgbaq::jobs {

struct FilePosition {
  int line = 0, column = 0;
};

// The CSV field whose first byte (its opening quote, if quoted) is byte `field_start` of `file`, at
// (`line`, `column`): where byte `offset` of its value came from. It reads from the field on, never
// from the file's start, so a file with many messages costs each only its own field.
FilePosition csv_value_position(std::string_view file, size_t field_start, int line, int column, size_t offset);

// The string value of `key` (compared without case, as the job file takes its fields) in the JSON
// object `line_text`, line `line` of a JSONL file: where byte `offset` of its decoded value came from;
// column 0 when the line holds no such string.
FilePosition jsonl_value_position(std::string_view line_text, int line, std::string_view key, size_t offset);

}  // namespace rgbaq::jobs
