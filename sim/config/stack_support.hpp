// What a software stack can run (hardware_profiles/software/<id>.json, "supports"): the data-parallel
// sharding, schedule and context-parallel combinations the framework at that version implements. A
// scenario that names a stack with a "supports" block and asks for something outside it is infeasible
// with the reason (parallel/feasibility.hpp), and a search leaves such plans out under their own class
// (search/space.hpp), so every plan it proposes runs on the stated framework. A stack without the block
// is not checked.
#pragma once

#include <array>
#include <optional>
#include <string>

namespace dtsim::config {

struct Scenario;

struct StackSupport {
  std::array<bool, 4> zero_stages{true, true, true, true};  // ZeRO stages 0-3 it runs (FSDP: 3)
  bool distributed_optimizer = true;                        // Megatron's distributed optimizer
  int max_zero_stage_with_pipeline = 3;                     // the highest stage beside pipeline > 1
  bool context_parallel = true;
  bool interleaved_schedule = true;
  bool zero_bubble_schedule = true;  // ZB-H1, one model chunk per stage (pipeline_schedule.hpp)
  bool pipeline_parallel = true;  // a scheduled micro-batch pipeline (pipeline > 1)
  // Plain replicas (ZeRO stage 0 with data > 1) beside tensor, context or pipeline parallelism; torchtitan
  // of 2024 ran DDP on one-dimensional meshes only.
  bool unsharded_data_parallel_with_model_parallel = true;
  // Combined 1F1B, the token exchanges of one micro-batch beside another's compute
  // (ParallelismSpec::expert_comm_overlap).
  bool expert_comm_overlap = true;
};

// Why the scenario's software stack cannot run its plan, or nothing (also when it names no stack or its
// stack states no "supports").
std::optional<std::string> unsupported_by_stack(const Scenario& s);

}  // namespace dtsim::config
