#include "parallel/pipeline_schedule.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace dtsim::parallel {

namespace {

std::vector<PipelineStep> gpipe(std::int64_t m) {
  std::vector<PipelineStep> out;
  for (std::int64_t i = 0; i < m; ++i) out.push_back({Pass::forward, static_cast<std::int32_t>(i), 0});
  for (std::int64_t i = m - 1; i >= 0; --i) out.push_back({Pass::backward, static_cast<std::int32_t>(i), 0});
  return out;
}

// `combined`: one more warm-up forward, each steady forward combined with the backward after it.
std::vector<PipelineStep> one_f_one_b(std::int64_t p, std::int64_t s, std::int64_t m, bool combined = false) {
  std::vector<PipelineStep> out;
  const std::int64_t warmup = std::min(p - s - 1 + (combined ? 1 : 0), m);
  std::int64_t next_f = 0;
  std::int64_t next_b = 0;
  for (; next_f < warmup; ++next_f) out.push_back({Pass::forward, static_cast<std::int32_t>(next_f), 0});
  while (next_f < m) {
    out.push_back({Pass::forward, static_cast<std::int32_t>(next_f++), 0, combined});
    out.push_back({Pass::backward, static_cast<std::int32_t>(next_b++), 0});
  }
  while (next_b < m) out.push_back({Pass::backward, static_cast<std::int32_t>(next_b++), 0});
  return out;
}

// Forward step k of an interleaved stage: chunk (k / p) % v, micro-batch (k / (p v)) p + k % p;
// backward step k visits chunks in reverse.
PipelineStep interleaved_step(Pass pass, std::int64_t k, std::int64_t p, std::int64_t v) {
  const std::int64_t group = k / (p * v);
  const std::int64_t in_group = k % (p * v);
  std::int64_t chunk = in_group / p;
  if (pass == Pass::backward) chunk = v - 1 - chunk;
  const std::int64_t mb = group * p + in_group % p;
  return {pass, static_cast<std::int32_t>(mb), static_cast<std::int32_t>(chunk)};
}

// Forward steps stage s runs before its first backward (`combined`: one more, pipeline_schedule.hpp).
std::int64_t interleaved_warmup(std::int64_t p, std::int64_t s, std::int64_t m, std::int64_t v,
                                bool combined) {
  return std::min((p - s - 1) * 2 + (v - 1) * p + (combined ? 1 : 0), m * v);
}

std::vector<PipelineStep> interleaved(std::int64_t p, std::int64_t s, std::int64_t m, std::int64_t v,
                                      bool combined) {
  DTSIM_CHECK(m % p == 0, "interleaved schedule needs micro-batches divisible by the pipeline degree");
  const std::int64_t total = m * v;
  const std::int64_t warmup = interleaved_warmup(p, s, m, v, combined);
  std::vector<PipelineStep> out;
  std::int64_t f = 0;
  std::int64_t b = 0;
  for (; f < warmup; ++f) out.push_back(interleaved_step(Pass::forward, f, p, v));
  while (f < total) {
    out.push_back(interleaved_step(Pass::forward, f++, p, v));
    out.back().combined = combined;
    out.push_back(interleaved_step(Pass::backward, b++, p, v));
  }
  while (b < total) out.push_back(interleaved_step(Pass::backward, b++, p, v));
  return out;
}

std::vector<PipelineStep> zero_bubble_h1(std::int64_t p, std::int64_t s, std::int64_t m) {
  std::vector<PipelineStep> out;
  std::int32_t f = 0;
  std::int32_t b = 0;
  std::int32_t w = 0;
  const auto forward = [&] { out.push_back({Pass::forward, f++, 0}); };
  // Stage 0 runs each backward whole; the others B now and W now or later, oldest first.
  const auto backward = [&](bool with_weight) {
    if (s == 0) {
      out.push_back({Pass::backward, b++, 0});
      ++w;
      return;
    }
    out.push_back({Pass::input_grad, b++, 0});
    if (with_weight) out.push_back({Pass::weight_grad, w++, 0});
  };
  for (std::int64_t i = 0; i < p - s - 1 && f < m; ++i) forward();
  for (std::int64_t i = 0; i < s && f < m; ++i) {
    forward();
    backward(false);
  }
  while (f < m) {
    forward();
    backward(true);
  }
  while (b < m) backward(true);
  while (w < m) out.push_back({Pass::weight_grad, w++, 0});
  return out;
}

// peak_in_flight_layers() of the interleaved schedule (pipeline_schedule.hpp).
double interleaved_peak(std::int64_t p, std::int64_t s, std::int64_t m, std::int64_t v,
                        const std::vector<std::int64_t>& chunk_layers, bool combined) {
  const auto layers = [&](std::int64_t chunk) {
    return chunk_layers[static_cast<std::size_t>(chunk * p + s)];
  };
  const auto forward_layers = [&](std::int64_t k) { return layers((k / p) % v); };
  const auto backward_layers = [&](std::int64_t k) { return layers(v - 1 - (k / p) % v); };
  const std::int64_t total = m * v;
  const std::int64_t warmup = interleaved_warmup(p, s, m, v, combined);
  bool even = true;
  for (std::int64_t c = 1; c < v; ++c) even = even && layers(c) == layers(0);
  if (even) return static_cast<double>(std::min(warmup + 1, total) * layers(0));
  std::int64_t held = 0;  // after the warm-up's forwards (none is freed before the first backward)
  for (std::int64_t k = 0; k < warmup; ++k) held += forward_layers(k);
  if (warmup == total) return static_cast<double>(held);
  // Steady step i: forward warmup + i, then backward i; the most is right after a forward.
  std::int64_t most = 0;
  const std::int64_t steady = std::min(total - warmup, p * v);
  for (std::int64_t i = 0; i < steady; ++i) {
    held += forward_layers(warmup + i);
    most = std::max(most, held);
    held -= backward_layers(i);
  }
  return static_cast<double>(most);
}

}  // namespace

std::vector<std::int64_t> chunk_layers(std::int64_t layers, std::int64_t stages, std::int64_t virtual_stages) {
  const std::int64_t chunks = stages * virtual_stages;
  DTSIM_CHECK(chunks >= 1 && layers >= 1 && layers >= chunks - 2, "fewer layers than pipeline chunks");
  const std::int64_t base = layers / chunks;
  const std::int64_t extra = layers % chunks;
  std::vector<std::int64_t> out(static_cast<std::size_t>(chunks), base);
  // Hand the extra layers to the chunks farthest from either end first, so the ends keep `base`: by
  // decreasing depth min(i, chunks - 1 - i), the lower index first at equal depth.
  std::int64_t left = extra;
  for (std::int64_t depth = (chunks - 1) / 2; depth >= 0 && left > 0; --depth) {
    ++out[static_cast<std::size_t>(depth)];
    --left;
    if (left > 0 && chunks - 1 - depth != depth) {
      ++out[static_cast<std::size_t>(chunks - 1 - depth)];
      --left;
    }
  }
  return out;
}

std::vector<std::int64_t> model_chunk_layers(const config::TransformerSpec& model, std::int64_t stages,
                                             std::int64_t virtual_stages) {
  const std::int64_t mtp = model.mtp_layers;
  if (mtp > 0) {
    std::vector<std::int64_t> out = chunk_layers(model.layers + mtp, stages, virtual_stages);
    if (out.back() >= mtp) {
      out.back() -= mtp;
      return out;
    }
  }
  return chunk_layers(model.layers, stages, virtual_stages);
}

std::vector<std::int64_t> chunk_first_layers(const std::vector<std::int64_t>& chunk_layers) {
  std::vector<std::int64_t> first(chunk_layers.size(), 0);
  for (std::size_t c = 1; c < chunk_layers.size(); ++c) first[c] = first[c - 1] + chunk_layers[c - 1];
  return first;
}

std::int64_t stage_layers(const std::vector<std::int64_t>& chunk_layers, std::int64_t stages,
                          std::int64_t stage) {
  std::int64_t layers = 0;
  for (std::size_t c = static_cast<std::size_t>(stage); c < chunk_layers.size();
       c += static_cast<std::size_t>(stages))
    layers += chunk_layers[c];
  return layers;
}

double zero_bubble_peak(std::int64_t p, std::int64_t s, std::int64_t m, double kept, double w_read) {
  if (s == 0 || p <= 1) return static_cast<double>(std::min(m, p)) * kept;
  const std::int64_t w0 = std::min(p - s - 1, m);
  const std::int64_t k = std::min(s, m - w0);
  const auto held = [&](std::int64_t before_b, std::int64_t waiting) {
    return static_cast<double>(before_b) * kept + static_cast<double>(waiting) * w_read;
  };
  double most = held(w0, 0);                                              // the warm-up's forwards
  if (k >= 1) most = std::max({most, held(w0 + 1, k - 1), held(w0, k)});  // the pairs whose W waits
  if (w0 + k < m) {
    most = std::max({most, held(w0 + 1, k), held(w0, k + 1)});  // steady: forward, then B before its W
  } else if (k < m) {
    most = std::max(most, held(w0 - 1, k + 1));  // no forward left: the first B before its W
  }
  return most;
}

double peak_in_flight_layers(config::Schedule schedule, std::int64_t stages, std::int64_t stage,
                             std::int64_t micro_batches, std::int64_t virtual_stages,
                             const std::vector<std::int64_t>& chunk_layers, bool combined) {
  const std::int64_t layers = stage_layers(chunk_layers, stages, stage);
  const auto times = [&](std::int64_t n) { return static_cast<double>(n) * static_cast<double>(layers); };
  if (stages <= 1) {
    return times(schedule == config::Schedule::gpipe
                     ? micro_batches
                     : std::min<std::int64_t>(micro_batches, combined ? 2 : 1));
  }
  switch (schedule) {
    case config::Schedule::gpipe:
      return times(micro_batches);
    case config::Schedule::one_f_one_b:
      return times(std::min(micro_batches, stages - stage));
    case config::Schedule::interleaved:
      return interleaved_peak(stages, stage, micro_batches, virtual_stages, chunk_layers, combined);
    case config::Schedule::zero_bubble_h1:
      return times(std::min(micro_batches, stages));
  }
  throw core::InternalError("unknown pipeline schedule");
}

std::vector<PipelineStep> stage_schedule(config::Schedule schedule, std::int64_t stages, std::int64_t stage,
                                         std::int64_t micro_batches, std::int64_t virtual_stages,
                                         bool combined) {
  if (stages <= 1) {
    return schedule == config::Schedule::gpipe ? gpipe(micro_batches)
                                               : one_f_one_b(1, 0, micro_batches, combined);
  }
  switch (schedule) {
    case config::Schedule::gpipe:
      return gpipe(micro_batches);
    case config::Schedule::one_f_one_b:
      return one_f_one_b(stages, stage, micro_batches);
    case config::Schedule::interleaved:
      return interleaved(stages, stage, micro_batches, virtual_stages, combined);
    case config::Schedule::zero_bubble_h1:
      return zero_bubble_h1(stages, stage, micro_batches);
  }
  throw core::InternalError("unknown pipeline schedule");
}

}  // namespace dtsim::parallel
