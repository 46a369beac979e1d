#include "web/web_files.h"

#include <map>
#include <string>

namespace rgbaq::embedded {
std::string_view web_index_html();
std::string_view web_gallery_css();
std::string_view web_api_js();
std::string_view web_view_state_js();
std::string_view web_runs_view_js();
std::string_view web_run_view_js();
std::string_view web_viewer_js();
std::string_view web_app_js();
}  // namespace rgbaq::embedded

namespace rgbaq::web {

std::optional<WebFile> web_file(std::string_view name) {
  static const std::map<std::string, WebFile, std::less<>> files = {
      {"index.html", {"text/html; charset=utf-8", embedded::web_index_html()}},
      {"gallery.css", {"text/css; charset=utf-8", embedded::web_gallery_css()}},
      {"api.js", {"text/javascript; charset=utf-8", embedded::web_api_js()}},
      {"view_state.js", {"text/javascript; charset=utf-8", embedded::web_view_state_js()}},
      {"runs_view.js", {"text/javascript; charset=utf-8", embedded::web_runs_view_js()}},
      {"run_view.js", {"text/javascript; charset=utf-8", embedded::web_run_view_js()}},
      {"viewer.js", {"text/javascript; charset=utf-8", embedded::web_viewer_js()}},
      {"app.js", {"text/javascript; charset=utf-8", embedded::web_app_js()}},
  };
  const auto it = files.find(name);
  if (it == files.end()) return std::nullopt;
  return it->second;
}

}  // namespace rgbaq::web
