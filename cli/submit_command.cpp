#include "cli/submit_command.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "common/arguments.h"
#include "common/printable_text.h"
#include "cli/daemon_client.h"
#include "cli/plural.h"
#include "cli/watch_command.h"
#include "daemon/protocol.h"
#include "daemon/socket_paths.h"
#include "host/image_size.h"
#include "jobs/job_file.h"
#include "jobs/qa_flags.h"
#include "jobs/output_name.h"
#include "jobs/prompt_template.h"
#include "jobs/wildcard_set.h"

namespace rgbaq::cli {

using common::Arguments;
using common::UsageError;
namespace {

// The job file's bytes, or a UsageError that says why not (the OS's reason: no such file, permission).
std::string read_job_file(const std::string& path, std::istream& in) {
  std::string text;
  if (path == "-") {
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UsageError(path + ": " + std::strerror(errno));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      throw UsageError(path + ": " + std::strerror(error));  // a directory: "Is a directory"
    }
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

// The first `bytes` of a prompt on one line, cut at a character boundary: a run's name.
std::string run_name_from_prompt(const std::string& prompt, size_t bytes = 40) {
  std::string s = prompt;
  for (char& c : s) c = (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (s.size() <= bytes) return s;
  size_t cut = bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

std::string line_list(const std::vector<int>& lines) {
  std::string s;
  const size_t shown = std::min<size_t>(lines.size(), 10);
  for (size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + std::to_string(lines[i]);
  if (lines.size() > shown) s += " and " + std::to_string(lines.size() - shown) + " more";
  return s;
}

// The lines the file's rows came from (a template's combinations are rows of one line).
size_t distinct_lines(const jobs::JobFile& file) {
  std::set<int> lines;
  for (const auto& row : file.rows) lines.insert(row.line);
  return lines.size();
}

// The lines of `file` whose row took `option`'s value: rows that `changed` (the file parsed again with
// the option set otherwise) gives another result for; keyed by line, as identical rows may fold away.
template <typename Differs>
std::vector<int> lines_over_option(const jobs::JobFile& file, const jobs::JobFile& changed, Differs differs) {
  std::map<int, const jobs::JobRow*> other;
  for (const auto& row : changed.rows) other[row.line] = &row;
  std::vector<int> own;
  for (const auto& row : file.rows) {
    const auto it = other.find(row.line);
    // A template's combinations are rows of one line, one after another: the line once.
    if (it != other.end() && !differs(row, *it->second) && (own.empty() || own.back() != row.line)) own.push_back(row.line);
  }
  return own;
}

// A note for each option given that a column of the file wins over on some rows (--seeds has its own,
// from the parser): `--size 1024` on a file whose every row says 256 would otherwise be dropped without
// a word. Each option is parsed once more with another value; a row whose jobs do not change with it
// has its own. Printed once per option, naming the option, the column and the lines.
void print_option_notes(const Arguments& a, const std::string& text, jobs::FileFormat format, const jobs::ParseOptions& given,
                        const jobs::JobFile& file, const std::string& file_name, std::ostream& err) {
  if (file.rows.empty()) return;
  jobs::ParseOptions base = given;
  base.random_seed = [] { return uint64_t{1}; };  // rows without seeds compare equal across the parses
  const jobs::JobFile same = jobs::parse_job_file(text, format, base);
  const std::string column_word = format == jobs::FileFormat::kJsonl ? "field" : "column";
  const auto note = [&](const std::string& option, const std::string& value, const std::string& column, const std::vector<int>& lines) {
    if (lines.empty()) return;
    const bool every = lines.size() == distinct_lines(same);
    err << "note: " << common::printable(file_name) << ": the " << column << " wins over " << option << " "
        << common::printable(value) << " on " << (lines.size() == 1 ? "line " : "lines ") << line_list(lines)
        << (every ? " (every row: " + option + " is not used)" : " (" + option + " applies to the other rows)") << "\n";
  };
  const auto reparse = [&](auto set) {
    jobs::ParseOptions o = base;
    set(o);
    return jobs::parse_job_file(text, format, o);
  };
  if (const auto size = a.get("size")) {
    // Another valid size: 256, or 512 when the option says 256.
    bool is_256 = false;
    try {
      is_256 = host::parse_image_size(*size) == host::parse_image_size("256");
    } catch (const std::invalid_argument&) {
      return;  // an error, reported with the file's
    }
    const auto changed = reparse([&](jobs::ParseOptions& o) { o.defaults.size = is_256 ? "512" : "256"; });
    const std::string column = file.ignored_columns.empty() ? "size " + column_word : "width and height columns";
    note("--size", *size, column, lines_over_option(same, changed, [](const jobs::JobRow& l, const jobs::JobRow& r) { return !(l.size == r.size); }));
  }
  if (a.has("count")) {
    const auto changed = reparse([&](jobs::ParseOptions& o) { o.defaults.count = given.defaults.count + 1; });
    const auto seeds_of = [](const jobs::JobRow& row) {
      std::vector<std::pair<uint64_t, uint64_t>> v;
      for (const auto& r : row.seeds) v.emplace_back(r.first, r.last);
      return v;
    };
    note("--count", std::to_string(given.defaults.count), "count or seed " + column_word,
         lines_over_option(same, changed, [&](const jobs::JobRow& l, const jobs::JobRow& r) { return seeds_of(l) != seeds_of(r); }));
  }
  if (a.has("priority")) {
    const int p = given.defaults.priority;
    const auto changed = reparse([&](jobs::ParseOptions& o) { o.defaults.priority = p < jobs::kMaxPriority ? p + 1 : p - 1; });
    note("--priority", std::to_string(p), "priority " + column_word,
         lines_over_option(same, changed, [](const jobs::JobRow& l, const jobs::JobRow& r) { return l.priority != r.priority; }));
  }
  if (const auto lora = a.get("lora")) {
    const auto changed = reparse([&](jobs::ParseOptions& o) { o.defaults.lora.reset(); });
    note("--lora", *lora, "lora " + column_word + " (or a <lora:...> tag in the prompt)",
         lines_over_option(same, changed, [](const jobs::JobRow& l, const jobs::JobRow& r) { return l.lora != r.lora; }));
  }
}

// A template's choices in their order (jobs::sort_choices).
std::string choices_text(const nlohmann::json& choices) {
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& [name, value] : choices.items()) items.emplace_back(name, value.is_string() ? value.get<std::string>() : value.dump());
  jobs::sort_choices(items);
  std::string s;
  for (const auto& [name, value] : items) s += (s.empty() ? "" : ", ") + name + "=" + value;
  return s;
}

// A dry run's first jobs, as the daemon would queue them (its "preview"): line, seed, prompt, choices, file.
void print_preview(const nlohmann::json& preview, uint64_t jobs, const std::filesystem::path& out_dir, std::ostream& out) {
  if (preview.empty()) return;
  out << (preview.size() < jobs ? "the first " + std::to_string(preview.size()) + ", as they would be queued into "
                                : std::string("as they would be queued into "))
      << common::printable(out_dir.string()) << ":\n";
  for (const auto& j : preview) {
    out << "  line " << j.value("line", 0) << ", seed " << j.value("seed", uint64_t{0}) << ": "
        << common::printable(j.value("prompt", ""));
    if (j.contains("choices") && j["choices"].is_object()) out << "  [" << common::printable(choices_text(j["choices"])) << "]";
    out << "  -> " << common::printable(std::filesystem::path(j.value("output", "")).filename().string()) << "\n";
  }
  if (preview.size() < jobs) out << "  and " << count_of(jobs - preview.size(), "more job") << "\n";
}

// A file's errors ({"line", "field", "message", "text"}, as the daemon sends them), one a line: an
// option's error is the command line's, not the file's.
void print_file_errors(const nlohmann::json& details, std::ostream& err) {
  for (const auto& d : details) {
    const std::string field = d.value("field", "");
    const bool option = d.value("line", 0) == 0 && field.rfind("--", 0) == 0;
    err << common::printable(option ? "rgbaq submit: " + field + ": " + d.value("message", "")
                                    : d.value("text", d.value("message", "")))
        << "\n";
  }
}

// Ctrl-C while `submit --wait` follows a run: the run is the daemon's and goes on; say so and how to
// follow or stop it. Composed before the handler is installed: a handler may only write(2) and _exit.
char interrupt_message[512];
size_t interrupt_message_size = 0;
void on_interrupt(int) {
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, interrupt_message, interrupt_message_size);
  _exit(130);
}

void say_on_interrupt(int64_t run, const std::filesystem::path& socket) {
  const std::string rgbaq = socket == std::filesystem::absolute(paths::default_socket_path())
                                ? std::string("rgbaq")
                                : "rgbaq --socket " + socket.string();
  const std::string id = std::to_string(run);
  const std::string text = "\nrgbaq: stopped following run " + id + "; the run goes on in rgbaqd.\n  follow it: " + rgbaq +
                           " watch " + id + "\n  stop it:   " + rgbaq + " cancel " + id + "\n";
  interrupt_message_size = std::min(text.size(), sizeof interrupt_message);
  std::memcpy(interrupt_message, text.data(), interrupt_message_size);
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

int submit_command(const std::vector<std::string>& args, CliContext& ctx) {
  // `--seed` as rgbaqd render spells it: one seed is a seed specification too.
  std::vector<std::string> words;
  for (const auto& w : args) words.push_back(w == "--seed" ? "--seeds" : w.rfind("--seed=", 0) == 0 ? "--seeds=" + w.substr(7) : w);
  const Arguments a(words, {"prompt", "seeds", "size", "count", "priority", "out", "name", "format", "max-jobs", "lora", "wildcards",
                           "sample", "sample-seed", "reseed-on", "reseed-max"},
                    {"dry-run", "wait", "skip-duplicates", "replace", "json"});
  const auto prompt = a.get("prompt");
  if (prompt && !a.positionals().empty()) throw UsageError("give a job file or --prompt TEXT, not both");
  if (!prompt && a.positionals().size() != 1) {
    throw UsageError("say what to queue: `rgbaq submit FILE|- [options]` or `rgbaq submit --prompt TEXT [--seeds S]`");
  }
  if (prompt && a.has("format")) throw UsageError("--format is for a job file, not --prompt");
  const std::string path = prompt ? std::string() : a.positionals()[0];
  // One prompt is a one-row JSONL file: the same checks, the same expansion, the same errors. Its
  // --name names the run and, as a row's `name` does, its files (OUT/NAME_SEED.png).
  nlohmann::json prompt_row = {{"prompt", prompt.value_or("")}};
  if (const auto name = a.get("name"); prompt && name) {
    if (const std::string why = jobs::name_problem(*name); !why.empty()) {
      throw UsageError("--name \"" + *name + "\" names the images of --prompt (OUT/NAME_SEED.png), and " + why);
    }
    prompt_row["name"] = *name;
  }
  const std::string text = prompt ? prompt_row.dump() + "\n" : read_job_file(path, ctx.in);
  const std::string format =
      prompt ? "jsonl" : a.get("format").value_or(jobs::format_for_path(path) == jobs::FileFormat::kJsonl ? "jsonl" : "csv");
  if (format != "csv" && format != "jsonl") throw UsageError("--format \"" + format + "\" is not csv or jsonl");

  jobs::ParseOptions options;
  options.defaults.seeds = a.get("seeds");
  options.defaults.size = a.get("size").value_or(options.defaults.size);
  options.defaults.lora = a.get("lora");  // for rows that name no LoRA; the daemon checks the names
  options.defaults.count = a.get_int("count", 1);
  options.defaults.priority = a.get_int("priority", 0);
  // Re-seeding: checked here (an unknown flag is a usage error naming it) and by the daemon.
  if (const auto reseed_on = a.get("reseed-on")) {
    common::parse_option("reseed-on", *reseed_on, jobs::parse_qa_flag_list);
    options.defaults.reseed_on = *reseed_on;
  }
  if (a.has("reseed-max") && !a.has("reseed-on")) throw UsageError("--reseed-max goes with --reseed-on FLAG[,FLAG...] (what re-seeds a row)");
  options.defaults.reseed_max = a.get_int("reseed-max", jobs::kDefaultReseedMax);
  if (options.defaults.reseed_max < 0 || options.defaults.reseed_max > jobs::kMaxReseedMax) {
    throw UsageError("--reseed-max must be 0.." + std::to_string(jobs::kMaxReseedMax) + " (re-seeded jobs a row may get in all)");
  }
  options.max_jobs = a.get_u64("max-jobs", jobs::kDefaultMaxJobs);
  if (options.max_jobs < 1 || options.max_jobs > static_cast<uint64_t>(INT64_MAX)) throw UsageError("--max-jobs must be 1 or more");
  options.expand = false;  // the daemon expands; here only the rows are validated and counted
  // Templates: the wildcard files are read here, on the user's machine, and their texts go with the
  // submit (the daemon reads no client path); a sample's seed is drawn here when none is given.
  const auto wildcard_dir = std::filesystem::absolute(a.get("wildcards").value_or(jobs::default_wildcard_dir(paths::home_dir()).string()))
                                .lexically_normal();
  jobs::WildcardSet wildcards = jobs::WildcardSet::from_folder(wildcard_dir);
  options.wildcards = &wildcards;
  if (a.has("sample-seed") && !a.has("sample")) throw UsageError("--sample-seed goes with --sample N (how many combinations to draw)");
  const bool sample_seed_drawn = a.has("sample") && !a.has("sample-seed");
  if (a.has("sample")) {
    options.sample = a.get_u64("sample", 1);
    if (*options.sample < 1) throw UsageError("--sample must be 1 or more (the combinations of each template to draw)");
    std::random_device device;
    options.sample_seed = a.has("sample-seed") ? a.get_u64("sample-seed", 0) : (uint64_t{device()} << 32) ^ device();
  }
  const std::string file_name = prompt ? "--prompt" : path == "-" ? "<stdin>" : path;
  const auto file = jobs::parse_job_file(text, format == "jsonl" ? jobs::FileFormat::kJsonl : jobs::FileFormat::kCsv, options);
  nlohmann::json defaults = {{"size", options.defaults.size}, {"count", options.defaults.count},
                             {"priority", options.defaults.priority}};
  if (options.defaults.seeds) defaults["seeds"] = *options.defaults.seeds;
  if (options.defaults.lora) defaults["lora"] = *options.defaults.lora;
  if (!options.defaults.reseed_on.empty()) {
    defaults["reseed_on"] = options.defaults.reseed_on;
    defaults["reseed_max"] = options.defaults.reseed_max;
  }
  const auto out_dir = std::filesystem::absolute(a.get("out").value_or("renders")).lexically_normal();
  nlohmann::json params = {{"file", text},
                           {"file_name", file_name},
                           {"format", format},
                           {"defaults", defaults},
                           {"out_dir", out_dir.string()},
                           {"skip_duplicates", a.has("skip-duplicates")},
                           {"replace", a.has("replace")},
                           {"dry_run", a.has("dry-run")},
                           {"max_jobs", options.max_jobs},
                           {"wildcards", wildcards.texts()},  // those the file's templates named, read while parsing
                           {"wildcards_dir", wildcard_dir.string()}};
  if (options.sample) {
    params["sample"] = *options.sample;
    params["sample_seed"] = options.sample_seed;
  }
  if (const auto name = a.get("name")) {
    params["name"] = *name;
  } else if (prompt) {
    params["name"] = run_name_from_prompt(*prompt);
  } else if (path == "-") {
    params["name"] = "stdin";
  }
  if (!file.errors.empty()) {
    // What only the daemon checks (its LoRA files, prompts' token counts) goes with these: its dry run
    // lists every error of the file in one pass. Without a daemon, the errors found here.
    nlohmann::json details = nlohmann::json::array();
    for (const auto& e : file.errors) {
      details.push_back({{"line", e.line}, {"field", e.field}, {"message", e.message}, {"text", e.to_string(file_name)}});
    }
    try {
      nlohmann::json dry_run = params;
      dry_run["dry_run"] = true;
      DaemonClient(ctx.socket).call("submit", dry_run);
    } catch (const DaemonError& e) {
      if (e.code == protocol::error_code::kInvalidFile && !e.details.empty()) details = e.details;
    } catch (const std::exception&) {
      // not reachable, or not ours: the errors found here are the answer
    }
    print_file_errors(details, ctx.err);
    ctx.err << count_of(details.size(), "error") << "; nothing was queued\n";
    return 2;
  }
  if (!file.seed_rows_over_option.empty()) {
    // Never silently: the row's own seed wins, and the user hears on which rows.
    ctx.err << "note: " << common::printable(file_name) << ": the seed column wins over --seeds "
            << common::printable(*options.defaults.seeds) << " on "
            << (file.seed_rows_over_option.size() == 1 ? "line " : "lines ") << line_list(file.seed_rows_over_option)
            << (file.seed_rows_over_option.size() == distinct_lines(file) ? " (every row: --seeds is not used)"
                                                                       : " (--seeds applies to the rows without a seed)")
            << "\n";
  }
  print_option_notes(a, text, format == "jsonl" ? jobs::FileFormat::kJsonl : jobs::FileFormat::kCsv, options, file, file_name,
                     ctx.err);
  if (sample_seed_drawn && !a.has("json")) {
    ctx.err << "note: --sample " << *options.sample << " drew with --sample-seed " << options.sample_seed
            << " (give it again to draw the same combinations)\n";
  }
  if (!file.ignored_columns.empty()) {
    std::string columns;
    for (const auto& c : file.ignored_columns) columns += (columns.empty() ? "" : ", ") + c;
    ctx.err << "note: " << common::printable(file_name) << " is an rgbaq export: its columns " << columns
            << " are no job fields and are ignored (width and height give the size)\n";
  }

  DaemonClient client(ctx.socket);
  // --wait watches before the run exists: a job done (or reused) at once is not missed.
  std::optional<DaemonClient> events;
  if (a.has("wait") && !a.has("dry-run")) {
    events.emplace(ctx.socket);
    events->call("watch", {{"run", 0}});
  }
  nlohmann::json r;
  try {
    r = client.call("submit", params);
  } catch (const DaemonError& e) {
    print_file_errors(e.details, ctx.err);
    throw;
  }
  const uint64_t queued = r.value("jobs", uint64_t{0}), reusable = r.value("reusable", uint64_t{0});
  const bool made_run = r.contains("run") && r["run"].is_number();
  if (a.has("json")) {
    ctx.out << r.dump() << "\n";
  } else if (a.has("dry-run")) {
    ctx.out << common::printable(file_name) << ": " << count_of(queued, "job") << ", valid; nothing was queued (--dry-run)\n";
    // A file of templates: the first jobs they expand to, as the daemon would queue them.
    const bool templates = std::any_of(file.rows.begin(), file.rows.end(), [](const jobs::JobRow& row) { return row.template_text != nullptr; });
    if (templates) print_preview(r.value("preview", nlohmann::json::array()), queued, out_dir, ctx.out);
  } else if (!made_run) {
    ctx.out << "nothing to queue: " << (r.value("skipped", 0) == 1 ? "its 1 job is" : "all " + count_of(r.value("skipped", 0), "job") + " are")
            << " already queued, running or done (--skip-duplicates); no run was made\n";
  } else {
    ctx.out << "run " << r.value("run", 0) << ": " << count_of(queued, "job") << " queued, images to "
            << common::printable(out_dir.string());
    if (r.value("skipped", 0)) ctx.out << " (" << r.value("skipped", 0) << " already queued or done, skipped)";
    if (r.value("duplicates_in_file", 0)) {
      ctx.out << " (" << count_of(r.value("duplicates_in_file", 0), "repeated row") << " left out)";
    }
    ctx.out << "\n";
    if (reusable) {
      ctx.out << "  " << (reusable == queued ? (queued == 1 ? "its image is" : "all their images are")
                                             : count_of(reusable, "image is", "images are"))
              << " already there from an earlier run: reused, not rendered again\n";
    }
    if (const uint64_t moved = r.value("moved_aside", uint64_t{0})) {
      ctx.out << "  " << count_of(moved, "earlier image") << " moved to " << common::printable((out_dir / "replaced").string())
              << " (--replace)\n";
    }
  }
  if (!a.has("wait") || a.has("dry-run") || !made_run || queued == 0) return 0;
  const int64_t run = r.value("run", int64_t{0});
  ctx.out.flush();  // the run id now, also through a pipe: the wait may be long
  say_on_interrupt(run, ctx.socket);
  // A daemon that restarts (a crash, the service restarted) takes the run up again: follow it, as watch does.
  const int code = watch_run(*events, ctx, run, true, true, true);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (reusable && !a.has("json")) {
    ctx.out << "run " << run << ": reused " << count_of(reusable, "finished image");
    if (code == 0) ctx.out << ", rendered " << (queued - reusable);
    ctx.out << "\n";
  }
  return code;
}

}  // namespace rgbaq::cli
