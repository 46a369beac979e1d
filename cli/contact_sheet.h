#pragma once
// `rgbaq sheet RUN`: one PNG of a run's images, prompts as rows and seeds as columns, each cell a
// thumbnail composited over a checkerboard so transparency shows. Cells of jobs without an image stay
// checkerboard.
#include <cstdint>
#include <string>
#include <vector>

#include "cli/cli_context.h"

namespace rgbaq::cli {

int sheet_command(const std::vector<std::string>& args, CliContext& ctx);

struct SheetCell {
  int row = 0, column = 0;
  std::string image_path;  // empty: no image
};

struct SheetLayout {
  std::vector<std::string> rows;      // prompts, in the order they first appear
  std::vector<uint64_t> columns;      // seeds, ascending
  std::vector<SheetCell> cells;
};

// Places each job: (prompt, seed, image path or empty).
SheetLayout layout_sheet(const std::vector<std::tuple<std::string, uint64_t, std::string>>& jobs);

// Renders the sheet: cells of `thumb` x `thumb` px with a 4 px gutter, RGBA8, row-major.
std::vector<uint8_t> render_sheet(const SheetLayout& layout, int thumb, int& width, int& height);

}  // namespace rgbaq::cli
