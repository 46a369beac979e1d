#pragma once
// `rgbaq export RUN --assets DIR [--trim] [--pad PX] [--premultiplied] [--format png|webp]
// [--sizes 64,128,...] [--atlas NAME [--atlas-max PX]] [--marked M] [--qa FLAG] [--state S]`: the run's
// images as finished assets (assets/asset_export.h), written by this process into DIR from the PNGs
// the daemon reports (rgbaq runs beside rgbaqd and reads its outputs as the contact sheet does).
#include <string>
#include <vector>

#include "cli/cli_context.h"

namespace rgbaq::cli {

// Whether `args` (export's, after the command) ask for the asset export: an --assets option.
bool asks_for_assets(const std::vector<std::string>& args);

int asset_export_command(const std::vector<std::string>& args, CliContext& ctx);

}  // namespace rgbaq::cli
