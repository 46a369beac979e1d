#pragma once
// The CSV form of a run's export (`rgbaq export --format csv`, GET /api/v1/runs/RUN/export?format=csv):
// one row per job record as the daemon's export sends it. Header-only beside protocol.h, since both the
// CLI and the daemon write it and must write it byte for byte alike.
#include <sstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rgbaq::daemon {

// The host that rendered each job; a job record names no device yet (a column once it does).
// A template's job has its template (the prompt as written) and its choices (a JSON object); others
// leave both empty. qa: the alpha check's flags ("ok", "cut_off,fragmented"; empty until it is done);
// replaces: the job this one re-seeds (empty: none).
inline constexpr const char* kExportCsvHeader =
    "job,run,state,prompt,seed,width,height,name,lora,output,error,attempts,seconds,host,mark,template,choices,qa,replaces\n";

// A text cell (RFC 4180: quoted when it holds a comma, a quote or a line break). One that a spreadsheet
// would take for a formula, starting with =, +, -, @, a tab or a carriage return, gets a leading '
// (OWASP's advice against CSV injection): it shows as text. Numbers are not text cells.
inline std::string csv_text(const std::string& s) {
  const std::string v = !s.empty() && std::string_view("=+-@\t\r").find(s[0]) != std::string_view::npos ? "'" + s : s;
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// The "qa" cell: the record's qa flags joined by ',' ("ok" for none), or "" for a job not checked.
inline std::string qa_flags_cell(const nlohmann::json& j) {
  const auto qa = j.find("qa");
  if (qa == j.end() || !qa->is_object() || !qa->contains("flags") || !(*qa)["flags"].is_array()) return "";
  std::string flags;
  for (const auto& f : (*qa)["flags"]) {
    if (f.is_string()) flags += (flags.empty() ? "" : ",") + f.get<std::string>();
  }
  return flags.empty() ? "ok" : flags;
}

// One job record as a row of kExportCsvHeader's columns, ending in "\n".
inline std::string export_csv_row(const nlohmann::json& j) {
  const nlohmann::json& m = j.contains("metadata") ? j["metadata"] : nlohmann::json(nullptr);
  const double seconds = m.is_object() && m.contains("timings") ? m["timings"].value("total_s", 0.0) : 0.0;
  const auto text = [&](const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string(); };
  std::ostringstream row;
  row << j.value("id", 0) << "," << j.value("run", 0) << "," << csv_text(text("state")) << "," << csv_text(text("prompt")) << ","
      << j.value("seed", uint64_t{0}) << "," << j.value("width", 0) << "," << j.value("height", 0) << "," << csv_text(text("name")) << ","
      << csv_text(text("lora")) << "," << csv_text(text("output")) << "," << csv_text(text("error")) << "," << j.value("attempts", 0)
      << "," << seconds << "," << csv_text(text("host")) << "," << text("mark") << "," << csv_text(text("template")) << ","
      << (j.contains("choices") && j["choices"].is_object() ? csv_text(j["choices"].dump()) : std::string()) << ","
      << csv_text(qa_flags_cell(j)) << "," << (j.contains("replaces") && j["replaces"].is_number_integer() ? j["replaces"].dump() : std::string())
      << "\n";
  return row.str();
}

}  // namespace rgbaq::daemon
