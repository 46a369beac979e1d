#include "cli/asset_export_command.h"

#include <sys/stat.h>

#include <filesystem>
#include <ostream>

#include "assets/asset_export.h"
#include "cli/daemon_client.h"
#include "cli/plural.h"
#include "cli/run_export.h"
#include "common/arguments.h"
#include "common/printable_text.h"
#include "common/trusted_folder.h"
#include "jobs/qa_flags.h"
#include "storage/png_file.h"
#include "storage/queue_store.h"

namespace rgbaq::cli {
namespace {

using common::Arguments;
using common::UsageError;
using nlohmann::json;

constexpr const char* kUsageLine =
    "usage: rgbaq export RUN --assets DIR [--trim] [--pad PX] [--premultiplied] [--format png|webp] [--sizes 64,128,...] "
    "[--atlas NAME [--atlas-max PX]] [--marked M] [--qa FLAG] [--state S] [--json]";

int int_option(const Arguments& a, const std::string& name, int fallback) {
  const auto text = a.get(name);
  if (!text) return fallback;
  try {
    size_t used = 0;
    const long v = std::stol(*text, &used);
    if (used == text->size() && v >= INT32_MIN && v <= INT32_MAX) return int(v);
  } catch (const std::exception&) {
  }
  throw UsageError("--" + name + " \"" + *text + "\" is not a whole number of pixels");
}

std::vector<int> size_list(const std::string& text) {
  std::vector<int> sizes;
  size_t at = 0;
  for (;;) {
    const size_t comma = text.find(',', at);
    const std::string part = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const auto v = common::parse_u64(part);
    if (!v || *v > uint64_t(INT32_MAX)) throw UsageError("--sizes \"" + text + "\" is not a list of pixel sizes (64,128,256)");
    sizes.push_back(int(*v));
    if (comma == std::string::npos) return sizes;
    at = comma + 1;
  }
}

assets::RgbaImage load_output(const std::string& path, int width, int height) {
  storage::PngImage png = storage::read_png_if_size(path, width, height);
  if (png.rgba.empty()) {
    throw std::runtime_error(path + " is " + std::to_string(png.width) + "x" + std::to_string(png.height) + ", not the job's " +
                             std::to_string(width) + "x" + std::to_string(height) + " image");
  }
  assets::RgbaImage image;
  image.width = png.width;
  image.height = png.height;
  image.rgba = std::move(png.rgba);
  return image;
}

}  // namespace

bool asks_for_assets(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--") return false;
    if (a == "--assets" || a.rfind("--assets=", 0) == 0) return true;
  }
  return false;
}

int asset_export_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {"assets", "pad", "format", "sizes", "atlas", "atlas-max", "marked", "qa", "state"},
                    {"trim", "premultiplied", "json"});
  if (a.positionals().size() != 1) throw UsageError(kUsageLine);
  const auto run = common::parse_u64(a.positionals()[0]);
  if (!run || *run == 0 || *run > uint64_t(INT64_MAX)) throw UsageError("run \"" + a.positionals()[0] + "\" is not a positive integer");
  const std::string dir_text = a.require("assets");
  if (dir_text.empty()) throw UsageError("--assets: a folder is needed");

  // Every option checked before the daemon is asked or the folder is touched: a mistake writes nothing.
  assets::AssetExportOptions options;
  options.trim = a.has("trim");
  options.premultiplied = a.has("premultiplied");
  options.pad = int_option(a, "pad", 0);
  if (const auto f = a.get("format")) {
    const auto format = assets::parse_asset_format(*f);
    if (!format) throw UsageError("--format \"" + *f + "\" is not png or webp");
    options.format = *format;
  }
  if (const auto s = a.get("sizes")) options.sizes = size_list(*s);
  if (const auto n = a.get("atlas")) {
    if (n->empty()) throw UsageError("--atlas: a name is needed (the atlas is NAME.png and NAME.json)");
    options.atlas = *n;
  }
  if (a.has("atlas-max") && options.atlas.empty()) throw UsageError("--atlas-max is the largest side of an --atlas page: give --atlas NAME too");
  options.atlas_max = int_option(a, "atlas-max", options.atlas_max);
  try {
    assets::check_asset_export_options(options);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::string state = a.get("state").value_or("done");  // only a done job has an image
  if (state == "cancelled") state = "canceled";
  if (!storage::parse_state(state)) throw UsageError("--state \"" + state + "\" is not one of queued, running, done, failed, canceled");
  const auto qa = a.get("qa");
  if (qa && !jobs::parse_qa_filter(*qa)) throw UsageError("--qa \"" + *qa + "\" is not ok or one of " + jobs::qa_flag_names());
  std::filesystem::path resolved;
  try {
    resolved = common::resolve_folder(std::filesystem::absolute(dir_text));
  } catch (const common::FolderError& e) {
    throw std::runtime_error("cannot export into " + dir_text + ": " + e.what());
  }

  // The folder is opened (made if need be) first, so that one that cannot take the export is said
  // first; nothing shows in it before the export commits, and a folder made here goes again if the
  // export fails (an unknown run included).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  assets::ExportFolder folder(resolved, 0777 & ~mask, 0666 & ~mask);

  // The jobs (a few hundred bytes each, never their pixels), then the images one at a time.
  DaemonClient client(ctx.socket);
  json params = {{"run", int64_t(*run)}};
  if (const auto marked = a.get("marked")) params["marked"] = *marked;
  if (qa) params["qa"] = *qa;
  json about = {{"run", int64_t(*run)}, {"marked", a.get("marked").value_or("")}, {"state", state}, {"qa", qa.value_or("")}};
  std::vector<assets::AssetSource> sources;
  for_each_exported_job(client, params, [&](const json& r) { about["run_name"] = r.value("name", ""); }, [&](const json& j) {
    if (j.value("state", "") != state) return;
    const std::string output = j.value("output", "");
    const int width = j.value("width", 0), height = j.value("height", 0);
    const std::string job_state = j.value("state", "");
    sources.push_back({j.value("id", int64_t{0}), j.value("prompt", ""), j.value("seed", uint64_t{0}), output,
                       [output, width, height, job_state]() -> assets::RgbaImage {
                         if (job_state != "done") throw std::runtime_error("the job is " + job_state + ": it has no image");
                         return load_output(output, width, height);
                       }});
  });

  json manifest;
  try {
    manifest = assets::export_assets(sources, options, folder, about);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());  // options that do not fit the images (an atlas page too small)
  }
  const size_t images = manifest["images"].size(), files = manifest["files"].size();
  if (a.has("json")) {
    ctx.out << assets::asset_export_summary(manifest, folder.path()).dump() << "\n";
    return 0;
  }
  ctx.out << "exported " << count_of(images, "image") << " (" << count_of(files, "file") << ") into "
          << common::printable(folder.path().string()) << "; manifest.json lists them\n";
  if (manifest["atlas"].is_object()) {
    ctx.out << "atlas " << options.atlas << ": " << count_of(manifest["atlas"]["pages"].size(), "page") << ", " << options.atlas
            << ".json first\n";
  }
  for (const auto& s : manifest["skipped"]) {
    ctx.out << "skipped job " << s.value("job", int64_t{0}) << ": " << common::printable(s.value("reason", "")) << "\n";
  }
  if (sources.empty()) {
    ctx.out << "(no job of run " << *run << " is " << state << (qa ? " with --qa " + *qa : "") << ")\n";
  }
  return 0;
}

}  // namespace rgbaq::cli
