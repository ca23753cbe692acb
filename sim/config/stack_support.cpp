#include "config/stack_support.hpp"

#include <fmt/format.h>

#include "config/scenario.hpp"

namespace dtsim::config {

std::optional<std::string> unsupported_by_stack(const Scenario& s) {
  if (!s.software_support) return std::nullopt;
  const StackSupport& can = *s.software_support;
  const auto& p = s.parallelism;
  const auto refuse = [&](const std::string& what) {
    return fmt::format("the software stack {} does not run {} (its \"supports\" in hardware_profiles/software/)",
                       s.software, what);
  };
  if (p.zero_stage >= 0 && p.zero_stage < 4 && !can.zero_stages[static_cast<std::size_t>(p.zero_stage)])
    return refuse(fmt::format("ZeRO stage {}", p.zero_stage));
  if (p.distributed_optimizer && !can.distributed_optimizer) return refuse("Megatron's distributed optimizer");
  if (p.pipeline > 1 && !can.pipeline_parallel) return refuse("pipeline parallelism");
  if (p.zero_stage == 0 && p.data > 1 && (p.tensor > 1 || p.context > 1 || p.pipeline > 1) &&
      !can.unsharded_data_parallel_with_model_parallel) {
    return refuse("unsharded data parallelism (ZeRO stage 0) beside tensor, context or pipeline parallelism");
  }
  if (p.pipeline > 1 && p.zero_stage > can.max_zero_stage_with_pipeline) {
    return refuse(fmt::format("ZeRO stage {} with pipeline parallelism (at most stage {} beside it)", p.zero_stage,
                              can.max_zero_stage_with_pipeline));
  }
  if (p.context > 1 && !can.context_parallel) return refuse("context parallelism");
  if (p.schedule == Schedule::interleaved && !can.interleaved_schedule) return refuse("the interleaved schedule");
  if (p.schedule == Schedule::zero_bubble_h1 && p.pipeline > 1 && !can.zero_bubble_schedule)
    return refuse("the zero-bubble schedule (zb-h1)");
  if (p.expert_comm_overlap && !can.expert_comm_overlap)
    return refuse("the combined 1F1B schedule (expert_comm_overlap)");
  return std::nullopt;
}

}  // namespace dtsim::config
