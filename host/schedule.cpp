#include "host/schedule.h"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_limits.h"

// Every array below is fp32 as in diffusers; Python-float scalars meet fp32 arrays as NumPy 2 (NEP 50)
// has them do: the scalar is rounded to fp32 first. Built with -ffp-contract=off.

namespace rgbaq::host {
namespace {

using nlohmann::json;

json read_json(const std::filesystem::path& path) {
  const std::string text = common::read_json_file(path, common::kModelConfigJsonLimits);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw std::runtime_error(path.string() + ": not valid JSON: " + e.what());
  }
}

template <typename T>
void take(const json& doc, const char* key, T& out, const std::filesystem::path& path) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return;
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    throw std::runtime_error(path.string() + ": field \"" + key + "\" has the wrong type (" + it->type_name() + ")");
  }
}

void take_sample_sigmas(const json& doc, SchedulerConfig& config, const std::filesystem::path& path) {
  std::vector<double> values;
  take(doc, "sample_sigmas", values, path);
  if (values.empty()) return;
  config.sample_sigmas.clear();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!(values[i] > 0.0 && values[i] <= 1.0)) {
      throw std::runtime_error(path.string() + ": sample_sigmas[" + std::to_string(i) + "] = " +
                               std::to_string(values[i]) + " is outside (0, 1]");
    }
    config.sample_sigmas.push_back(static_cast<float>(values[i]));
  }
}

void take_scheduler_fields(const json& doc, SchedulerConfig& config, const std::filesystem::path& path) {
  take(doc, "shift", config.shift, path);
  take(doc, "num_train_timesteps", config.num_train_timesteps, path);
  take(doc, "use_dynamic_shifting", config.use_dynamic_shifting, path);
  take(doc, "time_shift_type", config.time_shift_type, path);
  take(doc, "base_shift", config.base_shift, path);
  take(doc, "max_shift", config.max_shift, path);
  take(doc, "base_image_seq_len", config.base_image_seq_len, path);
  take(doc, "max_image_seq_len", config.max_image_seq_len, path);
  double terminal = 0.0;
  take(doc, "shift_terminal", terminal, path);
  config.shift_terminal = terminal != 0.0 ? std::optional<double>(terminal) : std::nullopt;
  if (config.time_shift_type != "exponential" && config.time_shift_type != "linear") {
    throw std::runtime_error(path.string() + ": time_shift_type \"" + config.time_shift_type +
                             "\" is not supported (exponential or linear)");
  }
  if (config.num_train_timesteps <= 0) {
    throw std::runtime_error(path.string() + ": num_train_timesteps must be positive");
  }
}

// numpy.linspace(start, stop, n) in float64, then astype(float32).
std::vector<float> linspace_f32(double start, double stop, int n) {
  std::vector<float> out(n);
  const double step = n > 1 ? (stop - start) / (n - 1) : 0.0;
  for (int i = 0; i < n; ++i) out[i] = static_cast<float>(i * step + start);
  if (n > 1) out[n - 1] = static_cast<float>(stop);
  return out;
}

}  // namespace

const std::vector<double>& turbo_sample_sigmas_published() {
  static const std::vector<double> sigmas = {1.0, 0.978453, 0.95418, 0.926626, 0.89508, 0.845148, 0.704534, 0.414568};
  return sigmas;
}

const std::vector<float>& turbo_sample_sigmas() {
  static const std::vector<float> sigmas(turbo_sample_sigmas_published().begin(), turbo_sample_sigmas_published().end());
  return sigmas;
}

SchedulerConfig turbo_scheduler_config() {
  SchedulerConfig config;
  config.sample_sigmas = turbo_sample_sigmas();
  return config;
}

SchedulerConfig load_scheduler_config(const std::filesystem::path& model_dir) {
  SchedulerConfig config;
  bool found = false;
  for (const auto& rel : {"scheduler/scheduler_config.json", "host/scheduler.json", "model_index.json"}) {
    const auto path = model_dir / rel;
    if (!std::filesystem::exists(path)) continue;
    found = true;
    const json doc = read_json(path);
    if (!doc.is_object()) throw std::runtime_error(path.string() + ": expected a JSON object");
    if (std::string(rel) != "model_index.json") take_scheduler_fields(doc, config, path);
    take_sample_sigmas(doc, config, path);
  }
  if (!found) {
    throw std::runtime_error(model_dir.string() +
                             ": no scheduler/scheduler_config.json, host/scheduler.json or model_index.json");
  }
  return config;
}

Schedule make_schedule(const SchedulerConfig& config, int image_tokens, int steps) {
  std::vector<float> sigmas;
  if (!config.sample_sigmas.empty()) {
    if (steps != 0 && steps != static_cast<int>(config.sample_sigmas.size())) {
      throw std::invalid_argument("this model samples on a fixed grid of " +
                                  std::to_string(config.sample_sigmas.size()) + " steps; " + std::to_string(steps) +
                                  " were asked for");
    }
    sigmas = config.sample_sigmas;
  } else {
    const int n = steps != 0 ? steps : config.default_steps;
    if (n < 1 || n > 1000) throw std::invalid_argument("steps must be 1..1000, not " + std::to_string(n));
    sigmas = linspace_f32(1.0, 1.0 / n, n);
  }

  if (config.use_dynamic_shifting) {
    // calculate_shift(image_seq_len, ...) in Python floats.
    const double m = (config.max_shift - config.base_shift) / (config.max_image_seq_len - config.base_image_seq_len);
    const double b = config.base_shift - m * config.base_image_seq_len;
    const double mu = image_tokens * m + b;
    const float shift_value = static_cast<float>(config.time_shift_type == "exponential" ? std::exp(mu) : mu);
    for (float& s : sigmas) {
      const float odds = 1.0f / s - 1.0f;  // (1/t - 1) ** 1.0 is exact
      s = shift_value / (shift_value + odds);
    }
  } else {
    const float shift = static_cast<float>(config.shift);
    const float shift_minus_one = static_cast<float>(config.shift - 1.0);
    for (float& s : sigmas) s = shift * s / (1.0f + shift_minus_one * s);
  }

  if (config.shift_terminal) {
    const float scale = (1.0f - sigmas.back()) / static_cast<float>(1.0 - *config.shift_terminal);
    for (float& s : sigmas) s = 1.0f - (1.0f - s) / scale;
  }

  Schedule schedule;
  schedule.timesteps.reserve(sigmas.size());
  const float train_steps = static_cast<float>(config.num_train_timesteps);
  for (float s : sigmas) schedule.timesteps.push_back(s * train_steps);
  schedule.sigmas = std::move(sigmas);
  schedule.sigmas.push_back(0.0f);
  return schedule;
}

void euler_step(std::span<float> x, std::span<const float> velocity, float sigma, float sigma_next) {
  if (x.size() != velocity.size()) {
    throw std::invalid_argument("euler_step: " + std::to_string(x.size()) + " latent values but " +
                                std::to_string(velocity.size()) + " velocity values");
  }
  const float dt = sigma_next - sigma;
  for (size_t i = 0; i < x.size(); ++i) {
    const float delta = dt * velocity[i];
    x[i] = x[i] + delta;
  }
}

}  // namespace rgbaq::host
