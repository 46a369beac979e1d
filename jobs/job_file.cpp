#include "jobs/job_file.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "jobs/csv_reader.h"
#include "jobs/field_position.h"
#include "jobs/lora_list.h"
#include "jobs/output_name.h"
#include "jobs/qa_flags.h"
#include "jobs/prompt_template.h"
#include "jobs/utf8_text.h"
#include "common/hash.h"
#include "common/json_nesting.h"
#include "common/printable_text.h"
#include "host/rope.h"

namespace rgbaq::jobs {
namespace {

constexpr std::string_view kFields[] = {"prompt", "seed", "count", "size", "name", "priority", "lora", "reseed_on", "reseed_max"};
constexpr int kFieldCount = 9;

// The field's index in kFields, or -1.
int field_index(std::string_view f) {
  for (int i = 0; i < kFieldCount; ++i) {
    if (kFields[i] == f) return i;
  }
  return -1;
}
bool known_field(const std::string& f) { return field_index(f) >= 0; }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// A row before validation: each field's text (if given) and where it was.
struct RawValue {
  std::string text;
  int column = 0;
  bool given = false;
  int line = 0;  // a CSV field's own line (a record may span lines); 0: the row's
  size_t offset = 0;  // a CSV field's first byte in the file
};
struct RawRow {
  int line = 0;
  std::string_view source;  // a JSONL row's line
  std::array<RawValue, kFieldCount> values;
  const RawValue* find(const std::string& field) const {
    const RawValue& v = values[field_index(field)];
    return v.given ? &v : nullptr;
  }
  void set(const std::string& field, std::string text, int column, int line = 0, size_t offset = 0) {
    values[field_index(field)] = {std::move(text), column, true, line, offset};
  }
};

// A field's text as a message quotes it: printable (common/printable_text.h), and at most 60 bytes of it.
std::string excerpt(const std::string& text) {
  size_t n = std::min<size_t>(text.size(), 60);
  while (n < text.size() && n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // whole characters
  return common::printable(std::string_view(text).substr(0, n)) + (n < text.size() ? "..." : "");
}

std::optional<int64_t> parse_int(const std::string& text) {
  const std::string t = trim(text);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

// The columns of `rgbaq export --format csv` that are no job field: a file with all of them is an
// export, submitted again (width and height make the size; the rest is ignored, with a note).
constexpr std::string_view kExportOnlyColumns[] = {"job", "run", "state", "width", "height", "output",
                                                   "error", "attempts", "seconds", "host", "mark"};
// Columns an export has when its run has them (an older export lacks them): ignored as those are.
constexpr std::string_view kExportOptionalColumns[] = {"template", "choices", "qa", "replaces"};

// A text cell as the export wrote it: one a spreadsheet would take for a formula got a leading '
// (OWASP's defence, cli/queue_commands.cpp's csv_text), which is not part of the value.
std::string unneutralised(std::string cell) {
  if (cell.size() >= 2 && cell[0] == '\'' && std::string_view("=+-@\t\r").find(cell[1]) != std::string_view::npos) cell.erase(0, 1);
  return cell;
}

void read_csv_rows(std::string_view text, std::vector<RawRow>& rows, std::vector<FileError>& errors,
                   std::vector<std::string>& ignored_columns) {
  CsvDocument doc = read_csv(text);
  for (size_t i = 0; i < doc.errors.size() && i <= kMaxFileErrors; ++i) {
    errors.push_back({doc.errors[i].line, doc.errors[i].column, "", doc.errors[i].message});
  }
  if (doc.records.empty()) {
    if (doc.errors.empty()) errors.push_back({0, 0, "", "the file has no header row (a CSV needs one naming its columns: prompt, seed, ...)"});
    return;
  }
  const CsvRecord& header = doc.records.front();
  // A header of one field that splits at ';' into columns we know: a spreadsheet's "CSV" of a locale
  // with decimal commas. One error says so, not one per column it seems to lack.
  if (header.fields.size() == 1 && header.fields[0].value.find(';') != std::string::npos) {
    const std::string& h = header.fields[0].value;
    bool ours = false;
    for (size_t b = 0, e; b <= h.size(); b = e + 1) {
      e = std::min(h.find(';', b), h.size());
      ours = ours || known_field(lower(trim(h.substr(b, e - b))));
    }
    if (ours) {
      errors.push_back({header.line, 0, "", "this file uses ';', not ',', between fields: save it as CSV with commas "
                                            "(or write it as JSONL, one {\"prompt\": ...} a line)"});
      return;
    }
  }
  std::set<std::string> header_names;
  for (const auto& f : header.fields) header_names.insert(lower(trim(f.value)));
  const bool is_export = std::all_of(std::begin(kExportOnlyColumns), std::end(kExportOnlyColumns),
                                     [&](std::string_view c) { return header_names.count(std::string(c)) > 0; });
  std::vector<std::string> columns;
  std::set<std::string> seen;
  bool header_ok = true;
  for (const auto& f : header.fields) {
    std::string name = lower(trim(f.value));
    const bool export_column = is_export && (std::find(std::begin(kExportOnlyColumns), std::end(kExportOnlyColumns), name) !=
                                                 std::end(kExportOnlyColumns) ||
                                             std::find(std::begin(kExportOptionalColumns), std::end(kExportOptionalColumns), name) !=
                                                 std::end(kExportOptionalColumns));
    if (export_column) {
      if (name != "width" && name != "height") ignored_columns.push_back(name);
    } else if (!known_field(name)) {
      errors.push_back({f.line, f.column, name, "unknown column \"" + trim(f.value) +
                                                    "\" (columns: prompt, seed, count, size, name, priority, lora, reseed_on, reseed_max)"});
      header_ok = false;
    } else if (!seen.insert(name).second) {
      errors.push_back({f.line, f.column, name, "column \"" + name + "\" appears twice"});
      header_ok = false;
    } else if (is_export && name == "size") {
      errors.push_back({f.line, f.column, name, "a size column beside the export's width and height: give one or the other"});
      header_ok = false;
    }
    columns.push_back(export_column && name != "width" && name != "height" ? "" : name);
  }
  if (!seen.count("prompt")) {
    errors.push_back({header.line, 0, "prompt", "the header has no \"prompt\" column"});
    header_ok = false;
  }
  if (!header_ok) return;
  for (size_t r = 1; r < doc.records.size() && errors.size() <= kMaxFileErrors; ++r) {
    CsvRecord& rec = doc.records[r];
    if (rec.fields.size() != columns.size()) {
      errors.push_back({rec.line, 0, "", "has " + std::to_string(rec.fields.size()) + " fields; the header has " +
                                             std::to_string(columns.size())});
      continue;
    }
    RawRow row;
    row.line = rec.line;
    const CsvField *width = nullptr, *height = nullptr;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i].empty()) continue;  // an export's column that is no job field
      if (columns[i] == "width") width = &rec.fields[i];
      if (columns[i] == "height") height = &rec.fields[i];
      if (columns[i] == "width" || columns[i] == "height") continue;
      // An empty unquoted cell is "not given", so defaults apply; "" is an empty value.
      if (rec.fields[i].value.empty() && !rec.fields[i].quoted && columns[i] != "prompt") continue;
      std::string value = std::move(rec.fields[i].value);
      if (is_export && (columns[i] == "prompt" || columns[i] == "name" || columns[i] == "lora")) value = unneutralised(std::move(value));
      row.set(columns[i], std::move(value), rec.fields[i].column, rec.fields[i].line, rec.fields[i].offset);
    }
    if (width && height && !(width->value.empty() && height->value.empty())) {
      row.set("size", trim(width->value) + "x" + trim(height->value), width->column);
    }
    rows.push_back(std::move(row));
  }
}

void read_jsonl_rows(std::string_view text, std::vector<RawRow>& rows, std::vector<FileError>& errors) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  int line_no = 0;
  size_t start = 0;
  while (start < text.size() && errors.size() <= kMaxFileErrors) {
    ++line_no;
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (const size_t bad = invalid_utf8_at(line); bad != std::string_view::npos) {
      errors.push_back({line_no, static_cast<int>(bad) + 1, "", "invalid UTF-8"});
      continue;
    }
    if (const size_t deep = common::json_too_deep_at(line, kMaxJsonDepth); deep != std::string_view::npos) {
      errors.push_back({line_no, static_cast<int>(deep) + 1, "", "nests deeper than " + std::to_string(kMaxJsonDepth) +
                                                                     " levels of brackets"});
      continue;
    }
    const auto doc = nlohmann::json::parse(line, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      errors.push_back({line_no, 0, "", "is not a JSON object"});
      continue;
    }
    RawRow row;
    row.line = line_no;
    row.source = line;
    for (const auto& [key, value] : doc.items()) {
      const std::string name = lower(key);
      if (!known_field(name)) {
        errors.push_back({line_no, 0, key, "unknown field \"" + key + "\" (fields: prompt, seed, count, size, name, priority, lora, reseed_on, reseed_max)"});
        continue;
      }
      if (value.is_null() && name != "prompt") continue;
      std::string textv;
      if ((name == "prompt" || name == "name" || name == "lora") && !value.is_string()) {
        errors.push_back({line_no, 0, name, "has the wrong type (" + std::string(value.type_name()) + "); it must be a string"});
        continue;
      }
      if (value.is_string()) {
        textv = value.get<std::string>();
      } else if (value.is_number_unsigned() || value.is_number_integer()) {
        textv = value.dump();
      } else if (value.is_array() && (name == "seed" || name == "reseed_on")) {
        for (const auto& s : value) textv += (textv.empty() ? "" : ",") + (s.is_string() ? s.get<std::string>() : s.dump());
      } else {
        errors.push_back({line_no, 0, name, "has the wrong type (" + std::string(value.type_name()) + ")"});
        continue;
      }
      row.set(name, std::move(textv), 0);
    }
    if (!row.find("prompt")) {
      bool reported = false;  // this line's errors are the last ones
      for (auto e = errors.rbegin(); e != errors.rend() && e->line == line_no && !reported; ++e) reported = e->field == "prompt";
      if (!reported) errors.push_back({line_no, 0, "prompt", "is missing"});
      continue;
    }
    rows.push_back(std::move(row));
  }
}

// Disjoint seed ranges, merged: what a row content has listed so far.
class SeedSet {
 public:
  // Appends to `out` the parts of r not yet in the set (ascending), then adds r. Returns how many seeds
  // it appended minus one (0 when one; UINT64_MAX when none), so that the full range does not overflow.
  uint64_t take(const SeedRange& r, std::vector<SeedRange>& out) {
    uint64_t next = r.first;  // the first seed of r not yet accounted for
    bool done = false;
    uint64_t taken_minus_one = UINT64_MAX;
    auto push = [&](uint64_t a, uint64_t b) {
      out.push_back({a, b});
      taken_minus_one += (b - a) + 1;
    };
    auto it = ranges_.upper_bound(r.first);
    if (it != ranges_.begin() && std::prev(it)->second >= r.first) --it;
    for (; it != ranges_.end() && it->first <= r.last && !done; ++it) {
      if (it->first > next) push(next, it->first - 1);
      if (it->second >= r.last) done = true;
      else next = std::max(next, it->second + 1);
    }
    if (!done) push(next, r.last);
    add(r);
    return taken_minus_one;
  }
  void add(SeedRange r) {
    auto it = ranges_.upper_bound(r.first);
    if (it != ranges_.begin() && (std::prev(it)->second >= r.first || std::prev(it)->second + 1 == r.first)) --it;
    while (it != ranges_.end() && (it->first <= r.last || (r.last != UINT64_MAX && it->first == r.last + 1))) {
      r.first = std::min(r.first, it->first);
      r.last = std::max(r.last, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace(r.first, r.last);
  }
 private:
  std::map<uint64_t, uint64_t> ranges_;  // first -> last
};

// The seeds in the ranges, saturating at UINT64_MAX.
uint64_t row_seed_count(const std::vector<SeedRange>& ranges) {
  return SeedSpec{ranges}.count();
}

}  // namespace

std::string FileError::to_string(const std::string& file_name) const {
  std::string where = file_name;
  if (line > 0) where += ":" + std::to_string(line);
  if (line > 0 && column > 0) where += ":" + std::to_string(column);
  return where + ": " + (field.empty() ? "" : field + ": ") + message;
}

FileFormat format_for_path(const std::string& path) {
  const std::string l = lower(path);
  return l.ends_with(".jsonl") || l.ends_with(".ndjson") ? FileFormat::kJsonl : FileFormat::kCsv;
}

JobFile parse_job_file(std::string_view text, FileFormat format, const ParseOptions& options) {
  JobFile out;
  std::vector<RawRow> rows;
  if (format == FileFormat::kCsv) {
    read_csv_rows(text, rows, out.errors, out.ignored_columns);
  } else {
    read_jsonl_rows(text, rows, out.errors);
  }

  // Defaults are checked once, as options.
  std::string default_error;
  std::optional<SeedSpec> default_seeds;
  if (options.defaults.seeds) {
    default_seeds = parse_seed_spec(*options.defaults.seeds, default_error);
    if (!default_seeds) out.errors.push_back({0, 0, "--seeds", default_error});
  }
  // Each distinct LoRA is checked once, however many rows name it: the check may read its file.
  std::map<std::string, std::string> lora_checked;
  auto lora_problem = [&](const std::string& name) -> const std::string& {
    const auto [it, fresh] = lora_checked.try_emplace(name);
    if (fresh) it->second = options.check_lora(name);
    return it->second;
  };
  std::vector<LoraItem> default_loras;
  if (options.defaults.lora) {
    std::string why;
    if (auto items = parse_lora_list(*options.defaults.lora, why)) default_loras = std::move(*items);
    else out.errors.push_back({0, 0, "--lora", why});
    for (const auto& item : default_loras) {
      if (!options.check_lora) break;
      if (const std::string& w = lora_problem(item.name); !w.empty()) out.errors.push_back({0, 0, "--lora", w});
    }
  }
  if (options.defaults.count < 1) {
    out.errors.push_back({0, 0, "--count", std::to_string(options.defaults.count) + " is not a positive integer"});
  }
  if (options.defaults.priority < kMinPriority || options.defaults.priority > kMaxPriority) {
    out.errors.push_back({0, 0, "--priority", std::to_string(options.defaults.priority) + " is not an integer in -1000000..1000000"});
  }
  // Re-seeding's flags, as a row's reseed_on field or --reseed-on gives them: "" none, else the flags
  // in their canonical order; nullopt (with the error added) for an unknown one.
  const auto reseed_flags = [&](const std::string& text, const std::function<void(const std::string&)>& fail) -> std::optional<std::string> {
    if (trim(text).empty()) return std::string();
    try {
      return qa_flags_text(parse_qa_flag_list(text));
    } catch (const std::invalid_argument& e) {
      fail(e.what());
      return std::nullopt;
    }
  };
  const std::string default_reseed_on = reseed_flags(options.defaults.reseed_on, [&](const std::string& why) {
    out.errors.push_back({0, 0, "--reseed-on", why});
  }).value_or("");
  const std::string reseed_max_range = " is not an integer in 0.." + std::to_string(kMaxReseedMax);
  if (options.defaults.reseed_max < 0 || options.defaults.reseed_max > kMaxReseedMax) {
    out.errors.push_back({0, 0, "--reseed-max", std::to_string(options.defaults.reseed_max) + reseed_max_range});
  }
  // A bad --size is one error about the option, not one per row that would have used it.
  bool default_size_ok = true;
  try {
    host::check_rope_positions(host::parse_image_size(options.defaults.size));
  } catch (const std::invalid_argument& e) {
    out.errors.push_back({0, 0, "--size", e.what()});
    default_size_ok = false;
  }
  bool too_many_reported = false;  // the job limit is one cause: reported once
  uint64_t would_be = 0;           // the images of the rows validated, for the limit's message
  size_t too_many_at = 0;          // 1 + the index of the file's limit error, when the file's total is to be added

  struct Validated {
    const RawRow* raw;
    std::string prompt, name, lora;
    std::optional<SeedSpec> seeds;
    uint64_t count;
    host::ImageSize size;
    int priority;
    std::shared_ptr<const std::string> template_text;  // a template's expansion (JobRow's)
    std::string choices_json;
    std::optional<uint64_t> drawn_seed;       // the seed drawn for a template row without one, shared by its combinations
    std::string reseed_on;                    // JobRow's
    int reseed_max = 0;
  };
  // Prompts are parsed as templates unless told not to; an export's prompts are its jobs' expanded ones.
  TemplateParser templates(options.wildcards);
  const bool expand_templates = options.templates && out.ignored_columns.empty();
  std::random_device device;
  auto draw = [&]() -> uint64_t {
    if (options.random_seed) return options.random_seed();
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  };
  std::vector<Validated> valid;
  uint64_t total = 0;
  for (const RawRow& row : rows) {
    if (out.errors.size() > kMaxFileErrors) break;  // enough to fix first; see the end
    const size_t errors_before = out.errors.size();
    auto error = [&](const std::string& field, const std::string& message) {
      const RawValue* v = row.find(field);
      out.errors.push_back({row.line, v ? v->column : 0, field, message});
    };
    auto value = [&](const std::string& field) -> const std::string* {
      const RawValue* v = row.find(field);
      return v ? &v->text : nullptr;
    };
    Validated v{&row, "", "", "", default_seeds, static_cast<uint64_t>(options.defaults.count), {}, options.defaults.priority};
    v.reseed_on = default_reseed_on;
    v.reseed_max = options.defaults.reseed_max;
    v.prompt = value("prompt") ? *value("prompt") : "";
    // The prompt's LoRAs and text: the row's prompt, or each combination of its template (`what` says
    // which in a message). Sets `lora`; false when it found an error.
    const auto check_prompt_text = [&](const std::string& prompt, const std::string& what, std::string& lora) {
      const size_t before = out.errors.size();
      const auto say = [&](const std::string& field, const std::string& message) { error(field, what + message); };
      // The LoRAs: the field's, then the prompt's tags; the tokenizer sees the prompt without the tags.
      std::string why;
      std::vector<LoraItem> loras;
      if (const auto* l = value("lora")) {
        if (auto items = parse_lora_list(*l, why)) loras = std::move(*items);
        else say("lora", why);
      }
      const size_t from_field = loras.size();
      const auto split = split_prompt_loras(prompt, why);
      if (!split) {
        say("prompt", why);
      } else {
        for (const auto& item : split->loras) {
          const bool twice = std::any_of(loras.begin(), loras.end(), [&](const LoraItem& i) { return i.name == item.name; });
          if (twice) say("prompt", "LoRA \"" + item.name + "\" is named in the lora field and in the prompt");
          loras.push_back(item);
        }
        const bool defaulted = !value("lora") && split->loras.empty();
        if (defaulted) loras = default_loras;  // checked once, above
        for (size_t i = 0; i < loras.size() && options.check_lora && !defaulted; ++i) {
          if (const std::string& w = lora_problem(loras[i].name); !w.empty()) say(i < from_field ? "lora" : "prompt", w);
        }
        lora = lora_list_string(loras);
        if (split->text.find_first_not_of(" \t\r\n\f\v") == std::string::npos) {
          say("prompt", prompt.empty() ? "is empty: every row needs a prompt"
                                       : "has no text (only spaces or LoRA tags): every row needs a prompt");
        } else if (options.check_prompt) {
          if (const std::string w = options.check_prompt(split->text); !w.empty()) say("prompt", w);
        }
      }
      return out.errors.size() == before;
    };
    std::optional<PromptTemplate> tmpl;  // the prompt, when it is a template
    if (const size_t bad = invalid_utf8_at(v.prompt); bad != std::string::npos) {
      error("prompt", "invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the prompt");
    } else if (v.prompt.find('\0') != std::string::npos) {
      error("prompt", "contains a NUL character");
    } else {
      bool parsed = true;
      if (expand_templates) {
        try {
          if (PromptTemplate t = templates.parse(v.prompt); t.is_template()) tmpl = std::move(t);
        } catch (const TemplateError& e) {
          // Where in the file: the character at fault, through the CSV's quoting or the JSON's escapes.
          const RawValue* at = row.find("prompt");
          const FilePosition where = format == FileFormat::kCsv
                                         ? csv_value_position(text, at->offset, at->line ? at->line : row.line, at->column, e.offset())
                                         : jsonl_value_position(row.source, row.line, "prompt", e.offset());
          out.errors.push_back({where.line, where.column, "prompt", e.what()});
          parsed = false;
        }
      }
      if (parsed && !tmpl) check_prompt_text(v.prompt, "", v.lora);
    }
    if (const auto* s = value("seed")) {
      if (options.defaults.seeds) out.seed_rows_over_option.push_back(row.line);
      std::string why;
      v.seeds = parse_seed_spec(*s, why);
      if (!v.seeds) error("seed", why);
    }
    if (const auto* c = value("count")) {
      const auto n = parse_int(*c);
      if (!n || *n < 1) {
        error("count", "\"" + *c + "\" is not a positive integer");
      } else {
        v.count = static_cast<uint64_t>(*n);
      }
    }
    if (value("count") && v.seeds && !v.seeds->single()) {
      error("count", "count goes with one starting seed; this row gives a range or list of seeds");
    }
    if (value("size") || default_size_ok) {
      try {
        v.size = host::parse_image_size(value("size") ? *value("size") : options.defaults.size);
        host::check_rope_positions(v.size);  // what the render checks, checked before anything is queued
      } catch (const std::invalid_argument& e) {
        error("size", e.what());
      }
    }
    if (const auto* n = value("name")) {
      v.name = trim(*n);  // spaces around a cell are the spreadsheet's, not the name's
      if (const std::string why = name_problem(v.name); !why.empty()) {
        error("name", "\"" + excerpt(*n) + "\" is not a usable file name: " + why);
      }
    }
    if (const auto* p = value("priority")) {
      const auto n = parse_int(*p);
      if (!n || *n < kMinPriority || *n > kMaxPriority) {
        error("priority", "\"" + *p + "\" is not an integer in -1000000..1000000");
      } else {
        v.priority = static_cast<int>(*n);
      }
    }
    if (const auto* r = value("reseed_on")) {
      v.reseed_on = reseed_flags(*r, [&](const std::string& why) { error("reseed_on", why); }).value_or("");
    }
    if (const auto* m = value("reseed_max")) {
      const auto n = parse_int(*m);
      if (!n || *n < 0 || *n > kMaxReseedMax) error("reseed_max", "\"" + excerpt(*m) + "\"" + reseed_max_range);
      else v.reseed_max = static_cast<int>(*n);
    }
    if (out.errors.size() != errors_before || !default_size_ok) continue;
    const bool seed_list = v.seeds && !v.seeds->single();
    const uint64_t per_prompt = seed_list ? v.seeds->count() : v.count;
    // A template's combinations are counted, never listed: 10^12 of them are refused here, at once.
    uint64_t combinations = tmpl ? tmpl->count() : 1;
    if (tmpl && options.sample) {
      if (combinations == UINT64_MAX) {
        error("prompt", "its template has 2^64 or more combinations, too many to draw a --sample from");
        continue;
      }
      combinations = std::min(combinations, *options.sample);
    }
    const uint64_t images = combinations > UINT64_MAX / per_prompt ? UINT64_MAX : combinations * per_prompt;
    would_be = images > UINT64_MAX - would_be ? UINT64_MAX : would_be + images;
    if (images > options.max_jobs || total > options.max_jobs - images) {
      if (too_many_reported) continue;
      too_many_reported = true;
      // Blame what made the images: the row's own column, or the option it took them from.
      const bool from_row = seed_list ? value("seed") != nullptr : value("count") != nullptr;
      const std::string cause = seed_list ? (from_row ? "seed" : "--seeds") : (from_row ? "count" : "--count");
      const std::string limit = std::to_string(options.max_jobs) +
                                " images (rgbaq submit --max-jobs raises it, up to the daemon's --max-jobs-per-submit)";
      const auto number = [](uint64_t n) { return n == UINT64_MAX ? std::string("18446744073709551615 or more") : std::to_string(n); };
      std::string message;
      if (images > options.max_jobs && combinations > 1) {
        message = "this row's template makes " + number(combinations) + (options.sample ? " drawn" : "") + " combinations" +
                  (per_prompt > 1 ? " x " + std::to_string(per_prompt) + " images each = " + number(images) + " images" : "") +
                  "; one submit may hold at most " + limit;
        error("prompt", message);
        continue;
      }
      if (images > options.max_jobs) {
        message = (from_row ? "this row is " : "gives each row ") + std::to_string(images) + " images; one submit may hold at most " + limit;
      } else {
        message = "with line " + std::to_string(row.line) + " the file would hold more than " + limit;
        too_many_at = out.errors.size() + 1;
      }
      if (combinations > 1) error("prompt", message);  // its template made the images
      else out.errors.push_back({from_row ? row.line : 0, 0, cause, message});
      continue;
    }
    total += images;
    if (!tmpl) {
      valid.push_back(std::move(v));
      continue;
    }
    // Each combination a row of its own, checked as a row's prompt is (its LoRA tags, its length); the
    // first that fails is the row's error. A row without a seed draws one for all its combinations.
    if (!v.seeds) v.drawn_seed = draw();
    const std::vector<uint64_t> drawn =
        options.sample ? sample_combinations(tmpl->count(), *options.sample, options.sample_seed ^ common::mix(static_cast<uint64_t>(row.line)))
                       : std::vector<uint64_t>();
    // The template's text, one copy for all its combinations (v.prompt, copied into each, is left empty).
    const auto template_text = std::make_shared<const std::string>(std::move(v.prompt));
    v.prompt.clear();
    Expansion expansion;
    for (uint64_t k = 0; k < combinations; ++k) {
      const uint64_t index = options.sample ? drawn[k] : k;
      tmpl->expand(index, expansion);
      Validated x = v;
      x.template_text = template_text;
      x.prompt = expansion.prompt;
      x.choices_json = expansion.choices_json();
      std::string what = "combination " + std::to_string(index + 1) + " (";
      for (size_t c = 0; c < expansion.choices.size(); ++c) {
        what += (c ? ", " : "") + expansion.choices[c].name + "=" + excerpt(expansion.choices[c].value);
      }
      what += "): ";
      if (!v.name.empty() && tmpl->count() > 1) {
        x.name = v.name + "-" + std::to_string(index + 1);  // one name, many prompts: each combination its own files
        if (const std::string why = name_problem(x.name); !why.empty()) {
          error("name", what + "\"" + x.name + "\" (the name and the combination's number) is not a usable file name: " + why);
          break;
        }
      }
      if (!check_prompt_text(x.prompt, what, x.lora)) break;
      valid.push_back(std::move(x));
    }
  }
  if (too_many_at) {
    out.errors[too_many_at - 1].message += "; it would make " + (would_be == UINT64_MAX ? std::string("2^64 or more") : std::to_string(would_be)) +
                                           " in all";
  }
  // Expansion: row order, then seed order. Seeds are handled as ranges, so memory follows the rows,
  // not the jobs: an identical row's seeds are subtracted, and rows whose outputs share a base name
  // must not share a seed. The valid rows are expanded even when others have errors, so that a clash
  // among them is reported in the same pass, not after the user fixed the rest.
  using Key = std::tuple<std::string, int, int, std::string, std::string>;  // prompt, width, height, name, lora
  std::map<Key, SeedSet> listed;                           // seeds each distinct row content has taken
  // Output base -> its seeds taken so far: first -> (last, row index in out.rows).
  std::map<std::string, std::map<uint64_t, std::pair<uint64_t, size_t>>> by_base;
  std::vector<const Key*> keys;                            // each kept row's content
  for (const Validated& v : valid) {
    if (out.errors.size() > kMaxFileErrors) break;
    std::vector<SeedRange> ranges;
    bool random = false;
    if (v.seeds && !v.seeds->single()) {
      ranges = v.seeds->ranges;
    } else {
      random = !v.seeds;
      const uint64_t first = random ? (v.drawn_seed ? *v.drawn_seed : draw()) : v.seeds->ranges[0].first;
      const uint64_t last = first + (v.count - 1);  // wraps past 2^64 - 1 to 0
      if (last >= first) {
        ranges.push_back({first, last});
      } else {
        ranges.push_back({first, UINT64_MAX});
        ranges.push_back({0, last});
      }
    }
    const auto [kit, fresh_key] = listed.try_emplace(Key{v.prompt, v.size.width, v.size.height, v.name, v.lora});
    JobRow row{v.prompt, v.name, v.size, v.priority, v.raw->line, random, {}, v.lora};
    row.template_text = v.template_text;
    row.choices_json = v.choices_json;
    row.reseed_on = v.reseed_on;
    row.reseed_max = v.reseed_max;
    for (const SeedRange& r : ranges) {
      const uint64_t taken_minus_one = kit->second.take(r, row.seeds);
      out.duplicates_skipped += (r.last - r.first) - taken_minus_one;  // (size of r) - taken, without overflow
    }
    if (row.seeds.empty()) continue;  // every job of it was listed before
    // Rows of other content whose files share this base must not share a seed: each base keeps its
    // seeds as disjoint ranges, each with the row that took it. Bases are compared without case: on a
    // case-insensitive file system (macOS's and Windows' defaults) `Chest_5.png` and `chest_5.png` are
    // one file, and a folder of outputs is often copied to one.
    const std::string base = output_base_name(v.prompt, v.name, v.size, v.lora);
    auto& owners = by_base[lower(base)];
    std::optional<std::pair<uint64_t, size_t>> clash;  // (seed, row index)
    for (const SeedRange& r : row.seeds) {
      auto it = owners.upper_bound(r.first);
      if (it != owners.begin() && std::prev(it)->second.first >= r.first) --it;
      for (; it != owners.end() && it->first <= r.last; ++it) {
        if (*keys[it->second.second] != kit->first) {
          clash = std::pair{std::max(r.first, it->first), it->second.second};
          break;
        }
      }
      if (clash) break;
    }
    if (clash) {
      const RawValue* at = v.raw->find("name");
      const JobRow& other = out.rows[clash->second];
      const std::string other_base = output_base_name(other.prompt, other.name, other.size, other.lora);
      const std::string seed = std::to_string(clash->first), line = std::to_string(other.line);
      out.errors.push_back({v.raw->line, at ? at->column : 0, v.name.empty() ? "prompt" : "name",
                            other_base != base
                                ? "\"" + base + "\" with seed " + seed + " and line " + line + "'s \"" + other_base +
                                      "\" differ only in case: on a case-insensitive file system (macOS, Windows) " +
                                      base + "_" + seed + ".png is one file with " + other_base + "_" + seed +
                                      ".png; give each its own name"
                                : "\"" + excerpt(v.name.empty() ? v.prompt : v.name) + "\" with seed " + seed +
                                      " names the image of line " + line + " too (another prompt or size); give each its own name"});
      continue;
    }
    for (const SeedRange& r : row.seeds) owners.emplace(r.first, std::pair{r.last, out.rows.size()});
    keys.push_back(&kit->first);
    out.job_count += row_seed_count(row.seeds);
    out.rows.push_back(std::move(row));
  }
  // A file with thousands of faults (the wrong file, a column shifted) gets the first kMaxFileErrors of
  // them and a last one saying there may be more: each is a message, and a position found in the file.
  if (out.errors.size() > kMaxFileErrors) {
    out.errors.resize(kMaxFileErrors);
    out.errors.push_back({0, 0, "", "stopping after " + std::to_string(kMaxFileErrors) + " errors; the file may hold more"});
  }
  if (!out.errors.empty()) {
    out.rows.clear();
    out.job_count = 0;
    out.duplicates_skipped = 0;
    return out;
  }
  if (options.expand) {
    out.jobs.reserve(out.job_count);
    for_each_job(out, [&](const JobSpec& j) { out.jobs.push_back(j); });
  }
  return out;
}

}  // namespace rgbaq::jobs
