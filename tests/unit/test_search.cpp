// Strategy search: the micro-batch extrapolation against the full simulation, the space's rules, the
// ranking's independence from the thread count, and the search and plan commands end to end.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "config/plan_loader.hpp"
#include "config/scenario_loader.hpp"
#include "core/units.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/memory_model.hpp"
#include "results/evaluate.hpp"
#include "search/capacity_plan.hpp"
#include "search/fast_evaluate.hpp"
#include "search/lower_bound.hpp"
#include "search/search.hpp"

namespace {

using dtsim::config::Scenario;

Scenario shipped(const std::string& name) {
  return dtsim::config::load_scenario(std::string(DTSIM_SOURCE_DIR) + "/scenarios/" + name,
                                      dtsim::config::default_data_paths());
}

// A shipped scenario with its "software" key replaced by `software` (erased when empty).
Scenario shipped_on_stack(const std::string& name, const std::string& software) {
  nlohmann::json j =
      nlohmann::json::parse(std::ifstream(std::string(DTSIM_SOURCE_DIR) + "/scenarios/" + name));
  j.erase("software");
  if (!software.empty()) j["software"] = software;
  return dtsim::config::load_scenario_text(j.dump(), name, dtsim::config::default_data_paths());
}

struct CliOutcome {
  int status = -1;
  std::string out;
  std::string err;
};

// Every combination looked at is either rejected (counted by class) or a candidate.
std::size_t rejected_count(const dtsim::search::Space& space) {
  std::size_t rejected = 0;
  for (const auto& r : space.rejections) rejected += r.count;
  return rejected;
}

CliOutcome run_cli(const std::vector<std::string>& args) {
  std::istringstream in;
  std::ostringstream out, err;
  CliOutcome o;
  o.status = dtsim::cli::run_cli(args, in, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

}  // namespace

// The extrapolation is exact when the iteration is bilinear in the micro-batch count and the layers per
// chunk (the header's argument). Tolerance 0.5% of the full simulation's iteration time: the affine law holds
// up to the integer-nanosecond rounding of the short runs, the gradient buckets (a fixed size: their count is
// not exactly proportional to the layers) and any non-steady overlap of the data-parallel reduction with
// the last backward; each case prints its error.
TEST_CASE("micro-batch extrapolation agrees with the full simulation within 0.5%") {
  struct Case {
    const char* scenario;
    std::int64_t pipeline, virtual_stages, data;
    int zero_stage = 0;
    std::int64_t context = 1;
    bool full_recompute = false;
    std::int64_t tensor = 0;  // 0: the scenario's
    bool zero_bubble = false;  // zb-h1 instead of 1F1B (virtual_stages 1)
    std::int64_t micro_batch = 0;  // 0: the scenario's
    bool no_recompute = false;
  };
  const std::vector<Case> cases{
      {"megatron-sc21-145b.json", 8, 2, 24},             // interleaved, m = 96
      {"megatron-sc21-145b.json", 8, 1, 24},             // 1F1B, m = 96
      {"megatron-sc21-18b.json", 1, 1, 0},               // shipped split: tp8 dp32, m = 32
      {"llama2-7b-h100-32.json", 1, 1, 16},              // no pipeline, data parallel, m = 8
      {"llama2-7b-h100-32.json", 4, 1, 4},               // m = 32
      {"llama2-7b-h100-32.json", 1, 1, 16, 3, 1, true},  // ZeRO-3 gathers per layer, full recompute
      {"llama2-7b-h100-32.json", 2, 1, 4, 0, 2},         // context parallel 2, m = 32
      {"bert-large-256-p3dn-tcp.json", 1, 1, 0},         // data parallel over TCP (gradients exposed)
      // Interleaved ZeRO-3 with 3 to 6 virtual stages: extrapolated from m = p (no steady phase, see
      // fast_evaluate.hpp) these were off by 5 to 12%.
      {"gpt3-175b-1024-a100.json", 16, 3, 4, 3, 2},           // m = 384, 2 layers per chunk
      {"gpt3-175b-1024-a100.json", 8, 4, 2, 3, 8},            // m = 768, 3 layers per chunk
      {"gpt3-175b-1024-a100.json", 8, 6, 8, 3, 4, false, 4},  // tp4, m = 192, 2 layers per chunk
      // Zero bubble (zb-h1), extrapolated from m = p and p + 1.
      {"megatron-sc21-145b.json", 8, 1, 24, 0, 1, false, 0, true},  // m = 96
      {"llama2-7b-h100-32.json", 4, 1, 4, 0, 1, false, 0, true},    // m = 32
      {"llama2-7b-h100-32.json", 4, 1, 8, 0, 1, false, 1, true},    // tp1, m = 16
      // m = 12, 24 layers per stage: with 4 and 6 layers per stage this was 0.2% short (the bubble is
      // not linear in the layers below 6 per stage: fast_evaluate.hpp).
      {"gpt3-175b-1024-a100.json", 4, 1, 32, 0, 1, false, 8, true, 4, true},
  };
  for (const Case& c : cases) {
    Scenario s = shipped(c.scenario);
    if (c.data > 0) {
      s.parallelism.pipeline = c.pipeline;
      s.parallelism.virtual_stages = c.virtual_stages;
      s.parallelism.schedule =
          c.virtual_stages > 1 ? dtsim::config::Schedule::interleaved : dtsim::config::Schedule::one_f_one_b;
      if (c.zero_bubble) {
        // The shipped stacks run no zb-h1 (their "supports"): the plan as on the zero-bubble authors' fork.
        s.parallelism.schedule = dtsim::config::Schedule::zero_bubble_h1;
        s.software_support.reset();
      }
      s.parallelism.data = c.data;
      s.parallelism.zero_stage = c.zero_stage;
      s.parallelism.context = c.context;
      if (c.tensor > 0) s.parallelism.tensor = c.tensor;
      if (c.full_recompute) s.training.activation_recompute = dtsim::config::Recompute::full;
      if (c.no_recompute) s.training.activation_recompute = dtsim::config::Recompute::none;
      if (c.micro_batch > 0) s.training.micro_batch_size = c.micro_batch;
    }
    REQUIRE_FALSE(dtsim::parallel::infeasibility(s));
    const auto full = dtsim::results::evaluate(s, {});
    const auto fast = dtsim::search::evaluate_extrapolated(s);
    const double error = (fast.iteration_time_s - full.iteration_time_s) / full.iteration_time_s;
    const auto points = dtsim::search::extrapolation_points(s);
    std::printf(
        "extrapolation %-24s pp%lld v%lld dp%lld m=%lld (m %lld|%lld, layers/chunk %lld|%lld): full %.6f s, "
        "fast %.6f s, error "
        "%+.4f%%, "
        "events %llu vs %llu\n",
        c.scenario, static_cast<long long>(s.parallelism.pipeline),
        static_cast<long long>(s.parallelism.virtual_stages), static_cast<long long>(s.parallelism.data),
        static_cast<long long>(dtsim::parallel::micro_batches(s)), static_cast<long long>(points.m1),
        static_cast<long long>(points.m2), static_cast<long long>(points.l1),
        static_cast<long long>(points.l2), full.iteration_time_s, fast.iteration_time_s, 100 * error,
        static_cast<unsigned long long>(full.engine.events),
        static_cast<unsigned long long>(fast.engine.events));
    CHECK(std::abs(error) <= 0.005);
    CHECK(fast.memory.peak_bytes_per_gpu == full.memory.peak_bytes_per_gpu);
    CHECK(fast.breakdown.compute_s() == doctest::Approx(full.breakdown.compute_s()).epsilon(0.005));
    CHECK(fast.flops.mfu == doctest::Approx(full.flops.mfu).epsilon(0.005));
  }
}

// Known limit: on a slow network the iteration is not affine in the micro-batches (and layers) between
// the short runs and the real counts; the pipeline transfers and gradient reductions over TCP change
// which stream bounds the steady state. Two BERT-large plans over TCP from the search's default space,
// same 0.5% tolerance as above; each prints its error (they are off by several percent).
TEST_CASE("extrapolation on a slow network (BERT-large over TCP) within 0.5%" * doctest::may_fail()) {
  struct Case {
    std::int64_t tensor, pipeline, data, micro_batch;
    bool sequence_parallel;
    int zero_stage;
    dtsim::config::Recompute recompute;
  };
  const std::vector<Case> cases{
      {1, 8, 32, 2, false, 0, dtsim::config::Recompute::full},  // m = 128
      {8, 2, 16, 8, true, 2, dtsim::config::Recompute::none},   // m = 64
  };
  bool all_within = true;
  for (const Case& c : cases) {
    Scenario s = shipped("bert-large-256-p3dn-tcp.json");
    s.parallelism.tensor = c.tensor;
    s.parallelism.pipeline = c.pipeline;
    s.parallelism.data = c.data;
    s.parallelism.sequence_parallel = c.sequence_parallel;
    s.parallelism.zero_stage = c.zero_stage;
    s.training.micro_batch_size = c.micro_batch;
    s.training.activation_recompute = c.recompute;
    REQUIRE_FALSE(dtsim::parallel::infeasibility(s));
    const auto full = dtsim::results::evaluate(s, {});
    const auto fast = dtsim::search::evaluate_extrapolated(s);
    const double error = (fast.iteration_time_s - full.iteration_time_s) / full.iteration_time_s;
    std::printf(
        "extrapolation over tcp tp%lld pp%lld dp%lld mb%lld m=%lld: full %.6f s, fast %.6f s, error "
        "%+.4f%%\n",
        static_cast<long long>(c.tensor), static_cast<long long>(c.pipeline), static_cast<long long>(c.data),
        static_cast<long long>(c.micro_batch), static_cast<long long>(dtsim::parallel::micro_batches(s)),
        full.iteration_time_s, fast.iteration_time_s, 100 * error);
    all_within = all_within && std::abs(error) <= 0.005;
  }
  CHECK(all_within);
}

TEST_CASE("every candidate of the space obeys the rules - rejections and candidates add up to the space") {
  const Scenario base = shipped("llama2-7b-h100-32.json");
  dtsim::search::SpaceBounds bounds;
  bounds.max_micro_batch = 2;
  bounds.max_virtual_stages = 2;
  const dtsim::search::Space space = dtsim::search::enumerate_space(base, bounds);
  CHECK(rejected_count(space) + space.candidates.size() == space.enumerated);
  REQUIRE_FALSE(space.candidates.empty());
  for (const auto& c : space.candidates) {
    const auto& p = c.scenario.parallelism;
    CHECK(p.data * p.tensor * p.pipeline * p.context == base.gpu_count());
    CHECK(p.tensor <= base.node.gpus_per_node);
    CHECK_FALSE(dtsim::parallel::infeasibility(c.scenario));
    CHECK(dtsim::parallel::memory_per_gpu(c.scenario).total_bytes() <= base.gpu.hbm_bytes);
    CHECK(c.label == dtsim::search::strategy_label(c.scenario));
  }
}

TEST_CASE("--min-headroom keeps the plans that leave that much memory free, and counts the others apart") {
  // The same space with 20 GiB asked free: the candidates are those of the plain space whose memory is at
  // most hbm - 20 GiB; the ones between that and hbm are their own class.
  const Scenario base = shipped("llama2-7b-h100-32.json");
  dtsim::search::SpaceBounds bounds;
  bounds.max_micro_batch = 2;
  bounds.max_virtual_stages = 2;
  const dtsim::search::Space plain = dtsim::search::enumerate_space(base, bounds);
  bounds.min_headroom_gib = 20;
  const dtsim::search::Space roomy = dtsim::search::enumerate_space(base, bounds);
  const double limit = base.gpu.hbm_bytes - 20 * dtsim::core::kGiB;
  std::size_t kept = 0;
  for (const auto& c : plain.candidates) kept += dtsim::parallel::memory_per_gpu(c.scenario).total_bytes() <= limit;
  CHECK(roomy.candidates.size() == kept);
  REQUIRE(kept < plain.candidates.size());
  for (const auto& c : roomy.candidates) CHECK(dtsim::parallel::memory_per_gpu(c.scenario).total_bytes() <= limit);
  const auto headroom = std::find_if(roomy.rejections.begin(), roomy.rejections.end(), [](const auto& r) {
    return r.reason.find("headroom") != std::string::npos;
  });
  REQUIRE(headroom != roomy.rejections.end());
  // The plans pruned for headroom are the plain space's candidates that leave less free (the selective
  // recompute duplicates are judged after the memory rules, so they do not hide any).
  CHECK(headroom->count >= plain.candidates.size() - kept);
}

TEST_CASE("a stack's \"supports\" keeps the plans it cannot run out of the search, counted apart") {
  // The same space with and without Megatron-Core r0.8 named: with it, no candidate uses ZeRO stages
  // 1-3 (its data-parallel sharding is the distributed optimizer), and the plans it would have kept
  // that do are the class's count.
  dtsim::search::SpaceBounds bounds;
  bounds.max_micro_batch = 1;
  bounds.max_virtual_stages = 2;
  const Scenario open_base = shipped_on_stack("llama2-7b-h100-32.json", "");
  const Scenario core_base = shipped_on_stack("llama2-7b-h100-32.json", "megatron-core-2024");
  const dtsim::search::Space open = dtsim::search::enumerate_space(open_base, bounds);
  const dtsim::search::Space core = dtsim::search::enumerate_space(core_base, bounds);
  // Nor zb-h1 (no zero-bubble schedule in that release), which the open space tries beside 1F1B.
  std::size_t unrunnable = 0;
  std::size_t sharded = 0;
  std::size_t zero_bubble = 0;
  for (const auto& c : open.candidates) {
    const bool zb = c.scenario.parallelism.schedule == dtsim::config::Schedule::zero_bubble_h1;
    sharded += c.scenario.parallelism.zero_stage > 0;
    zero_bubble += zb;
    unrunnable += c.scenario.parallelism.zero_stage > 0 || zb;
  }
  REQUIRE(sharded > 0);
  REQUIRE(zero_bubble > 0);
  CHECK(core.candidates.size() == open.candidates.size() - unrunnable);
  for (const auto& c : core.candidates) {
    CHECK(c.scenario.parallelism.zero_stage == 0);
    CHECK(c.scenario.parallelism.schedule != dtsim::config::Schedule::zero_bubble_h1);
  }
  const auto unsupported = std::find_if(core.rejections.begin(), core.rejections.end(), [](const auto& r) {
    return r.reason.find("software stack does not run it") != std::string::npos;
  });
  REQUIRE(unsupported != core.rejections.end());
  // Rejected before the memory rules, so the class also holds plans that would not have fitted.
  CHECK(unsupported->count >= unrunnable);
}

TEST_CASE("without virtual stages search tries 1F1B and zb-h1, labelled apart, --keep-schedule keeps one") {
  // Llama 2 7B on 32 H100 with no software stack (which runs zb-h1): each pipelined plan without virtual
  // stages comes once per schedule (the memory rule may drop one of them: zb-h1 keeps more), a single
  // stage once (its schedule does not matter), interleaved plans once.
  dtsim::search::SpaceBounds bounds;
  bounds.max_micro_batch = 1;
  bounds.max_virtual_stages = 2;
  const Scenario base = shipped_on_stack("llama2-7b-h100-32.json", "");
  REQUIRE(base.parallelism.schedule == dtsim::config::Schedule::one_f_one_b);
  const dtsim::search::Space both = dtsim::search::enumerate_space(base, bounds);
  bounds.keep_schedule = true;
  const dtsim::search::Space kept = dtsim::search::enumerate_space(base, bounds);
  std::size_t zero_bubble = 0;
  for (const auto& c : both.candidates) {
    const auto& p = c.scenario.parallelism;
    if (p.schedule != dtsim::config::Schedule::zero_bubble_h1) continue;
    ++zero_bubble;
    CHECK(p.pipeline > 1);
    CHECK(p.virtual_stages == 1);
    CHECK(c.label.find(" zb-h1 ") != std::string::npos);
    CHECK(c.label.find(" v1 ") == std::string::npos);
  }
  REQUIRE(zero_bubble > 0);
  for (const auto& c : kept.candidates)
    CHECK(c.scenario.parallelism.schedule != dtsim::config::Schedule::zero_bubble_h1);
  CHECK(both.candidates.size() == kept.candidates.size() + zero_bubble);
  // Every combination enumerated once more per pipelined plan without virtual stages.
  CHECK(both.enumerated > kept.enumerated);
  CHECK(rejected_count(both) + both.candidates.size() == both.enumerated);
}

TEST_CASE("candidates keep the software stack: a 2021 stack gets no userbuffers overlap, its own ZeRO-3") {
  // megatron-lm-2021 runs the backward's tensor-parallel collectives blocking and has no sequence-
  // parallel overlap, so no candidate may overlap them, with sequence parallelism or without, and its
  // ZeRO-3 plans run DeepSpeed's stage 3 of 2021 though the scenario is at stage 0; the
  // default stack overlaps wherever sequence parallelism is on, and its 1F1B plans block on their
  // pipeline transfers while its interleaved plans overlap them.
  dtsim::search::SpaceBounds bounds;
  bounds.max_micro_batch = 1;
  bounds.max_virtual_stages = 2;
  const Scenario sc21 = shipped("megatron-sc21-145b.json");
  REQUIRE(sc21.software == "megatron-lm-2021");
  const dtsim::search::Space old_space = dtsim::search::enumerate_space(sc21, bounds);
  REQUIRE_FALSE(old_space.candidates.empty());
  bool sequence_parallel = false;
  bool zero3 = false;
  for (const auto& c : old_space.candidates) {
    sequence_parallel = sequence_parallel || c.scenario.parallelism.sequence_parallel;
    if (c.scenario.parallelism.zero_stage == 3) {
      zero3 = true;  // DeepSpeed's stage 3 of 2021, as the stack says
      CHECK(dtsim::config::zero3_label(c.scenario.parallelism) == "on_demand/tensor/list");
    }
    CHECK_FALSE(dtsim::config::tp_comm_overlap_in_effect(c.scenario.parallelism));
    CHECK(dtsim::config::pipeline_comm_in_effect(c.scenario.parallelism) ==
          dtsim::config::PipelineComm::blocking);
  }
  CHECK(sequence_parallel);
  CHECK(zero3);
  // megatron-lm-2022 overlaps the backward's collectives but has no sequence-parallel overlap.
  const Scenario sc22 = shipped_on_stack("llama2-7b-h100-32.json", "megatron-lm-2022");
  REQUIRE(sc22.parallelism.tp_backward_overlap);
  sequence_parallel = false;
  for (const auto& c : dtsim::search::enumerate_space(sc22, bounds).candidates) {
    sequence_parallel =
        sequence_parallel || (c.scenario.parallelism.sequence_parallel && c.scenario.parallelism.tensor > 1);
    CHECK_FALSE(dtsim::config::tp_comm_overlap_in_effect(c.scenario.parallelism));
  }
  CHECK(sequence_parallel);
  const dtsim::search::Space new_space =
      dtsim::search::enumerate_space(shipped("llama2-7b-h100-32.json"), bounds);
  bool interleaved = false;
  for (const auto& c : new_space.candidates) {
    const auto& p = c.scenario.parallelism;
    CHECK(dtsim::config::tp_comm_overlap_in_effect(p) == (p.sequence_parallel && p.tensor > 1));
    const bool overlapped = p.schedule == dtsim::config::Schedule::interleaved;
    interleaved = interleaved || overlapped;
    CHECK(dtsim::config::pipeline_comm_in_effect(p) ==
          (overlapped ? dtsim::config::PipelineComm::overlapped : dtsim::config::PipelineComm::blocking));
  }
  CHECK(interleaved);
}

TEST_CASE("plans too large to simulate are pruned as their own class, not as another rule") {
  // Global batch 2^31 on 32 GPUs: at least 2^31 / 32 = 2^26 micro-batches per replica x 32 layers x 2
  // passes = 4.3e9 layer passes for any plan, over the limit of 2e8.
  Scenario base = shipped("llama2-7b-h100-32.json");
  base.training.global_batch_size = std::int64_t{1} << 31;
  dtsim::search::SpaceBounds bounds;
  bounds.max_micro_batch = 2;
  bounds.max_virtual_stages = 2;
  const dtsim::search::Space space = dtsim::search::enumerate_space(base, bounds);
  CHECK(space.candidates.empty());
  bool size_class = false;
  for (const auto& r : space.rejections) {
    CHECK(r.reason.find("other feasibility rule") == std::string::npos);
    size_class = size_class || r.reason == "too large to simulate (layer passes over dtsim's limit)";
  }
  CHECK(size_class);
}

TEST_CASE("the largest bounds enumerate a finite space: doubling stops before overflow") {
  // --max-micro-batch and --max-virtual-stages of 2^63 - 1 once looped forever (the doubling overflowed)
  // and divided by zero (data x micro-batch wrapped). Micro-batches now stop at the global batch, 256
  // (powers of two: 9 values), and virtual stages at the 32 layers.
  const Scenario base = shipped("llama2-7b-h100-32.json");
  dtsim::search::SpaceBounds bounds;
  bounds.max_micro_batch = std::numeric_limits<std::int64_t>::max();
  bounds.max_virtual_stages = std::numeric_limits<std::int64_t>::max();
  bounds.keep_recompute = true;
  bounds.keep_sharding = true;
  bounds.keep_sequence_parallel = true;
  const dtsim::search::Space space = dtsim::search::enumerate_space(base, bounds);
  CHECK(rejected_count(space) + space.candidates.size() == space.enumerated);
  REQUIRE_FALSE(space.candidates.empty());
  for (const auto& c : space.candidates) {
    CHECK(c.scenario.training.micro_batch_size <= base.training.global_batch_size);
    CHECK(c.scenario.parallelism.virtual_stages <= base.model.layers);
  }
}

TEST_CASE("search ranks by tokens/s and gives the same plans on 1 and 2 threads") {
  const Scenario base = shipped("llama2-7b-h100-32.json");
  dtsim::search::SearchOptions options;
  options.bounds.max_micro_batch = 2;
  options.bounds.max_virtual_stages = 2;
  options.bounds.keep_sharding = true;
  options.top = 5;
  options.jobs = 1;
  const auto one = dtsim::search::search(base, options);
  options.jobs = 2;
  const auto two = dtsim::search::search(base, options);
  REQUIRE(one.top.size() == 5);
  REQUIRE(two.top.size() == one.top.size());
  CHECK(one.evaluated + one.bounded + one.pruned == one.enumerated);
  for (std::size_t i = 0; i < one.top.size(); ++i) {
    CHECK(one.top[i].label == two.top[i].label);
    CHECK(one.top[i].result.iteration_time_s == two.top[i].result.iteration_time_s);
    if (i > 0)
      CHECK(one.top[i - 1].result.throughput.tokens_per_s >= one.top[i].result.throughput.tokens_per_s);
  }
}

TEST_CASE(
    "plan: time to train = tokens / tokens_per_s, cost = GPU-hours x price, picks among those that meet it") {
  const std::string path = std::string(DTSIM_SOURCE_DIR) + "/scenarios/plans/gpt3-175b-300b-tokens.json";
  const std::string text = R"({"schema_version": 1, "name": "t", "model": {"preset": "gpt-1.3b"},
    "training": {"global_batch_size": 64}, "tokens": 1e9, "deadline_days": 0.5,
    "search": {"max_context": 1, "max_micro_batch": 2, "max_virtual_stages": 1, "keep_sharding": true,
               "keep_recompute": true, "keep_sequence_parallel": true, "keep_schedule": true,
               "keep_expert": true},
    "candidates": [{"node": "dgx-a100", "usd_per_gpu_hour": 2.0, "price_source": "test", "nodes": [1, 2]}]})";
  const auto plan = dtsim::config::load_plan_text(text, "test", dtsim::config::default_data_paths());
  REQUIRE(plan.clusters.size() == 2);
  CHECK(plan.search.keep_schedule);
  CHECK(plan.search.keep_expert);
  const auto outcome = dtsim::search::evaluate_plan(plan, 1);
  for (const auto& row : outcome.rows) {
    REQUIRE(row.feasible);
    // 1e9 tokens at tokens_per_s; GPU-hours = GPUs x seconds / 3600; cost at $2 per GPU-hour.
    CHECK(row.train_s == doctest::Approx(1e9 / row.best.throughput.tokens_per_s));
    CHECK(row.cost_usd == doctest::Approx(static_cast<double>(row.gpus) * row.train_s / 3600.0 * 2.0));
    CHECK(row.meets_deadline == (row.train_s <= 0.5 * 86400.0));
  }
  if (outcome.fastest) {
    for (const auto& row : outcome.rows) {
      if (row.meets()) CHECK(outcome.rows[*outcome.fastest].train_s <= row.train_s);
    }
  }
  if (outcome.cheapest) {
    for (const auto& row : outcome.rows) {
      if (row.meets()) CHECK(outcome.rows[*outcome.cheapest].cost_usd <= row.cost_usd);
    }
  }
}

TEST_CASE("plan with failures: days are the whole-run median, GPU-hours count the spares, no deadline needed") {
  // No deadline or budget: every cluster that runs meets the plan.
  const std::string text = R"({"schema_version": 1, "name": "t", "model": {"preset": "gpt-1.3b"},
    "training": {"global_batch_size": 64}, "tokens": 1e11,
    "search": {"max_context": 1, "max_micro_batch": 2, "max_virtual_stages": 1, "keep_sharding": true,
               "keep_recompute": true, "keep_sequence_parallel": true},
    "failures": {"categories": [{"name": "node", "per": "node", "failures_per_1000_days": 500}], "restart_s": 600,
                 "checkpoint": {"write_gbytes_per_s": 10}, "spare_nodes": 1, "repair_hours": 12, "runs": 50},
    "candidates": [{"node": "dgx-a100", "usd_per_gpu_hour": 2.0, "price_source": "test", "nodes": [1, 2]}]})";
  const auto plan = dtsim::config::load_plan_text(text, "test", dtsim::config::default_data_paths());
  REQUIRE(plan.failures);
  const auto outcome = dtsim::search::evaluate_plan(plan, 1);
  REQUIRE(outcome.cheapest);
  REQUIRE(outcome.fastest);
  for (const auto& row : outcome.rows) {
    REQUIRE(row.feasible);
    REQUIRE(row.best.goodput);
    CHECK(row.failure_free_s == doctest::Approx(1e11 / row.best.throughput.tokens_per_s));
    CHECK(row.train_s == row.best.goodput->wall_s.p50);
    CHECK(row.train_s > row.failure_free_s);
    // The job's GPUs and one spare node of 8 held for the whole run, at $2 per GPU-hour.
    CHECK(row.cost_usd == doctest::Approx(static_cast<double>(row.gpus + 8) * row.train_s / 3600.0 * 2.0));
    CHECK(row.meets());
  }
}

TEST_CASE("dtsim search: json and csv output, same bytes with --no-timing on 1 and 2 jobs") {
  const std::string scenario = std::string(DTSIM_SOURCE_DIR) + "/scenarios/llama2-7b-h100-32.json";
  const std::vector<std::string> common{"search",
                                        scenario,
                                        "--top",
                                        "3",
                                        "--max-micro-batch",
                                        "1",
                                        "--max-virtual-stages",
                                        "1",
                                        "--keep-sharding",
                                        "--keep-recompute",
                                        "--no-timing"};
  std::vector<std::string> a = common, b = common, c = common;
  a.insert(a.end(), {"--format", "json", "--jobs", "1"});
  b.insert(b.end(), {"--format", "json", "--jobs", "2"});
  c.insert(c.end(), {"--format", "csv"});
  const CliOutcome ja = run_cli(a), jb = run_cli(b), cc = run_cli(c);
  CHECK(ja.status == 0);
  CHECK(ja.out == jb.out);
  CHECK(ja.out.find("\"rejections\"") != std::string::npos);
  CHECK(cc.status == 0);
  CHECK(cc.out.rfind("rank,label,headroom_bytes,name,", 0) == 0);
  // Each listed plan carries the error band of the closest validated regime (H100, several nodes).
  const auto doc = nlohmann::json::parse(ja.out);
  CHECK(doc["command"] == "search");
  const auto top = doc["results"];
  REQUIRE_FALSE(top.empty());
  CHECK(top[0]["result"]["expected_error"]["validated"] == true);
  std::vector<std::string> t = common;
  CHECK(run_cli(t).out.find("\nerror band ") != std::string::npos);
}

TEST_CASE(
    "dtsim plan: exit 3 when no cluster meets the deadline, json and csv list every cluster, same bytes on 1 "
    "and 2 jobs") {
  const std::string plan = R"({"schema_version": 1, "name": "t", "model": {"preset": "gpt-1.3b"},
    "training": {"global_batch_size": 64}, "steps": 1000, "deadline_days": 1e-6,
    "search": {"max_context": 1, "max_micro_batch": 1, "max_virtual_stages": 1, "keep_sharding": true,
               "keep_recompute": true, "keep_sequence_parallel": true},
    "candidates": [{"node": "dgx-a100", "usd_per_gpu_hour": 2.0, "price_source": "test", "nodes": [1, 2]}]})";
  std::istringstream in_json(plan), in_json_2(plan), in_csv(plan);
  std::ostringstream out_json, out_json_2, out_csv, err;
  const int json_status = dtsim::cli::run_cli({"plan", "-", "--format", "json", "--no-timing", "--jobs", "1"},
                                              in_json, out_json, err);
  const int json_status_2 = dtsim::cli::run_cli(
      {"plan", "-", "--format", "json", "--no-timing", "--jobs", "2"}, in_json_2, out_json_2, err);
  CHECK(json_status_2 == 3);
  CHECK(out_json.str() == out_json_2.str());
  const int csv_status = dtsim::cli::run_cli({"plan", "-", "--format", "csv"}, in_csv, out_csv, err);
  CHECK(json_status == 3);
  CHECK(csv_status == 3);
  CHECK(out_json.str().find("\"cheapest\": null") != std::string::npos);
  CHECK(out_json.str().find("\"meets_deadline\": false") != std::string::npos);
  // Header and one row per cluster (1 and 2 nodes).
  const std::string csv = out_csv.str();
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);
  // Each cluster's best plan carries the error band of its validated regime (A100 one node, several).
  const auto rows = nlohmann::json::parse(out_json.str())["results"];
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows) CHECK(row["result"]["expected_error"]["validated"] == true);
  // The CSV's MFU and memory columns are the best plan's result: mfu, its most loaded GPU's peak and
  // what the GPU's memory leaves beside it, in GiB (2^30 bytes).
  std::istringstream lines(csv);
  std::string header, first;
  std::getline(lines, header);
  std::getline(lines, first);
  CHECK(header.find(",iteration_s,mfu,peak_memory_gib,headroom_gib,train_days,") != std::string::npos);
  std::vector<std::string> cells;
  for (std::size_t at = 0, comma; at <= first.size(); at = comma + 1) {
    comma = std::min(first.find(',', at), first.size());
    cells.push_back(first.substr(at, comma - at));
  }
  REQUIRE(cells.size() >= 14);
  const auto& memory = rows[0]["result"]["memory"];
  // node, fabric, nodes, gpus, global_batch_size, usd_per_gpu_hour, usd_per_node_hour, status, strategy,
  // tokens_per_s, iteration_s, then these three.
  CHECK(std::stod(cells[11]) == doctest::Approx(rows[0]["result"]["flops"]["mfu"].get<double>()));
  CHECK(std::stod(cells[12]) == doctest::Approx(memory["peak_bytes_per_gpu"].get<double>() / (1 << 30)));
  CHECK(std::stod(cells[13]) == doctest::Approx((memory["capacity_bytes_per_gpu"].get<double>() -
                                                 memory["peak_bytes_per_gpu"].get<double>()) /
                                                (1 << 30)));
}

TEST_CASE("dtsim search refuses a model it cannot split, naming the file and /model (exit 2, nothing out)") {
  const std::string scenario =
      std::string(DTSIM_SOURCE_DIR) + "/scenarios/ps-vs-allreduce/resnet50-64gpu-allreduce-sync.json";
  const CliOutcome o = run_cli({"search", scenario});
  CHECK(o.status == 2);
  CHECK(o.out.empty());
  CHECK(o.err.find("resnet50-64gpu-allreduce-sync.json: /model: search ranks parallel plans of transformer "
                   "models") != std::string::npos);
}

// Every plan search lists is a full simulation: with the fast path, the leading estimates are
// re-simulated in full (search.hpp), so each listed result equals evaluate() of its scenario.
TEST_CASE("search lists full-simulation results: the confirmed leaders equal a direct evaluation") {
  const Scenario base = shipped("llama2-7b-h100-32.json");
  dtsim::search::SearchOptions options;
  options.top = 2;
  options.bounds.max_micro_batch = 1;
  options.bounds.max_virtual_stages = 1;
  options.bounds.keep_sharding = true;
  options.bounds.keep_recompute = true;
  const auto outcome = dtsim::search::search(base, options);
  CHECK(outcome.confirmed >= dtsim::search::kMinConfirmed);
  REQUIRE(!outcome.top.empty());
  for (const auto& e : outcome.top) {
    const auto direct = dtsim::results::evaluate(e.result.scenario, {});
    CHECK(e.result.iteration_time_s == doctest::Approx(direct.iteration_time_s).epsilon(1e-12));
  }
}

// The lower bound (lower_bound.hpp) never exceeds the full simulation: stage work from the layer
// programs' chains and the pipeline's fill and drain are forced by the task graph, everything else only
// adds. Checked on strides of three spaces: GPT-3 175B (interleaved, context parallel, ZeRO), BERT-large
// over TCP (communication-bound), Llama 3 8B with GPipe as the base schedule and with zb-h1 (on no stack:
// the shipped ones run no zb-h1).
TEST_CASE("the lower bound is below the fully simulated iteration of every sampled plan") {
  struct Space {
    const char* scenario;
    dtsim::config::Schedule schedule;
    std::size_t stride;
  };
  const Space spaces[] = {{"gpt3-175b-1024-a100.json", dtsim::config::Schedule::one_f_one_b, 211},
                          {"bert-large-256-p3dn-tcp.json", dtsim::config::Schedule::one_f_one_b, 331},
                          {"llama3-8b-h100-64.json", dtsim::config::Schedule::gpipe, 157},
                          {"llama3-8b-h100-64.json", dtsim::config::Schedule::zero_bubble_h1, 157}};
  for (const Space& sp : spaces) {
    Scenario base = shipped(sp.scenario);
    base.parallelism.schedule = sp.schedule;
    if (sp.schedule == dtsim::config::Schedule::zero_bubble_h1) base.software_support.reset();
    const auto space = dtsim::search::enumerate_space(base, {});
    REQUIRE(space.candidates.size() > 300);
    double tightest = 1e9;
    std::size_t checked = 0;
    for (std::size_t i = 0; i < space.candidates.size(); i += sp.stride) {
      const auto& s = space.candidates[i].scenario;
      const auto r = dtsim::results::evaluate(s, {.trace = false, .fuse_kernels = true});
      if (r.status != dtsim::results::Status::ok) continue;
      const double bound = dtsim::search::iteration_lower_bound_s(s);
      CHECK(bound > 0.0);
      CHECK_MESSAGE(bound <= r.iteration_time_s, space.candidates[i].label);
      tightest = std::min(tightest, r.iteration_time_s / bound);
      ++checked;
    }
    CHECK(checked >= 10);
    MESSAGE(std::string(sp.scenario) << ": " << checked << " plans, smallest iteration / bound " << tightest);
  }
}

// Branch and bound leaves out only plans that could not be listed, so the list equals that of
// estimating every plan (search.hpp).
TEST_CASE("the lower bound holds for ZeRO-2 plans, whose every micro-batch reduces its gradients") {
  // The bound's ZeRO-2 term: micro-batch 0's forward through every chunk, then m x the stage's bucket
  // reduce-scatters on its one data-parallel stream (lower_bound.hpp). Sampled ZeRO-2 plans of GPT-3
  // 175B on 1,024 A100, with several micro-batches, fully simulated.
  const Scenario base = shipped("gpt3-175b-1024-a100.json");
  const auto space = dtsim::search::enumerate_space(base, {});
  std::size_t checked = 0;
  double tightest = 1e9;
  std::size_t seen = 0;
  for (const auto& c : space.candidates) {
    const auto& s = c.scenario;
    if (s.parallelism.zero_stage != 2 || dtsim::parallel::micro_batches(s) < 2 || seen++ % 97 != 0) continue;
    const auto r = dtsim::results::evaluate(s, {.trace = false, .fuse_kernels = true});
    if (r.status != dtsim::results::Status::ok) continue;
    const double bound = dtsim::search::iteration_lower_bound_s(s);
    CHECK_MESSAGE(bound <= r.iteration_time_s, c.label);
    tightest = std::min(tightest, r.iteration_time_s / bound);
    ++checked;
  }
  CHECK(checked >= 10);
  MESSAGE(checked << " ZeRO-2 plans, smallest iteration / bound " << tightest);
}

TEST_CASE("branch and bound lists the same plans as estimating every plan, and leaves some out") {
  const Scenario base = shipped("gpt3-175b-1024-a100.json");
  dtsim::search::SearchOptions options;
  options.top = 5;
  options.bounds.max_virtual_stages = 1;
  options.bounds.keep_sharding = true;
  const auto bounded = dtsim::search::search(base, options);
  options.branch_and_bound = false;
  const auto every = dtsim::search::search(base, options);
  CHECK(bounded.bounded > 0);
  CHECK(every.bounded == 0);
  CHECK(bounded.evaluated + bounded.bounded == every.evaluated);
  REQUIRE(bounded.top.size() == every.top.size());
  for (std::size_t k = 0; k < every.top.size(); ++k) {
    CHECK(bounded.top[k].label == every.top[k].label);
    CHECK(bounded.top[k].result.iteration_time_s == every.top[k].result.iteration_time_s);
  }
}

TEST_CASE("dtsim plan --top 2: each cluster's next ranked strategy, costed as the best, in text, JSON and CSV") {
  const std::string plan = R"({"schema_version": 1, "name": "t", "model": {"preset": "gpt-1.3b"},
    "training": {"global_batch_size": 64}, "steps": 1000,
    "search": {"max_context": 1, "max_micro_batch": 2, "max_virtual_stages": 1, "keep_sharding": true,
               "keep_recompute": true, "keep_sequence_parallel": true},
    "candidates": [{"node": "dgx-a100", "usd_per_gpu_hour": 2.0, "price_source": "test", "nodes": [1, 2]}]})";
  std::istringstream in_json(plan), in_csv(plan), in_text(plan);
  std::ostringstream out_json, out_csv, out_text, err;
  REQUIRE(dtsim::cli::run_cli({"plan", "-", "--format", "json", "--no-timing", "--top", "2"}, in_json, out_json,
                              err) == dtsim::cli::kExitOk);
  REQUIRE(dtsim::cli::run_cli({"plan", "-", "--format", "csv", "--top", "2"}, in_csv, out_csv, err) ==
          dtsim::cli::kExitOk);
  REQUIRE(dtsim::cli::run_cli({"plan", "-", "--top", "2"}, in_text, out_text, err) == dtsim::cli::kExitOk);
  const auto clusters = nlohmann::json::parse(out_json.str())["results"];
  REQUIRE(clusters.size() == 2);
  for (const auto& c : clusters) {
    REQUIRE(c["alternatives"].size() == 1);
    const auto& alt = c["alternatives"][0];
    CHECK(alt["rank"] == 2);
    CHECK(alt["strategy"] != c["strategy"]);
    // Ranked by tokens/s; the same rule as the best: steps x iteration time, GPU-hours x price.
    CHECK(alt["result"]["throughput"]["tokens_per_s"].get<double>() <=
          c["result"]["throughput"]["tokens_per_s"].get<double>());
    const double train_s = 1000 * alt["result"]["iteration_time_s"].get<double>();
    CHECK(alt["train_s"].get<double>() == doctest::Approx(train_s));
    CHECK(alt["cost_usd"].get<double>() == doctest::Approx(c["gpus"].get<double>() * train_s / 3600.0 * 2.0));
  }
  // CSV: a header and two lines per cluster, ranks 1 and 2 in the last column.
  const std::string csv = out_csv.str();
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 5);
  CHECK(csv.find(",reason,rank\n") != std::string::npos);
  CHECK(csv.find("\"\",1\n") != std::string::npos);
  CHECK(csv.find("\"\",2\n") != std::string::npos);
  // Text: the alternative under its cluster's row.
  CHECK(out_text.str().find(" #2  ") != std::string::npos);
}

// Layers that fill the chunks only with the embedding and the loss counted as layers (30 on 8 stages x 4
// virtual: the first and the last chunk hold none) are candidates of the space, and their estimate
// simulates the real layers (the layer dimension is not reduced: it does not split evenly) with 2p and
// 3p micro-batches: the affine law in the micro-batches holds (tolerance as above; prints its error).
TEST_CASE("a split with the embedding and the loss counted as layers is searched and estimated") {
  Scenario s = shipped("llama2-7b-h100-32.json");
  s.model.layers = 30;
  auto& p = s.parallelism;
  p.tensor = 1;
  p.context = 1;
  p.pipeline = 8;
  p.data = 4;
  p.virtual_stages = 4;
  p.schedule = dtsim::config::Schedule::interleaved;
  s.training.micro_batch_size = 1;
  s.training.global_batch_size = 4 * 64;  // 64 micro-batches per replica
  REQUIRE_FALSE(dtsim::parallel::infeasibility(s));
  const auto full = dtsim::results::evaluate(s, {.fuse_kernels = true});
  const auto estimate = dtsim::search::evaluate_extrapolated(s);
  REQUIRE(full.status == dtsim::results::Status::ok);
  REQUIRE(estimate.status == dtsim::results::Status::ok);
  const double error = std::abs(estimate.iteration_time_s - full.iteration_time_s) / full.iteration_time_s;
  std::printf("30 layers on 8 x 4 chunks: estimate %.6f s, full %.6f s, error %.4f%%\n",
              estimate.iteration_time_s, full.iteration_time_s, 100.0 * error);
  CHECK(error <= 0.005);
  CHECK(estimate.engine.tasks < full.engine.tasks);  // 8 + 12 micro-batches simulated, not 64

  dtsim::search::SpaceBounds bounds;
  bounds.max_micro_batch = 1;
  bounds.max_tensor = 1;
  bounds.max_context = 1;
  bounds.keep_recompute = true;
  bounds.keep_sharding = true;
  const dtsim::search::Space space = dtsim::search::enumerate_space(s, bounds);
  const bool listed = std::any_of(space.candidates.begin(), space.candidates.end(), [](const auto& c) {
    return c.scenario.parallelism.pipeline == 8 && c.scenario.parallelism.virtual_stages == 4;
  });
  CHECK(listed);
}
