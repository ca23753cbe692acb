#include "config/parallelism_loader.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/dlrm_loader.hpp"
#include "core/checked_math.hpp"

namespace dtsim::config {

using nlohmann::json;

namespace {

// "order": the four mesh dimensions as "tp-cp-dp-pp" in any order, each once.
MeshOrder read_order(ObjectReader& r) {
  const std::string text = r.required<std::string>("order");
  const std::string expected = "a permutation of tp, cp, dp, pp joined by '-', e.g. \"tp-cp-dp-pp\"";
  MeshOrder order{};
  std::array<bool, kMeshDims> seen{};
  std::size_t start = 0;
  int count = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('-', start), text.size());
    const std::string token = text.substr(start, end - start);
    bool known = false;
    for (int d = 0; d < kMeshDims; ++d) {
      if (token != to_string(static_cast<MeshDim>(d))) continue;
      known = !seen[static_cast<std::size_t>(d)] && count < kMeshDims;
      if (known) {
        seen[static_cast<std::size_t>(d)] = true;
        order[static_cast<std::size_t>(count++)] = static_cast<MeshDim>(d);
      }
    }
    if (!known) throw r.mismatch("order", expected);
    start = end + 1;
  }
  if (count != kMeshDims) throw r.mismatch("order", expected);
  return order;
}

}  // namespace

Zero3Spec read_zero3(ObjectReader& r, const Zero3Spec& base) {
  r.expect_keys({"fetch", "granularity", "buffers", "persistence_threshold"});
  Zero3Spec z = base;
  z.fetch = r.optional_enum<Zero3Fetch>(
      "fetch", z.fetch, named_choices(std::array{Zero3Fetch::prefetch, Zero3Fetch::on_demand}));
  z.granularity = r.optional_enum<Zero3Granularity>(
      "granularity", z.granularity,
      named_choices(std::array{Zero3Granularity::layer, Zero3Granularity::tensor}));
  z.buffers = r.optional_enum<CollectiveBuffers>(
      "buffers", z.buffers,
      named_choices(
          std::array{CollectiveBuffers::flat, CollectiveBuffers::list, CollectiveBuffers::per_parameter}));
  z.persistence_threshold =
      r.optional<double>("persistence_threshold", z.persistence_threshold, NumberRule::non_negative());
  r.finish();
  return z;
}

ParallelismSpec read_parallelism(ObjectReader& top, const Scenario& scenario, const SoftwareStack& software) {
  const json empty = json::object();
  const json* found = top.find("parallelism");
  ObjectReader r(found != nullptr ? *found : empty, top.file(), pointer_append(top.pointer(), "parallelism"));
  r.expect_keys({"data",
                 "tensor",
                 "pipeline",
                 "virtual_stages",
                 "sequence_parallel",
                 "context",
                 "expert",
                 "expert_tensor",
                 "zero_stage",
                 "zero3",
                 "distributed_optimizer",
                 "tp_comm_overlap",
                 "tp_backward_overlap",
                 "schedule",
                 "moe_dispatcher",
                 "order",
                 "pipeline_comm",
                 "embeddings",
                 "expert_comm_overlap",
                 "delay_wgrad_compute"});
  const IntRule positive = IntRule::positive();
  ParallelismSpec p;
  const std::optional<std::int64_t> data = r.maybe<std::int64_t>("data", positive);
  p.tensor = r.optional<std::int64_t>("tensor", 1, positive);
  p.pipeline = r.optional<std::int64_t>("pipeline", 1, positive);
  p.virtual_stages = r.optional<std::int64_t>("virtual_stages", 1, positive);
  p.sequence_parallel = r.optional<bool>("sequence_parallel", false);
  p.context = r.optional<std::int64_t>("context", 1, positive);
  p.expert = r.optional<std::int64_t>("expert", 1, positive);
  p.expert_tensor = r.maybe<std::int64_t>("expert_tensor", positive);
  p.zero_stage = r.optional<int>("zero_stage", 0, IntRule::between(0, 3));
  if (std::optional<ObjectReader> z = r.optional_child("zero3")) {
    if (p.zero_stage != 3) {
      throw r.error_at("zero3", fmt::format("got a zero3 block with zero_stage {}; the block describes how "
                                            "ZeRO-3 moves parameters and needs \"zero_stage\": 3",
                                            p.zero_stage));
    }
    p.zero3 = read_zero3(*z, software.zero3.value_or(Zero3Spec{}));
  } else if (software.zero3) {
    p.zero3 = *software.zero3;  // below stage 3 too: the ZeRO-3 plans a search makes of it run the stack's
  }
  p.distributed_optimizer = r.optional<bool>("distributed_optimizer", false);
  const bool sp_active = p.sequence_parallel && p.tensor > 1;
  // The stack's overlap is kept where sequence parallelism is off too; a key the scenario writes must hold.
  p.tp_comm_overlap = r.optional<bool>("tp_comm_overlap", software.tp_comm_overlap.value_or(true));
  const bool overlap_asked = p.tp_comm_overlap && (r.has("tp_comm_overlap") || sp_active);
  p.tp_backward_overlap =
      r.optional<bool>("tp_backward_overlap", software.tp_backward_overlap.value_or(true));
  if (r.has("order")) p.order = read_order(r);
  p.schedule =
      r.optional_enum<Schedule>("schedule", Schedule::one_f_one_b,
                                named_choices(std::array{Schedule::one_f_one_b, Schedule::gpipe,
                                                         Schedule::interleaved, Schedule::zero_bubble_h1}));
  p.expert_comm_overlap = r.optional<bool>("expert_comm_overlap", false);
  p.delay_wgrad_compute = r.optional<bool>("delay_wgrad_compute", false);
  p.moe_dispatcher = r.optional_enum<MoeDispatcher>("moe_dispatcher", MoeDispatcher::all_to_all,
                                                    named_choices(kMoeDispatchers));
  p.pipeline_comm = r.optional_enum<PipelineComm>(
      "pipeline_comm", software.pipeline_comm.value_or(PipelineComm::overlapped_if_interleaved),
      named_choices(kPipelineComms));
  if (scenario.dlrm) {
    p.embeddings = read_embedding_plan(r, *scenario.dlrm);
  } else if (r.has("embeddings")) {
    throw r.error_at("embeddings", "applies to DLRM models (\"model\": {\"kind\": \"dlrm\", ...}); expected no such "
                                   "key");
  }
  r.finish();

  if (overlap_asked && !sp_active) {
    throw r.error_at("tp_comm_overlap",
                     fmt::format("got true; overlapping tensor-parallel communication with GEMMs needs "
                                 "\"sequence_parallel\": true and tensor > 1 (tensor is {})",
                                 p.tensor));
  }
  if (overlap_asked && !p.tp_backward_overlap && !r.has("tp_backward_overlap")) {
    throw r.error_at("tp_comm_overlap",
                     fmt::format("got true; the software stack \"{}\" runs the backward's tensor-parallel "
                                 "collectives blocking (tp_backward_overlap false), which the userbuffers "
                                 "overlap cannot; set \"tp_backward_overlap\": true as well",
                                 software.id));
  }
  if (overlap_asked && !p.tp_backward_overlap) {
    throw r.error_at("tp_backward_overlap",
                     "got false with \"tp_comm_overlap\": true; the userbuffers overlap runs the backward "
                     "collectives beside their GEMMs too, so it needs \"tp_backward_overlap\": true");
  }
  if (p.schedule == Schedule::interleaved && p.virtual_stages < 2) {
    throw r.error_at("schedule",
                     fmt::format("got \"interleaved\"; the interleaved schedule needs virtual_stages >= 2, "
                                 "but virtual_stages is {}",
                                 p.virtual_stages));
  }
  if (p.schedule == Schedule::interleaved && p.pipeline < 2) {
    throw r.error_at("schedule",
                     fmt::format("got \"interleaved\"; the interleaved schedule needs pipeline >= 2, "
                                 "but pipeline is {}",
                                 p.pipeline));
  }
  if (p.virtual_stages > 1 && p.schedule != Schedule::interleaved) {
    throw r.error_at("virtual_stages",
                     fmt::format("got {}; virtual_stages > 1 needs \"schedule\": \"interleaved\", "
                                 "but schedule is \"{}\"",
                                 p.virtual_stages, to_string(p.schedule)));
  }
  if (p.expert != 1 && !scenario.model.moe) {
    throw r.error_at(
        "expert",
        fmt::format("got {}; expected 1: expert parallelism needs a mixture-of-experts model (model.moe), "
                    "and {} is a dense transformer",
                    p.expert, scenario.model.preset.empty() ? "this model" : scenario.model.preset));
  }

  if (r.has("moe_dispatcher") && !scenario.model.moe) {
    throw r.error_at(
        "moe_dispatcher",
        fmt::format("got \"{}\"; a token dispatcher needs a mixture-of-experts model (model.moe), "
                    "and {} is a dense transformer",
                    to_string(p.moe_dispatcher),
                    scenario.model.preset.empty() ? "the model" : scenario.model.preset));
  }
  if (p.expert_comm_overlap && !scenario.model.moe) {
    throw r.error_at(
        "expert_comm_overlap",
        fmt::format("got true; overlapping the token exchanges with another micro-batch's compute needs a "
                    "mixture-of-experts model (model.moe), and {} is a dense transformer",
                    scenario.model.preset.empty() ? "the model" : scenario.model.preset));
  }
  if (p.delay_wgrad_compute && !p.expert_comm_overlap) {
    throw r.error_at(
        "delay_wgrad_compute",
        "got true; delaying the weight gradients past the token exchanges is part of the combined "
        "1F1B schedule: set \"expert_comm_overlap\": true too (Megatron-Core refuses "
        "--delay-wgrad-compute without --overlap-moe-expert-parallel-comm)");
  }
  if (p.expert_tensor && !scenario.model.moe) {
    throw r.error_at(
        "expert_tensor",
        fmt::format("got {}; expert tensor parallelism needs a mixture-of-experts model "
                    "(model.moe), and {} is a dense transformer",
                    *p.expert_tensor, scenario.model.preset.empty() ? "this model" : scenario.model.preset));
  }

  // Degrees whose product is not the cluster's GPU count make a plan that cannot run, not bad input: the
  // result says so (parallel/feasibility.hpp), and a sweep over node counts carries on past such points.
  // data, when not given, takes the GPUs the other degrees leave (at least 1).
  if (data) {
    p.data = *data;
  } else {
    std::optional<std::int64_t> tpc = core::checked_mul(p.tensor, p.pipeline);
    if (tpc) tpc = core::checked_mul(*tpc, p.context);
    p.data = tpc ? std::max<std::int64_t>(1, scenario.gpu_count() / *tpc) : 1;
  }
  return p;
}

}  // namespace dtsim::config
