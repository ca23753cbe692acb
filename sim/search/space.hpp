// The strategy space of one model on one cluster: every combination of tensor, pipeline, context and
// data degrees (their product is the GPU count), micro-batch size, virtual stages (interleaved 1F1B),
// the schedule of a pipeline without virtual stages (1F1B or zb-h1, the zero-bubble schedule:
// parallel/pipeline_schedule.hpp), sequence parallelism, activation recompute and data-parallel
// sharding (none, distributed optimizer, ZeRO-2, ZeRO-3) that the model and the batch allow. Everything else
// (precision, fabric, attention, overlap settings, rank order) is kept from the base scenario.
//
// Rules that reject a combination before it is simulated, each counted under its class:
//   tensor must divide heads and ffn_hidden_size, and kv_heads and tensor must divide one another
//   (Megatron-LM's column/row split); layers must split evenly into pipeline x virtual_stages chunks;
//   seq_length must divide by 2 x context (load-balanced causal split); the global batch by
//   data x micro-batch; the interleaved schedule needs micro-batches divisible by pipeline;
//   sequence parallelism is only enumerated with tensor > 1, sharding only with data x context > 1
//   (otherwise they are the same plan); what the scenario's software stack does not run (its
//   "supports": config/stack_support.hpp); parallel::infeasibility() (feasibility.hpp); selective
//   recompute with flash attention is skipped as dominated by no recompute (the fused kernel keeps no
//   scores, so the memory is the same, while the backward reruns the attention forward: layer_ops.cpp,
//   memory_model.cpp); finally the memory model (memory_model.hpp): the most loaded GPU must fit in the
//   GPU's memory, with min_headroom_gib left free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace dtsim::search {

// Bounds on the space (tensor, context and micro-batch sizes are powers of two up to their bound; pipeline
// degrees are the divisors of the GPUs left); 0 means no bound beyond what the model and cluster allow.
struct SpaceBounds {
  std::int64_t max_tensor = 0;  // 0: GPUs per node
  std::int64_t max_pipeline = 0;
  std::int64_t max_context = 8;
  std::int64_t max_micro_batch = 8;
  std::int64_t max_virtual_stages = 8;
  bool keep_recompute = false;  // only the base scenario's activation recompute
  bool keep_sharding = false;   // only the base scenario's ZeRO stage / distributed optimizer
  bool keep_sequence_parallel = false;
  // Mixture-of-experts models: only the base scenario's expert degree; otherwise every power of two that
  // divides the data degree and the experts.
  bool keep_expert = false;
  // Only the base scenario's schedule for plans without virtual stages; otherwise 1F1B and zb-h1 both
  // (a GPipe base keeps GPipe); and only its combined 1F1B setting (parallelism.expert_comm_overlap),
  // otherwise a mixture-of-experts model's plans with and without it where its stack runs it.
  bool keep_schedule = false;
  double min_headroom_gib = 0.0;  // GPU memory a plan must leave free (GiB of 2^30 bytes)
  // Only plans whose failed node's work can be re-routed (results/reroute_pace.hpp): ZeRO stage 0 without
  // a distributed optimizer (unless keep_sharding keeps the base's), one model chunk per stage, data
  // above 1. search() sets it under "recovery": "reroute".
  bool reroutable_only = false;
};

// A plan that passed every rule: its scenario (the base with the knobs set) and a short label.
struct Candidate {
  std::string label;  // e.g. "tp8 pp8 dp16 cp1 v1 mb1 sp rc=selective dist-opt"
  config::Scenario scenario;
};

struct RejectionClass {
  std::string reason;  // e.g. "heads not divisible by tensor degree"
  std::size_t count = 0;
};

struct Space {
  std::size_t enumerated = 0;              // combinations looked at
  std::vector<Candidate> candidates;       // in enumeration order
  std::vector<RejectionClass> rejections;  // by class, in the order above; classes with count > 0
};

// Enumerates and prunes the space around `base` (its model, cluster, batch and settings).
Space enumerate_space(const config::Scenario& base, const SpaceBounds& bounds);

// "tp8 pp8 dp16 cp1 v1 mb1 sp rc=selective dist-opt" for a scenario's plan; a zb-h1 plan names its
// schedule where the virtual stages would be ("tp8 pp8 dp16 cp1 zb-h1 mb1 ...").
std::string strategy_label(const config::Scenario& scenario);

}  // namespace dtsim::search
