#pragma once
// A whole render in float64 from given text features: the host's noise and schedule, the float64 DiT
// (dit_reference.h, with W8A8 or changed weights as its caller sets it) for every step with Euler in
// float64, the float64 VAE (vae_reference.h), and the host contract's 8-bit conversion. What a session's
// render_embedded does, with none of the engine's graphs.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "engine/model/model_config.h"
#include "host/noise.h"
#include "host/rgba8.h"
#include "host/rope.h"
#include "host/schedule.h"
#include "tests/engine/dit_reference.h"
#include "tests/engine/vae_reference.h"

namespace rgbaq::testing {

inline std::vector<uint8_t> reference_render(const DitReference& dit, const VaeReference& vae,
                                             const engine::VaeConfig& vae_config, const host::SchedulerConfig& scheduler,
                                             const std::vector<float>& text, int64_t l, uint64_t seed,
                                             const host::ImageSize& size) {
  const int64_t n = size.tokens();
  const auto rope = host::build_rope(host::RopeTables::from_formula(), static_cast<int>(l), size);
  const host::Schedule schedule = host::make_schedule(scheduler, static_cast<int>(n));
  const std::vector<float> noise = host::initial_tokens(seed, size);
  Vec x(noise.begin(), noise.end());
  for (int i = 0; i < schedule.steps(); ++i) {
    const std::vector<float> xf(x.begin(), x.end());
    const Vec v = dit.velocity(xf, text, l, n, schedule.dit_timestep(i), rope);
    const double dt = double(schedule.sigmas[i + 1]) - double(schedule.sigmas[i]);
    for (size_t j = 0; j < x.size(); ++j) x[j] += dt * v[j];
  }
  const Vec image = vae.decode(std::vector<float>(x.begin(), x.end()), size.grid_height(), size.grid_width(), vae_config);
  std::vector<uint8_t> rgba(static_cast<size_t>(size.width) * size.height * 4);
  const std::vector<float> planar(image.begin(), image.end());
  host::image_to_rgba8(planar, size.width, size.height, rgba);
  return rgba;
}

// The share of RGBA pixels whose four channels are all within `levels` of the other image's.
inline double pixels_within(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, int levels) {
  size_t within = 0;
  for (size_t p = 0; p + 4 <= a.size(); p += 4) {
    bool near = true;
    for (size_t c = p; c < p + 4; ++c) near = near && std::abs(int{a[c]} - int{b[c]}) <= levels;
    within += near;
  }
  return a.size() < 4 ? 0 : double(within) / double(a.size() / 4);
}

}  // namespace rgbaq::testing
