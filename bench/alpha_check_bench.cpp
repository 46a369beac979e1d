// The alpha check's cost against the PNG writing it rides on (issue 40: a run's check adds < 5% to the
// time it takes to write the PNGs). For each kind of image, at 512x512 and 1024x1024, both measured in
// the same run on the same pixels: the check (assets::check_alpha), the PNG's encoding alone
// (storage::encode_png, libpng with the writer's settings) and the whole write as the writer thread does
// it (storage::write_png_atomic: a temporary file in a folder in the temporary directory, fsync, rename). The share
// of the encoding alone is the upper bound; the share of the write is what a run pays. Medians of --reps
// runs each.
//   sprite   a soft-edged disc on clear, its RGB a smooth gradient with mild noise (what renders look like)
//   specks   60 small blobs (many components, many runs)
//   checker  a #ffffff/#cccccc checker of 16 px cells behind a disc, opaque (the checker rule's worst case:
//            every cell is walked and verified)
//   noise    opaque random RGB (incompressible: the slowest PNG, and a worst case for the corner scan)
// usage: alpha_check_bench [--reps N]   (default 7)
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "assets/alpha_check.h"
#include "storage/png_file.h"

using Clock = std::chrono::steady_clock;
using namespace rgbaq;

namespace {

struct Image {
  const char* kind;
  int size;
  std::vector<uint8_t> rgba;
};

void put(std::vector<uint8_t>& rgba, int size, int x, int y, uint8_t r, uint8_t g, uint8_t b, uint8_t a) {
  uint8_t* p = rgba.data() + (size_t(y) * size + x) * 4;
  p[0] = r, p[1] = g, p[2] = b, p[3] = a;
}

uint8_t disc_alpha(int size, int x, int y, double radius) {
  const double d = std::hypot(x + 0.5 - size / 2.0, y + 0.5 - size / 2.0);
  return static_cast<uint8_t>(std::clamp((radius - d) * 64.0, 0.0, 255.0));  // a 4 px soft edge
}

Image sprite(int size, std::mt19937& rng) {
  Image im{"sprite", size, std::vector<uint8_t>(size_t(size) * size * 4)};
  std::uniform_int_distribution<int> jitter(-3, 3);
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      put(im.rgba, size, x, y, uint8_t(std::clamp(200 * x / size + jitter(rng), 0, 255)),
          uint8_t(std::clamp(120 + 100 * y / size + jitter(rng), 0, 255)), 60, disc_alpha(size, x, y, size * 0.4));
    }
  }
  return im;
}

Image specks(int size, std::mt19937& rng) {
  Image im{"specks", size, std::vector<uint8_t>(size_t(size) * size * 4)};
  std::uniform_int_distribution<int> at(0, size - 1);
  const int r = size / 64;
  for (int k = 0; k < 60; ++k) {
    const int cx = at(rng), cy = at(rng);
    for (int y = std::max(0, cy - r); y < std::min(size, cy + r); ++y) {
      for (int x = std::max(0, cx - r); x < std::min(size, cx + r); ++x) {
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) put(im.rgba, size, x, y, 240, 40, 40, 255);
      }
    }
  }
  return im;
}

Image checker(int size, std::mt19937&) {
  Image im{"checker", size, std::vector<uint8_t>(size_t(size) * size * 4)};
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      const uint8_t tone = ((x / 16 + y / 16) % 2) ? 0xcc : 0xff;
      if (disc_alpha(size, x, y, size * 0.3) > 0) {
        put(im.rgba, size, x, y, 30, 90, 200, 255);
      } else {
        put(im.rgba, size, x, y, tone, tone, tone, 255);
      }
    }
  }
  return im;
}

Image noise(int size, std::mt19937& rng) {
  Image im{"noise", size, std::vector<uint8_t>(size_t(size) * size * 4)};
  for (size_t i = 0; i < im.rgba.size(); ++i) im.rgba[i] = (i % 4 == 3) ? 255 : uint8_t(rng());
  return im;
}

template <typename F>
double median_seconds(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: alpha_check_bench [--reps N]\n");
      return 2;
    }
  }
  std::mt19937 rng(40);
  std::string folder_template = (std::filesystem::temp_directory_path() / "rgbaq-alpha-bench-XXXXXX").string();
  const char* folder = ::mkdtemp(folder_template.data());
  if (!folder) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::filesystem::path out = std::filesystem::path(folder) / "image.png";
  std::printf("%-8s %-10s %9s %9s %9s %8s %8s  %s\n", "image", "size", "check ms", "png ms", "write ms", "of png", "of write",
              "flags");
  double check_total = 0, png_total = 0, write_total = 0;
  for (int size : {512, 1024}) {
    for (auto make : {sprite, specks, checker, noise}) {
      const Image im = make(size, rng);
      assets::AlphaCheck result;
      const double check_s = median_seconds(reps, [&] { result = assets::check_alpha(im.rgba.data(), size, size); });
      size_t bytes = 0;
      const double png_s = median_seconds(reps, [&] { bytes = storage::encode_png(im.rgba.data(), size, size, {}).size(); });
      const double write_s = median_seconds(reps, [&] { storage::write_png_atomic(out, im.rgba.data(), size, size, {}); });
      check_total += check_s;
      png_total += png_s;
      write_total += write_s;
      std::printf("%-8s %4dx%-5d %9.3f %9.3f %9.3f %7.2f%% %7.2f%%  %s (%zu KiB)\n", im.kind, size, size, check_s * 1e3,
                  png_s * 1e3, write_s * 1e3, 100.0 * check_s / png_s, 100.0 * check_s / write_s, result.flags_text().c_str(),
                  bytes >> 10);
    }
  }
  std::filesystem::remove_all(folder);
  std::printf("all kinds together: the check is %.2f%% of the PNG encoding time, %.2f%% of the write\n",
              100.0 * check_total / png_total, 100.0 * check_total / write_total);
  return 0;
}
