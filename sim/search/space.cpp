#include "search/space.hpp"

#include <algorithm>
#include <array>
#include <optional>

#include <fmt/format.h>

#include "core/checked_math.hpp"
#include "core/units.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/memory_model.hpp"

namespace dtsim::search {

namespace {

enum Rule : std::size_t {
  kHeads,
  kKvHeads,
  kFfn,
  kLayers,
  kSequence,
  kBatch,
  kInterleaved,
  kSize,
  kUnsupported,
  kOther,
  kMemory,
  kHeadroom,
  kDuplicate,
  kRuleCount
};

constexpr std::array<const char*, kRuleCount> kRuleText{
    "tensor degree does not divide heads",
    "kv_heads and tensor degree: neither divides the other",
    "tensor degree does not divide ffn_hidden_size",
    "layers do not split evenly into pipeline x virtual stages, nor with the embedding and the loss counted "
    "as layers",
    "seq_length not divisible by 2 x context degree",
    "global batch not divisible by data x micro-batch",
    "interleaved schedule: micro-batches not divisible by pipeline",
    "too large to simulate (layer passes over dtsim's limit)",
    "the software stack does not run it (its \"supports\": ZeRO stages, with pipeline, context, "
    "interleaving)",
    "other feasibility rule (GPU precision support, mixture-of-experts rules, context parallelism with a "
    "sliding window)",
    "out of memory (memory model)",
    "fits, but leaves less memory free than the headroom asked (--min-headroom)",
    "fits, but dominated by recompute none (with flash attention, selective recompute reruns the attention "
    "forward and saves no activation memory)",
};

struct Sharding {
  int zero_stage = 0;
  bool distributed_optimizer = false;
};

const char* sharding_name(int zero_stage, bool distributed_optimizer) {
  if (zero_stage == 0) return distributed_optimizer ? "dist-opt" : "zero0";
  if (zero_stage == 1) return "zero1";
  return zero_stage == 2 ? "zero2" : "zero3";
}

// 1, 2, 4, ... up to bound (at most 2^62: doubling stops before it would overflow).
std::vector<std::int64_t> powers_of_two(std::int64_t bound) {
  std::vector<std::int64_t> out;
  for (std::int64_t v = 1; v <= bound; v *= 2) {
    out.push_back(v);
    if (v > bound / 2) break;
  }
  return out;
}

// The first rule `s` breaks, or kRuleCount when it passes them all.
std::size_t first_broken_rule(const config::Scenario& s, double headroom_bytes) {
  const auto& m = s.model;
  const auto& p = s.parallelism;
  const auto& t = s.training;
  if (m.heads % p.tensor != 0) return kHeads;
  if (m.kv_heads % p.tensor != 0 && p.tensor % m.kv_heads != 0) return kKvHeads;
  if ((!m.moe || m.moe->first_dense_layers > 0) && m.ffn_hidden_size % p.tensor != 0) return kFfn;
  const auto chunks = core::checked_mul(p.pipeline, p.virtual_stages);
  // An even split, or Megatron-Core's with the embedding and the loss counted as layers (the first and
  // the last chunk one layer short: parallel/pipeline_schedule.hpp, chunk_layers); multi-token prediction
  // modules take layer slots in the last chunk (model_chunk_layers).
  const std::int64_t slots = m.layers + m.mtp_layers;
  if (!chunks || (slots % *chunks != 0 && (*chunks < 3 || (slots + 2) % *chunks != 0))) return kLayers;
  if (p.context > 1 && m.seq_length % (2 * p.context) != 0) return kSequence;
  const auto replica_batch = core::checked_mul(p.data, t.micro_batch_size);
  if (!replica_batch || t.global_batch_size % *replica_batch != 0) return kBatch;
  if (p.schedule == config::Schedule::interleaved && parallel::micro_batches(s) % p.pipeline != 0)
    return kInterleaved;
  if (parallel::layer_passes(s) > static_cast<double>(parallel::kMaxSimulated)) return kSize;
  if (config::unsupported_by_stack(s)) return kUnsupported;
  if (parallel::infeasibility(s)) return kOther;
  const double used = parallel::memory_per_gpu(s).total_bytes();
  if (used > s.hbm_bytes_per_gpu()) return kMemory;
  if (used > s.hbm_bytes_per_gpu() - headroom_bytes) return kHeadroom;
  return kRuleCount;
}

}  // namespace

std::string strategy_label(const config::Scenario& s) {
  const auto& p = s.parallelism;
  const std::string stages = p.schedule == config::Schedule::zero_bubble_h1
                                 ? std::string(config::to_string(p.schedule))
                                 : fmt::format("v{}", p.virtual_stages);
  const std::string combined = !p.expert_comm_overlap  ? ""
                               : p.delay_wgrad_compute ? " combined dW"
                                                       : " combined";
  return fmt::format("tp{} pp{} dp{} cp{}{} {}{} mb{} {} rc={} {}", p.tensor, p.pipeline, p.data, p.context,
                     s.model.moe ? fmt::format(" ep{}{}", p.expert, p.folded_experts() ? " etp1" : "") : "",
                     stages, combined, s.training.micro_batch_size, p.sequence_parallel ? "sp" : "-",
                     config::to_string(s.training.activation_recompute),
                     sharding_name(p.zero_stage, p.distributed_optimizer));
}

Space enumerate_space(const config::Scenario& base, const SpaceBounds& bounds) {
  const std::int64_t gpus = base.gpu_count();
  const std::int64_t max_tensor = bounds.max_tensor > 0 ? bounds.max_tensor : base.node.gpus_per_node;
  const std::int64_t max_pipeline = bounds.max_pipeline > 0 ? bounds.max_pipeline : base.model.layers;
  const std::int64_t max_context = bounds.max_context > 0 ? bounds.max_context : gpus;
  // More virtual stages than layers never split the layers (pipeline >= 2): the bound stops there.
  const std::int64_t max_virtual =
      bounds.reroutable_only ? 1
                             : std::clamp<std::int64_t>(bounds.max_virtual_stages, 1,
                                                        std::max<std::int64_t>(base.model.layers, 1));
  // A micro-batch above the global batch never divides it.
  const std::int64_t max_micro = bounds.max_micro_batch > 0
                                     ? std::min(bounds.max_micro_batch, base.training.global_batch_size)
                                     : base.training.global_batch_size;

  std::vector<config::Recompute> recomputes{config::Recompute::none, config::Recompute::selective,
                                            config::Recompute::full};
  if (bounds.keep_recompute) recomputes = {base.training.activation_recompute};
  std::vector<Sharding> shardings{{0, false}, {0, true}, {2, false}, {3, false}};
  if (bounds.reroutable_only) shardings = {{0, false}};
  if (bounds.keep_sharding)
    shardings = {{base.parallelism.zero_stage, base.parallelism.distributed_optimizer}};
  const config::Schedule flat_schedule = base.parallelism.schedule == config::Schedule::interleaved
                                             ? config::Schedule::one_f_one_b
                                             : base.parallelism.schedule;
  // Schedules of a pipeline without virtual stages: the base's, and the other of 1F1B and zb-h1.
  std::vector<config::Schedule> flat_schedules{flat_schedule};
  if (!bounds.keep_schedule && flat_schedule == config::Schedule::one_f_one_b)
    flat_schedules.push_back(config::Schedule::zero_bubble_h1);
  if (!bounds.keep_schedule && flat_schedule == config::Schedule::zero_bubble_h1)
    flat_schedules.push_back(config::Schedule::one_f_one_b);
  // Combined 1F1B (parallelism.expert_comm_overlap) with and without, for a mixture-of-experts model
  // whose stack runs it, unless the schedule is kept; proposed only where it can run
  // (parallel::combined_1f1b_infeasible).
  std::vector<bool> overlaps{base.parallelism.expert_comm_overlap};
  if (base.model.moe && !bounds.keep_schedule && !bounds.reroutable_only &&
      (!base.software_support || base.software_support->expert_comm_overlap)) {
    overlaps = {false, true};
  }
  // A pipeline degree's (virtual stages, schedule) pairs: without virtual stages each flat schedule, then
  // interleaved; one stage keeps the base's (its schedule does not matter).
  const auto stage_layouts = [&](std::int64_t pp) {
    std::vector<std::pair<std::int64_t, config::Schedule>> out;
    if (pp == 1) return decltype(out){{1, flat_schedule}};
    for (const config::Schedule schedule : flat_schedules) out.emplace_back(1, schedule);
    for (std::int64_t v = 2; v <= max_virtual; ++v) out.emplace_back(v, config::Schedule::interleaved);
    return out;
  };

  std::vector<std::pair<Sharding, bool>> sharding_overlaps;
  for (const Sharding& sh : shardings) {
    for (const bool overlap : overlaps) sharding_overlaps.emplace_back(sh, overlap);
  }

  Space space;
  std::array<std::size_t, kRuleCount> rejected{};
  for (const std::int64_t tp : powers_of_two(std::min(max_tensor, gpus))) {
    for (const std::int64_t cp : powers_of_two(std::min(max_context, gpus / tp))) {
      if (gpus % (tp * cp) != 0) continue;
      const std::int64_t rest = gpus / (tp * cp);
      for (std::int64_t pp = 1; pp <= std::min(rest, max_pipeline); ++pp) {
        if (rest % pp != 0) continue;
        const std::int64_t dp = rest / pp;
        if (bounds.reroutable_only && dp < 2) continue;
        // Expert parallelism (mixture-of-experts models): powers of two dividing the experts and data,
        // the experts split over the tensor group; with tensor > 1 also folded (expert_tensor 1), powers
        // of two dividing the stage's ranks (feasibility.hpp rejects the misaligned ones).
        struct ExpertLayout {
          std::int64_t ep = 1;
          std::optional<std::int64_t> expert_tensor;
        };
        std::vector<ExpertLayout> experts{{base.parallelism.expert, base.parallelism.expert_tensor}};
        if (base.model.moe && !bounds.keep_expert) {
          experts.clear();
          for (const std::int64_t ep : powers_of_two(dp)) {
            if (dp % ep == 0 && base.model.moe->experts % ep == 0) experts.push_back({ep, std::nullopt});
          }
          if (tp > 1) {
            for (const std::int64_t ep : powers_of_two(tp * cp * dp)) {
              if (base.model.moe->experts % ep == 0) experts.push_back({ep, 1});
            }
          }
        }
        for (const auto& [ep, expert_tensor] : experts) {
          for (const auto& [v, schedule] : stage_layouts(pp)) {
            for (const std::int64_t mb : powers_of_two(max_micro)) {
              for (const bool sp : tp > 1 && !bounds.keep_sequence_parallel
                                       ? std::vector<bool>{false, true}
                                       : std::vector<bool>{tp > 1 && base.parallelism.sequence_parallel}) {
                for (const config::Recompute rc : recomputes) {
                  for (const auto& [sh, overlap] : sharding_overlaps) {
                    if (dp * cp == 1 && (sh.zero_stage != 0 || sh.distributed_optimizer) &&
                        !bounds.keep_sharding)
                      continue;
                    config::Scenario s = base;
                    auto& par = s.parallelism;
                    par.tensor = tp;
                    par.context = cp;
                    par.pipeline = pp;
                    par.data = dp;
                    par.expert = ep;
                    par.expert_tensor = expert_tensor;
                    par.virtual_stages = v;
                    par.schedule = schedule;
                    par.sequence_parallel = sp;
                    par.zero_stage = sh.zero_stage;
                    par.distributed_optimizer = sh.distributed_optimizer;
                    par.expert_comm_overlap = overlap;
                    s.training.micro_batch_size = mb;
                    s.training.activation_recompute = rc;
                    // The combined form where it cannot run is no plan of its own (the plain one is).
                    if (overlap && overlaps.size() > 1 && parallel::combined_1f1b_infeasible(s)) continue;
                    ++space.enumerated;
                    std::size_t rule = first_broken_rule(s, bounds.min_headroom_gib * core::kGiB);
                    if (rule == kRuleCount && !bounds.keep_recompute && rc == config::Recompute::selective &&
                        s.model.attention == config::AttentionKind::flash) {
                      rule = kDuplicate;
                    }
                    if (rule < kRuleCount) {
                      ++rejected[rule];
                      continue;
                    }
                    s.name = base.name + " [" + strategy_label(s) + "]";
                    space.candidates.push_back({strategy_label(s), std::move(s)});
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  for (std::size_t rule = 0; rule < kRuleCount; ++rule) {
    if (rejected[rule] > 0) space.rejections.push_back({kRuleText[rule], rejected[rule]});
  }
  return space;
}

}  // namespace dtsim::search
