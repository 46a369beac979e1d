#pragma once
// RFC 4180 CSV: quoted fields with embedded commas, quotes ("") and newlines, CRLF or LF line ends, an
// optional UTF-8 byte-order mark. Each record knows the line it starts on and each field its column.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rgbaq::jobs {

struct CsvField {
  std::string value;
  int line = 0;    // 1-based line where the field starts
  int column = 0;  // 1-based, in characters of that line
  bool quoted = false;
  size_t offset = 0;  // the byte of the text where the field starts (its opening quote, if quoted)
};

struct CsvRecord {
  int line = 0;
  std::vector<CsvField> fields;
};

struct CsvError {
  int line = 0, column = 0;
  std::string message;
};

struct CsvDocument {
  std::vector<CsvRecord> records;  // blank lines skipped
  std::vector<CsvError> errors;    // a malformed record is reported and skipped; reading goes on
};

CsvDocument read_csv(std::string_view text);

}  // namespace rgbaq::jobs
