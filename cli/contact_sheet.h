#pragma once
// `rgbaq sheet RUN`: one labelled PNG of a run's images, a grid over two axes as AUTOMATIC1111's X/Y
// plot draws it: seeds across and prompts down by default (`--x`, `--y`: prompt, seed, size, lora or
// lora:NAME), each row labelled with its prompt (wrapped, then cut), each column with its seed, the run,
// its sizes and its LoRAs in a header. An attribute on neither axis that varies (a run with several
// sizes, or LoRA sets) joins the row's label. Each cell is a thumbnail over a checkerboard, so
// transparency shows; a cell whose job failed, was canceled, is not rendered yet, or whose image is
// missing or unreadable says so in words.
//
// The LoRA axes: `lora` is each job's whole LoRA set ("detail 0.5", "no LoRA"; several LoRAs in one
// label joined by " + "), ordered by the number of LoRAs, then by name and weight; `lora:NAME` is one
// LoRA's weight ("detail 0.5", "no detail"), and the rest of each job's set splits the rows where it
// varies. Sweep one LoRA's weight with either; when a run varies several, `lora:NAME` picks the one.
//
// A template variable (jobs/prompt_template.h) as an axis: a {...} group's number ("1") or a wildcard's
// name ("style"), as the jobs' choices name it. Its values label the axis in the order they first appear
// among the jobs (the template's order, for a run of all its combinations); "(empty)" for an empty
// alternative, "(none)" for a job without that choice. With a variable on an axis and the prompt on
// neither, the prompt splits no rows: its template (or, for a plain prompt, itself) and the choices on
// neither axis do, where they vary.
#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_context.h"

namespace rgbaq::cli {

int sheet_command(const std::vector<std::string>& args, CliContext& ctx);

enum class SheetAxis { kPrompt, kSeed, kSize, kLora, kVariable };

// An axis as --x and --y name it: "lora" is the whole LoRA set, "lora:NAME" one LoRA's weight, anything
// else a template variable ("var:NAME" for one named like another axis).
struct SheetAxisChoice {
  SheetAxis axis = SheetAxis::kSeed;
  std::string lora;  // for kLora: the LoRA whose weight the axis sweeps, or "" for the whole set
  std::string variable;  // for kVariable: the choice's name ("1", "style")
  SheetAxisChoice(SheetAxis a, std::string lora_name = "") : axis(a), lora(std::move(lora_name)) {}  // NOLINT: implicit
  static SheetAxisChoice template_variable(std::string name) {
    SheetAxisChoice c(SheetAxis::kVariable);
    c.variable = std::move(name);
    return c;
  }
};

// One job of the run, as `export` describes it.
struct SheetJob {
  std::string prompt;
  uint64_t seed = 0;
  int width = 0, height = 0;
  std::string state;       // done, failed, canceled, queued, running
  std::string image_path;  // the output, for a done job
  std::string lora;        // the job's LoRA set as the queue stores it ("detail:0.5;style:1"), "" for none
  int64_t id = 0;          // the job's id (0: none known)
  std::string template_text;                   // its template, "" for a plain prompt
  std::map<std::string, std::string> choices;  // its template's choices by name
};

struct SheetCell {
  int row = 0, column = 0;
  std::string image_path;  // empty: no image, `mark` says why
  std::string mark;        // "failed", "canceled", "not rendered yet"
  int64_t job = 0;         // the job in the cell (0: none)
};

struct SheetLayout {
  std::string title;                     // "run 3 (name)"
  std::vector<std::string> sizes;        // "256x256", by pixel count
  std::vector<std::string> loras;        // the LoRA names the run's jobs use, in first use order
  std::vector<std::string> columns;      // x axis labels: "seed 7", a size, or a prompt
  std::vector<std::string> rows;         // y axis labels
  std::vector<std::string> row_details;  // the attributes on neither axis that vary (else empty strings)
  std::vector<SheetCell> cells;
  // A wrapped sheet (wrap_columns): each row's own column labels, drawn above its cells; empty when
  // every row has the `columns` above the grid.
  std::vector<std::vector<std::string>> row_columns;
};

// Why `axis` cannot lay out `jobs` ("its jobs have no LoRA", "no job has LoRA \"x\"...", "no job has the
// template variable \"x\" (the run's variables: 1, 2, style)"), or "".
std::string sheet_axis_problem(const std::vector<SheetJob>& jobs, const SheetAxisChoice& axis);

// Places each job on the grid; seeds ascend, sizes ascend by pixels, prompts keep their first order,
// LoRA weights ascend after "no LoRA". A place of the grid no job fills is a "no job" cell, unless
// `filtered` (the jobs are a filter's, say --marked star): then the jobs left out were left out on
// purpose, and their places stay empty. Throws std::invalid_argument for equal axes or an axis with a
// problem, std::runtime_error for a job's LoRA set that does not parse.
SheetLayout layout_sheet(const std::string& title, const std::vector<SheetJob>& jobs, const SheetAxisChoice& x = SheetAxis::kSeed,
                         const SheetAxisChoice& y = SheetAxis::kPrompt, bool filtered = false);

// What `--marked M` makes of a sheet: the word its file name and header use ("starred" for star,
// "rejected", "unmarked" for none, "marked" for any). Throws std::invalid_argument for another M.
std::string sheet_filter_word(const std::string& marked);

// Where `rgbaq sheet RUN` writes by default: OUT/.rgbaq/sheets/sheet_runRUN[_FILTER][_pN].png. Beside
// the run's images, but in a hidden folder: the importers of game engines (Unity, Godot) skip folders
// whose names start with '.', so a sheet never becomes an asset of the game whose folder OUT is.
std::filesystem::path default_sheet_path(const std::filesystem::path& out_dir, uint64_t run, const std::string& filter_word,
                                         int page, int pages);

// The x axis wrapped at `columns` (0: never): a row of more cells goes on in the rows under it, each
// with its own column labels (a 30-seed sweep at 16: rows of 16 and 14 per prompt). 16 keeps the
// common `--seeds 1-16` sweep on one row.
SheetLayout wrap_columns(const SheetLayout& layout, int columns);
inline constexpr int kDefaultSheetColumns = 16;

// Where things are on the sheet, in pixels.
struct SheetGeometry {
  int width = 0, height = 0;
  int thumb = 0;
  int grid_x = 0, grid_y = 0;  // the top-left corner of cell (0, 0)
  int header_baseline = 0, column_label_baseline = 0, row_label_x = 0, row_label_width = 0;
  int row_labels_height = 0;  // a wrapped sheet: the line of column labels above each row of cells
  static constexpr int kGutter = 4, kMargin = 8;
  static constexpr int kHeaderPx = 16, kLabelPx = 13;  // font sizes
  int cell_x(int column) const { return grid_x + column * (thumb + kGutter); }
  int cell_y(int row) const { return grid_y + row * (thumb + kGutter + row_labels_height); }
};

struct Sheet {
  std::vector<uint8_t> rgba;  // row-major RGBA8
  SheetGeometry geometry;
};

inline constexpr uint8_t kSheetBackground = 48;          // gray level around the cells
inline constexpr uint8_t kSheetText[3] = {235, 235, 235};
inline constexpr uint8_t kSheetFailedFill[3] = {110, 28, 28};   // failed, missing, unreadable
inline constexpr uint8_t kSheetPendingFill[3] = {72, 72, 72};   // canceled, not rendered yet, no job

// A sheet's canvas is bounded: 64 Mi pixels (256 MiB of RGBA), no side over 65,535 px (what image
// viewers and libpng take). A run of 20,000 jobs at the default thumb would be 1.5 GiB: it is paged.
inline constexpr uint64_t kMaxSheetPixels = uint64_t{64} << 20;
inline constexpr int kMaxSheetSide = 65535;

// A sheet over the bounds, before anything is drawn: what() gives its size; rows_per_page is how many
// rows a page of this width holds (0 when one row alone is too wide).
class SheetTooLarge : public std::runtime_error {
 public:
  SheetTooLarge(const std::string& what, int rows_per_page) : std::runtime_error(what), rows_per_page(rows_per_page) {}
  int rows_per_page;
};

// Rows [(page - 1) * per_page, page * per_page) of `layout` with their cells, as a layout of its own.
// Throws std::invalid_argument when the page is past the last (naming how many there are).
SheetLayout sheet_page(const SheetLayout& layout, int page, int per_page);
int sheet_pages(const SheetLayout& layout, int per_page);

// Draws the sheet: `thumb` x `thumb` px cells, labels in `font` (a TrueType file). Throws
// std::runtime_error when the font is missing or unreadable, SheetTooLarge (allocating nothing) when
// the canvas would be over kMaxSheetPixels or kMaxSheetSide.
Sheet render_sheet(const SheetLayout& layout, int thumb, const std::filesystem::path& font);

}  // namespace rgbaq::cli
