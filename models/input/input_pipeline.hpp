// The input pipeline's rate: how many samples per second the readers can supply to the job, which
// resource limits it, and how long one global batch takes to supply (docs/input-pipeline.md).
//
// A sample costs s = sample_bytes / dedup bytes from storage ((1 - cache_hit) of the reads reach it),
// c = preprocess_core_s / dedup core-seconds of preprocessing and, from reader servers, t =
// tensor_bytes / dedup bytes to a trainer. Each resource passes samples at its capacity over its cost
// per sample; the pipeline runs at the least of them (a chain of stages moves at its slowest):
//   storage          storage_gbytes_per_s x 1e9 / (s (1 - cache_hit))
//   preprocessing    on the trainers' hosts: nodes x min(workers_per_gpu x GPUs per node, host cores) / c
//                    (workers_per_gpu 0: the training process itself, one core per GPU);
//                    on reader servers: count x cores / c
//   reader NICs      count x nic_gbps / 8 x 1e9 / t               (reader servers only)
//   trainer NICs     nodes x the cluster's NICs per node x nic_gbps / 8 x 1e9 / t (reader servers only; the training's
//                    own traffic on those NICs is not counted against it)
// A resource without a cost (s, c or t of 0, or no storage bandwidth stated) does not limit.
// One global batch of B samples takes load_s = B / rate; every GPU receives its part of it over that
// time, in parallel with the others.
//
// How the engine runs it (the load is a task on an input stream of each GPU): with workers the load of
// the next batch runs beside this iteration, so an iteration takes max(compute and communication,
// load_s) and the GPU waits for data ("data stall") only when the load is longer; without workers the
// training process loads first and trains after, load_s + the rest. Layer-table workloads bound the
// workers' lead at prefetch_factor x workers_per_gpu batches (PyTorch's DataLoader).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "models/resource_need.hpp"

namespace dtsim::models {

struct InputLimit {
  std::string resource;  // "storage", "preprocessing", "reader NICs", "trainer NICs"
  double samples_per_s = 0.0;
};

struct InputRate {
  std::vector<InputLimit> limits;  // every resource with a cost, in the order above
  double samples_per_s = 0.0;      // the least of them; 0 when none limits
  std::string limited_by;          // the first resource at that rate; empty when none limits
  double load_s = 0.0;             // one global batch at that rate (0 when none limits)
  bool prefetch = false;           // workers_per_gpu >= 1
  std::int64_t prefetch_batches = 0;  // the workers' lead: prefetch_factor x workers_per_gpu
};

// Requires scenario.input. Preprocessing on trainer hosts needs host cores (input.host_cpu_cores or
// the node profile's), which the loader checks.
InputRate input_rate(const config::Scenario& scenario);

// Sizing: what the pipeline needs to keep up with GPUs that consume `demand` samples per second (the
// global batch over the iteration without its data stall). For each resource with a cost, the stated
// quantity and the least that supplies the demand:
//   storage GB/s                        demand x s (1 - cache_hit) / 1e9
//   data-loader workers per GPU         ceil(demand x c / (nodes x GPUs per node)), at least 1
//   host CPU cores per node             ceil(demand x c / nodes)                 (trainer hosts)
//   reader servers                      ceil(demand x c / cores), and ceil(demand x t / NIC bytes/s)
//                                       for their NICs                           (reader servers)
//   trainer NIC Gb/s per node           demand x t x 8 / nodes / 1e9             (reader servers)
struct InputSizing {
  double demand_samples_per_s = 0.0;
  std::vector<ResourceNeed> needs;  // "storage GB/s", "data-loader workers per GPU", ...
};

InputSizing size_input(const config::Scenario& scenario, double demand_samples_per_s);

}  // namespace dtsim::models
