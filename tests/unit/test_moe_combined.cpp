// Combined 1F1B (parallelism.expert_comm_overlap; parallel/pipeline_schedule.hpp "combined",
// Lowering::emit_combined): a forward and a backward step run layer by layer together, so that one
// micro-batch's token exchanges run beside the other's compute.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "moe_fixture.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/layer_ops.hpp"
#include "parallel/lower.hpp"
#include "results/evaluate.hpp"
#include "search/fast_evaluate.hpp"
#include "search/lower_bound.hpp"
#include "search/space.hpp"

namespace moe_combined_test {

using dtsim::results::Result;
using dtsim::results::Status;

// Qwen3-30B-A3B at sequence 2048 with expert parallelism 16 over 2 DGX H100 nodes (all-to-all across
// the fabric), selective recompute; `pipeline` 2 runs the interleaved schedule with 2 virtual stages.
dtsim::config::Scenario scenario(bool combined, std::int64_t pipeline = 1, std::int64_t global_batch = 64) {
  nlohmann::json parallelism = {
      {"tensor", 1},  {"pipeline", pipeline},          {"data", 16},
      {"expert", 16}, {"distributed_optimizer", true}, {"expert_comm_overlap", combined}};
  if (pipeline > 1) {
    parallelism["virtual_stages"] = 2;
    parallelism["schedule"] = "interleaved";
  }
  return dtsim::testing::h100_scenario({{"preset", "qwen3-30b-a3b"}, {"seq_length", 2048}}, parallelism,
                                       2 * pipeline, global_batch, {{"activation_recompute", "selective"}});
}

// Rank 0's spans labelled `name` (without its micro-batch suffix) of micro-batch `mb`.
std::vector<dtsim::results::TraceSpan> spans(const Result& r, const std::string& name, std::int32_t mb) {
  std::vector<dtsim::results::TraceSpan> out;
  for (const auto& span : r.trace->spans) {
    if (r.trace->tracks[span.track].rank != 0 || span.micro_batch != mb) continue;
    const std::string& label = r.trace->labels[span.label];
    if (label.substr(0, label.find(' ')) == name) out.push_back(span);
  }
  return out;
}

// Rank 0's compute spans (forward, backward, recompute) of micro-batches other than `mb`.
std::vector<dtsim::results::TraceSpan> compute_except(const Result& r, std::int32_t mb) {
  std::vector<dtsim::results::TraceSpan> out;
  for (const auto& span : r.trace->spans) {
    const auto c = span.category;
    if (r.trace->tracks[span.track].rank != 0 || span.micro_batch == mb) continue;
    if (c == dtsim::graph::Category::forward || c == dtsim::graph::Category::backward ||
        c == dtsim::graph::Category::recompute)
      out.push_back(span);
  }
  return out;
}

// Rank 0's expert all-to-alls of every micro-batch.
std::vector<dtsim::results::TraceSpan> exchanges(const Result& r) {
  std::vector<dtsim::results::TraceSpan> out;
  for (const auto& span : r.trace->spans) {
    const std::string& label = r.trace->labels[span.label];
    if (r.trace->tracks[span.track].rank == 0 && label.find("all_to_all") != std::string::npos)
      out.push_back(span);
  }
  return out;
}

// Whether some span of `a` and some span of `b` run at the same time.
bool overlap(const std::vector<dtsim::results::TraceSpan>& a,
             const std::vector<dtsim::results::TraceSpan>& b) {
  for (const auto& x : a) {
    for (const auto& y : b) {
      if (x.start_ns < y.end_ns && y.start_ns < x.end_ns) return true;
    }
  }
  return false;
}

}  // namespace moe_combined_test

TEST_CASE("combined 1F1B hides expert exchanges behind the other micro-batch: faster, same work") {
  using namespace moe_combined_test;
  for (const std::int64_t pipeline : {1, 2}) {
    CAPTURE(pipeline);
    const Result plain = dtsim::results::evaluate(scenario(false, pipeline), {});
    const Result combined = dtsim::results::evaluate(scenario(true, pipeline), {});
    REQUIRE(plain.status == Status::ok);
    REQUIRE(combined.status == Status::ok);
    std::printf(
        "qwen3-30b-a3b EP16, pipeline %ld: %.6f s (expert comm exposed %.6f) -> combined %.6f s (%.6f)\n",
        static_cast<long>(pipeline), plain.iteration_time_s, plain.breakdown.exposed_expert_comm_s,
        combined.iteration_time_s, combined.breakdown.exposed_expert_comm_s);
    CHECK(combined.iteration_time_s < plain.iteration_time_s);
    CHECK(combined.breakdown.exposed_expert_comm_s < plain.breakdown.exposed_expert_comm_s);
    // The same kernels run: the same FLOPs; compute beside the exchanges is slowed, never faster.
    CHECK(combined.flops.hardware_tflops_per_gpu * combined.iteration_time_s ==
          doctest::Approx(plain.flops.hardware_tflops_per_gpu * plain.iteration_time_s).epsilon(1e-9));
    const auto compute = [](const Result& r) {
      return r.breakdown.forward_s + r.breakdown.backward_s + r.breakdown.recompute_s;
    };
    CHECK(compute(combined) >= compute(plain) * (1 - 1e-9));
    // One micro-batch more in flight (its extra warm-up forward): more activation memory.
    CHECK(combined.memory.activations_bytes > plain.memory.activations_bytes);
  }
}

TEST_CASE(
    "combined 1F1B interleaves the two micro-batches at their exchanges, as Megatron-Core's layer pair") {
  // Without a pipeline, micro-batch 1's forward runs with micro-batch 0's backward
  // (schedule_layer_1f1b): the backward's combine-gradient exchange beside the forward's attention, the
  // forward's dispatch beside the backward's expert GEMMs, the backward's dispatch-gradient exchange
  // beside the forward's experts, the forward's combine beside the backward's attention.
  using namespace moe_combined_test;
  const Result r = dtsim::results::evaluate(scenario(true), {.trace = true});
  REQUIRE(r.status == Status::ok);
  CHECK(overlap(spans(r, "moe_combine_grad_all_to_all", 0), spans(r, "flash_attention", 1)));
  CHECK(overlap(spans(r, "moe_dispatch_all_to_all", 1), spans(r, "moe_expert_down_dgrad", 0)));
  CHECK(overlap(spans(r, "moe_dispatch_grad_all_to_all", 0), spans(r, "moe_expert_up", 1)));
  CHECK(overlap(spans(r, "moe_combine_all_to_all", 1), spans(r, "flash_attention_bwd", 0)));
  // Micro-batch 0's forward runs alone (the warm-up): no other micro-batch computes beside its exchanges.
  CHECK_FALSE(overlap(spans(r, "moe_dispatch_all_to_all", 0), compute_except(r, 0)));
  CHECK_FALSE(overlap(spans(r, "moe_combine_all_to_all", 0), compute_except(r, 0)));
  // Without the overlap no exchange of any micro-batch runs beside another micro-batch's compute.
  const Result plain = dtsim::results::evaluate(scenario(false), {.trace = true});
  for (std::int32_t mb = 0; mb < 4; ++mb) {
    CAPTURE(mb);
    std::vector<dtsim::results::TraceSpan> own;
    for (const auto& x : exchanges(plain)) {
      if (x.micro_batch == mb) own.push_back(x);
    }
    REQUIRE_FALSE(own.empty());
    CHECK_FALSE(overlap(own, compute_except(plain, mb)));
  }
}

TEST_CASE("combined 1F1B: every rank simulated gives the symmetric answer") {
  using namespace moe_combined_test;
  for (const std::int64_t pipeline : {1, 2}) {
    CAPTURE(pipeline);
    auto every = scenario(true, pipeline);
    every.simulation.ranks = dtsim::config::RankMode::all;
    const Result all = dtsim::results::evaluate(every, {});
    REQUIRE(all.status == Status::ok);
    CHECK(all.iteration_time_s ==
          doctest::Approx(dtsim::results::evaluate(scenario(true, pipeline), {}).iteration_time_s)
              .epsilon(1e-9));
  }
}

TEST_CASE("combined 1F1B: the search's estimate equals the full simulation and its lower bound holds") {
  // 8 micro-batches per replica: the fast estimate extrapolates from 2 and 3 (without a pipeline) or
  // 2p and 3p (interleaved), fast_evaluate.hpp; each further micro-batch adds one combined step.
  using namespace moe_combined_test;
  for (const std::int64_t pipeline : {1, 2}) {
    CAPTURE(pipeline);
    const auto s = scenario(true, pipeline, pipeline == 1 ? 128 : 256);
    const Result full = dtsim::results::evaluate(s, {.trace = false, .fuse_kernels = true});
    const Result fast = dtsim::search::evaluate_extrapolated(s);
    REQUIRE(full.status == Status::ok);
    REQUIRE(fast.status == Status::ok);
    std::printf("combined 1F1B, pipeline %ld: estimate %.6f s, simulated %.6f s (%.4f%%)\n",
                static_cast<long>(pipeline), fast.iteration_time_s, full.iteration_time_s,
                100 * (fast.iteration_time_s / full.iteration_time_s - 1));
    CHECK(fast.engine.tasks < full.engine.tasks);
    // The estimate's stated tolerance (tests/unit/test_search.cpp): 0.5%.
    CHECK(std::abs(fast.iteration_time_s / full.iteration_time_s - 1) <= 0.005);
    CHECK(dtsim::search::iteration_lower_bound_s(s) <= full.iteration_time_s);
  }
}

TEST_CASE("combined 1F1B runs where Megatron-Core runs it, else the plan is infeasible with the reason") {
  using namespace moe_combined_test;
  const auto reason = [](const dtsim::config::Scenario& s) { return dtsim::results::evaluate(s, {}).reason; };
  auto s = scenario(true);
  s.parallelism.expert = 1;
  CHECK(reason(s).find("needs expert > 1") != std::string::npos);
  s = scenario(true);
  s.training.activation_recompute = dtsim::config::Recompute::full;
  CHECK(reason(s).find("without full activation recompute") != std::string::npos);
  s = scenario(true, 2);
  s.parallelism.schedule = dtsim::config::Schedule::one_f_one_b;
  s.parallelism.virtual_stages = 1;
  CHECK(reason(s).find("needs the interleaved schedule") != std::string::npos);
  s = scenario(true);
  s.parallelism.schedule = dtsim::config::Schedule::gpipe;
  CHECK(reason(s).find("GPipe runs every forward first") != std::string::npos);
  s = scenario(true);
  s.training.precision = dtsim::config::Precision::fp32;
  CHECK(reason(s).find("runs a bf16 or fp16 model") != std::string::npos);
  s = scenario(true);
  s.model.mtp_layers = 2;
  CHECK(reason(s).find("at most one multi-token prediction module") != std::string::npos);
  s = scenario(true);
  s.parallelism.zero_stage = 3;
  s.parallelism.distributed_optimizer = false;
  CHECK(reason(s).find("not modelled with ZeRO-3") != std::string::npos);
  // A stack whose framework has no combined step: megatron-core-2024 (r0.8) predates it (0.14.0, 2025).
  nlohmann::json j = {{"schema_version", 1},
                      {"name", "moe"},
                      {"software", "megatron-core-2024"},
                      {"model", {{"preset", "qwen3-30b-a3b"}}},
                      {"cluster", {{"node", "dgx-h100"}, {"nodes", 2}}},
                      {"parallelism", {{"data", 16}, {"expert", 16}, {"expert_comm_overlap", true}}},
                      {"training", {{"global_batch_size", 64}, {"activation_recompute", "selective"}}}};
  const auto stacked =
      dtsim::config::load_scenario_text(j.dump(), "moe.json", dtsim::config::default_data_paths());
  CHECK(reason(stacked).find("does not run the combined 1F1B schedule") != std::string::npos);
}

TEST_CASE("search proposes combined 1F1B beside each plan where it can run, unless the schedule is kept") {
  // The test scenario's model without a stack: each combined candidate has its plain twin, and none is
  // of a form Megatron-Core refuses; --keep-schedule keeps the scenario's setting (off).
  using namespace moe_combined_test;
  const auto base = scenario(false);
  const auto space = dtsim::search::enumerate_space(base, {});
  std::size_t combined = 0;
  for (const auto& c : space.candidates) {
    if (!c.scenario.parallelism.expert_comm_overlap) continue;
    ++combined;
    CHECK_FALSE(dtsim::parallel::combined_1f1b_infeasible(c.scenario));
    CHECK(c.label.find(" combined ") != std::string::npos);
    auto plain = c.scenario;
    plain.parallelism.expert_comm_overlap = false;
    const auto twin = std::find_if(space.candidates.begin(), space.candidates.end(), [&](const auto& other) {
      return other.label == dtsim::search::strategy_label(plain);
    });
    CHECK(twin != space.candidates.end());
  }
  CHECK(combined > 0);
  dtsim::search::SpaceBounds keep;
  keep.keep_schedule = true;
  const auto kept = dtsim::search::enumerate_space(base, keep);
  CHECK(std::none_of(kept.candidates.begin(), kept.candidates.end(),
                     [](const auto& c) { return c.scenario.parallelism.expert_comm_overlap; }));
}

TEST_CASE("delayed weight gradients: each run moves to just before the next exchange, or to the end") {
  // Backward ops B1 W1 B2 X B3 W2 W3 B4 (X an exchange) become B1 B2 W1 X B3 B4 W2 W3. B2 was overlapped
  // with its previous op (W1, which moved): it runs on its own; B3 keeps its overlap with X.
  using dtsim::parallel::OpRef;
  std::vector<OpRef> ops(8);
  const std::vector<bool> weight{false, true, false, false, false, true, true, false};
  for (std::size_t i = 0; i < ops.size(); ++i) {
    ops[i].op = static_cast<dtsim::graph::OpId>(i);
    ops[i].weight_grad = weight[i];
  }
  ops[2].overlap = dtsim::models::GemmOverlap::with_previous;
  ops[4].overlap = dtsim::models::GemmOverlap::with_previous;
  const auto delayed = dtsim::parallel::delay_weight_grads(ops, [](const OpRef& op) { return op.op == 3; });
  std::vector<dtsim::graph::OpId> order;
  for (const OpRef& op : delayed) order.push_back(op.op);
  CHECK(order == std::vector<dtsim::graph::OpId>{0, 2, 1, 3, 4, 7, 5, 6});
  CHECK(delayed[1].overlap == dtsim::models::GemmOverlap::none);
  CHECK(delayed[4].overlap == dtsim::models::GemmOverlap::with_previous);
  // A weight gradient's collective (the sequence-parallel re-gather of a linear's input, G, beside the
  // data gradient B) stays where it is; only the kernels move. G B R W N (R the data gradient's
  // reduction beside the weight-gradient GEMM W, N a norm's backward) becomes G B R N W: G keeps its
  // overlap, R (whose neighbour moved) blocks.
  std::vector<OpRef> linear(5);
  for (std::size_t i = 0; i < linear.size(); ++i) linear[i].op = static_cast<dtsim::graph::OpId>(10 + i);
  linear[0].weight_grad = true;
  linear[0].stream = dtsim::graph::StreamKind::tensor_comm;
  linear[0].overlap = dtsim::models::GemmOverlap::beside_next;
  linear[2].stream = dtsim::graph::StreamKind::tensor_comm;
  linear[2].overlap = dtsim::models::GemmOverlap::beside_next;
  linear[3].weight_grad = true;
  const auto kept = dtsim::parallel::delay_weight_grads(linear, [](const OpRef&) { return false; });
  std::vector<dtsim::graph::OpId> kept_order;
  for (const OpRef& op : kept) kept_order.push_back(op.op);
  CHECK(kept_order == std::vector<dtsim::graph::OpId>{10, 11, 12, 14, 13});
  CHECK(kept[0].overlap == dtsim::models::GemmOverlap::beside_next);
  CHECK(kept[2].overlap == dtsim::models::GemmOverlap::none);
}

TEST_CASE("delayed weight gradients: the exchanges stop waiting for them, the same work runs") {
  // Megatron-Core's --delay-wgrad-compute under combined 1F1B: the dispatch-gradient exchange follows the
  // experts' data gradients only and runs beside their weight gradients; each layer's gradients are ready
  // after its last weight gradient, which the data-parallel reductions wait for.
  using namespace moe_combined_test;
  for (const std::int64_t pipeline : {1, 2}) {
    CAPTURE(pipeline);
    auto delayed_s = scenario(true, pipeline);
    delayed_s.parallelism.delay_wgrad_compute = true;
    const Result combined = dtsim::results::evaluate(scenario(true, pipeline), {});
    const Result delayed = dtsim::results::evaluate(delayed_s, {});
    REQUIRE(delayed.status == Status::ok);
    std::printf(
        "qwen3-30b-a3b EP16, pipeline %ld, combined 1F1B: %.6f s (expert comm exposed %.6f) -> "
        "weight gradients delayed %.6f s (%.6f)\n",
        static_cast<long>(pipeline), combined.iteration_time_s, combined.breakdown.exposed_expert_comm_s,
        delayed.iteration_time_s, delayed.breakdown.exposed_expert_comm_s);
    CHECK(delayed.iteration_time_s < combined.iteration_time_s);
    CHECK(delayed.breakdown.exposed_expert_comm_s < combined.breakdown.exposed_expert_comm_s);
    CHECK(delayed.flops.hardware_tflops_per_gpu * delayed.iteration_time_s ==
          doctest::Approx(combined.flops.hardware_tflops_per_gpu * combined.iteration_time_s).epsilon(1e-9));
    // Every rank simulated gives the symmetric answer; the search's estimate holds (0.5%).
    auto every = delayed_s;
    every.simulation.ranks = dtsim::config::RankMode::all;
    CHECK(dtsim::results::evaluate(every, {}).iteration_time_s ==
          doctest::Approx(delayed.iteration_time_s).epsilon(1e-9));
    auto longer = delayed_s;
    longer.training.global_batch_size = pipeline == 1 ? 128 : 256;
    const Result full = dtsim::results::evaluate(longer, {.trace = false, .fuse_kernels = true});
    const Result fast = dtsim::search::evaluate_extrapolated(longer);
    CHECK(std::abs(fast.iteration_time_s / full.iteration_time_s - 1) <= 0.005);
  }
  auto s = scenario(true);
  s.parallelism.delay_wgrad_compute = true;
  // In the task graph: the dispatch-gradient exchange follows a weight gradient's GEMM only without the
  // delay (with it, its predecessor is the up projection's data gradient).
  const auto exchange_after_weights = [](const dtsim::config::Scenario& scenario) {
    const dtsim::parallel::LoweredGraph lowered = dtsim::parallel::lower(scenario, {});
    const dtsim::graph::TaskGraph& g = lowered.graph;
    const auto label = [&](dtsim::graph::TaskId t) { return g.labels()[g.tasks()[t].label]; };
    std::size_t exchanges = 0;
    std::size_t after_weights = 0;
    for (dtsim::graph::TaskId t = 0; t < g.tasks().size(); ++t) {
      for (std::uint32_t e = g.succ_begin()[t]; e < g.succ_begin()[t + 1]; ++e) {
        if (label(g.successors()[e]).rfind("moe_dispatch_grad_all_to_all", 0) != 0) continue;
        ++exchanges;
        if (label(t).find("wgrad") != std::string::npos) ++after_weights;
      }
    }
    REQUIRE(exchanges > 0);
    return after_weights;
  };
  CHECK(exchange_after_weights(s) == 0);
  CHECK(exchange_after_weights(scenario(true)) > 0);
  // With tensor 2 and sequence parallelism the attention's input re-gather stays beside the QKV data
  // gradient and the delayed QKV weight gradient waits for it.
  auto sp = s;
  sp.parallelism.tensor = 2;
  sp.parallelism.data = 8;
  sp.parallelism.expert = 8;
  sp.parallelism.sequence_parallel = true;
  const Result sp_trace = dtsim::results::evaluate(sp, {.trace = true});
  REQUIRE(sp_trace.status == Status::ok);
  const auto regathers = spans(sp_trace, "attention_input_regather", 0);
  const auto dgrads = spans(sp_trace, "qkv_projection_dgrad", 0);
  const auto wgrads = spans(sp_trace, "qkv_projection_wgrad", 0);
  REQUIRE(!regathers.empty());
  REQUIRE(regathers.size() == wgrads.size());
  CHECK(overlap(regathers, dgrads));
  for (std::size_t i = 0; i < regathers.size(); ++i) CHECK(wgrads[i].start_ns >= regathers[i].end_ns);
  const Result r = dtsim::results::evaluate(s, {.trace = true});
  REQUIRE(r.status == Status::ok);
  // The last micro-batch's backward makes the gradients final: no reduction starts before the weight
  // gradients of the layer it reduces (the first bucket holds the last layers, whose backward runs first).
  std::int64_t first_weights_end = std::numeric_limits<std::int64_t>::max();
  std::int64_t first_reduction = std::numeric_limits<std::int64_t>::max();
  for (const auto& span : r.trace->spans) {
    if (r.trace->tracks[span.track].rank != 0) continue;
    const std::string& label = r.trace->labels[span.label];
    if (span.micro_batch == 3 && label.find("wgrad") != std::string::npos)
      first_weights_end = std::min(first_weights_end, span.end_ns);
    if (label.find("grad_reduce_scatter") != std::string::npos)
      first_reduction = std::min(first_reduction, span.start_ns);
  }
  REQUIRE(first_reduction < std::numeric_limits<std::int64_t>::max());
  CHECK(first_reduction >= first_weights_end);
}
