#include "jobs/csv_reader.h"

#include <algorithm>

#include "jobs/utf8_text.h"

namespace rgbaq::jobs {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
  }

  CsvDocument read() {
    CsvDocument doc;
    while (pos_ < text_.size()) {
      CsvRecord record;
      record.line = line_;
      std::string error;
      int error_line = 0, error_column = 0;
      bool end_of_record = false;
      while (!end_of_record) {
        CsvField field;
        field.line = line_;
        field.column = column_;
        field.offset = pos_;
        if (peek() == '"') {
          field.quoted = true;
          const int open_line = line_, open_column = column_;
          advance();
          bool closed = false;
          while (pos_ < text_.size()) {
            const char c = peek();
            if (c == '"') {
              advance();
              if (peek() == '"') {
                field.value += '"';
                advance();
                continue;
              }
              closed = true;
              break;
            }
            field.value += c;
            advance();
          }
          if (!closed) {
            doc.errors.push_back({open_line, open_column, "a quoted field is never closed"});
            return doc;
          }
          if (pos_ < text_.size() && peek() != ',' && !at_line_end() && error.empty()) {
            if (line_ > open_line) {
              // A quote left open swallows the lines after it until the next quote: the mistake is
              // where it opened, not where the swallowed text goes wrong.
              error = "this quote is not closed on its line: the field runs on to line " + std::to_string(line_) +
                      ", where a quote ends it in mid-field (a closing quote missing here?)";
              error_line = open_line, error_column = open_column;
            } else {
              error = "unexpected character after a closing quote (a quote inside a field is written \"\")";
              error_line = line_, error_column = column_;
            }
          }
          while (pos_ < text_.size() && peek() != ',' && !at_line_end()) advance();
        } else {
          // An unquoted field holds no line ends, so it can be taken whole.
          const size_t end = std::min(text_.find_first_of(",\r\n", pos_), text_.size());
          const std::string_view run = text_.substr(pos_, end - pos_);
          if (const size_t quote = run.find('"'); quote != std::string_view::npos && error.empty()) {
            error = "a quote inside an unquoted field (quote the whole field and double the quote)";
            error_line = line_;
            error_column = column_ + count_chars(run.substr(0, quote));
          }
          field.value.assign(run);
          column_ += count_chars(run);
          pos_ = end;
        }
        record.fields.push_back(std::move(field));
        if (pos_ < text_.size() && peek() == ',') {
          advance();
        } else {
          skip_line_end();
          end_of_record = true;
        }
      }
      if (!error.empty()) {
        doc.errors.push_back({error_line, error_column, error});
      } else if (!(record.fields.size() == 1 && record.fields[0].value.empty() && !record.fields[0].quoted)) {
        doc.records.push_back(std::move(record));
      }
    }
    return doc;
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool at_line_end() const { return peek() == '\n' || peek() == '\r'; }
  void advance() {
    const char c = text_[pos_++];
    if (c == '\n' || (c == '\r' && peek() != '\n')) {
      ++line_;
      column_ = 1;
    } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80 && c != '\r') {
      ++column_;  // count characters, not UTF-8 continuation bytes
    }
  }
  void skip_line_end() {
    if (peek() == '\r') advance();
    if (peek() == '\n') advance();
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1, column_ = 1;
};

}  // namespace

CsvDocument read_csv(std::string_view text) { return Reader(text).read(); }

}  // namespace rgbaq::jobs
