#pragma once
// The sampler (contract §6): FlowMatch Euler sigmas and timesteps, exactly as diffusers'
// FlowMatchEulerDiscreteScheduler computes them in fp32, for the Turbo model's fixed grid and for the
// base model's shifted linspace.
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rgbaq::host {

// The Turbo checkpoint's sample_sigmas (contract §6), used when no model directory is given: as
// model_index.json spells them, and as the fp32 values the scheduler uses.
const std::vector<double>& turbo_sample_sigmas_published();
const std::vector<float>& turbo_sample_sigmas();

struct SchedulerConfig {
  std::vector<float> sample_sigmas;  // a fixed grid (Turbo); empty: linspace(1, 1/n, n)
  double shift = 1.0;
  int num_train_timesteps = 1000;
  bool use_dynamic_shifting = false;
  std::string time_shift_type = "exponential";  // or "linear"
  double base_shift = 0.5, max_shift = 0.9;     // mu = calculate_shift(image tokens)
  int base_image_seq_len = 256, max_image_seq_len = 8192;
  std::optional<double> shift_terminal;
  int default_steps = 40;  // the base pipeline's num_inference_steps when there is no fixed grid
};

// The Turbo defaults: the contract's sample_sigmas, shift 1, no dynamic shifting.
SchedulerConfig turbo_scheduler_config();

// From a model directory: model_index.json (`sample_sigmas`), scheduler/scheduler_config.json (diffusers
// layout) or host/scheduler.json (Core AI layout), whichever exist. Throws naming the file and field on
// a malformed value, or when the directory has none of them.
SchedulerConfig load_scheduler_config(const std::filesystem::path& model_dir);

struct Schedule {
  std::vector<float> sigmas;     // steps + 1 values, terminal 0 last
  std::vector<float> timesteps;  // steps values: sigmas * num_train_timesteps in fp32
  int steps() const { return static_cast<int>(timesteps.size()); }
  // The DiT's `timestep` input at step i: timesteps[i] / 1000 in fp32.
  float dit_timestep(int i) const { return timesteps.at(i) / 1000.0f; }
};

// image_tokens is N (it sets mu under dynamic shifting); steps 0 takes the fixed grid or default_steps.
Schedule make_schedule(const SchedulerConfig& config, int image_tokens, int steps = 0);

// x = x + (sigma_next - sigma) * vel in fp32 with two roundings (no FMA), in place.
void euler_step(std::span<float> x, std::span<const float> velocity, float sigma, float sigma_next);

}  // namespace rgbaq::host
