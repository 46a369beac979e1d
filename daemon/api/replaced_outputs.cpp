#include "daemon/api/replaced_outputs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

#include "common/trusted_folder.h"
#include "daemon/base/private_files.h"
#include "storage/png_file.h"
#include "storage/render_metadata.h"

namespace rgbaq::daemon {
namespace {

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

std::string numbered(const std::filesystem::path& name, int n) {
  return n == 1 ? name.string() : name.stem().string() + "-" + std::to_string(n) + name.extension().string();
}

}  // namespace

std::filesystem::path move_aside(const std::filesystem::path& output) {
  const std::filesystem::path folder = output.parent_path(), name = output.filename();
  const Fd from{common::open_trusted_folder(folder)};
  const Fd to{common::open_trusted_folder(folder / "replaced", output_dir_mode())};
  // link + unlink, not rename: rename would replace an image moved aside earlier under that name.
  for (int n = 1; n < 10000; ++n) {
    const std::string target = numbered(name, n);
    if (::linkat(from.fd, name.c_str(), to.fd, target.c_str(), 0) == 0) {
      if (::unlinkat(from.fd, name.c_str(), 0) != 0) {
        const int e = errno;
        ::unlinkat(to.fd, target.c_str(), 0);  // the image stays where it was, under its one name
        throw std::system_error(e, std::generic_category(), "cannot move " + output.string() + " aside");
      }
      return folder / "replaced" / target;
    }
    if (errno != EEXIST) {
      throw std::system_error(errno, std::generic_category(), "cannot move " + output.string() + " to " +
                                                                  (folder / "replaced").string());
    }
  }
  throw std::runtime_error("cannot move " + output.string() + " aside: " + (folder / "replaced").string() +
                           " holds 9,999 files of that name");
}

bool delete_own_image(const std::filesystem::path& output, int64_t job_id) {
  storage::PngImage png;
  try {
    png = storage::read_png_info(output);
  } catch (const std::exception&) {
    return false;  // gone, or not a PNG of ours: not this job's image
  }
  if (storage::job_id_of(png) != job_id) return false;
  const Fd folder{common::open_trusted_folder(output.parent_path())};
  if (::unlinkat(folder.fd, output.filename().c_str(), 0) == 0) return true;
  if (errno == ENOENT) return false;
  throw std::system_error(errno, std::generic_category(), "cannot delete " + output.string());
}

}  // namespace rgbaq::daemon
