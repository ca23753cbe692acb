// ZeRO-3 implementations (config::Zero3Spec, parallel/zero3.hpp, the lowering's gathers and reductions):
// how a layer is cut into collectives, what a rank holds gathered, and what on-demand fetching and
// list buffers cost in the engine.
#include <doctest/doctest.h>

#include <map>
#include <numeric>

#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "models/transformer/transformer.hpp"
#include "parallel/lower.hpp"
#include "parallel/memory_model.hpp"
#include "parallel/zero3.hpp"
#include "results/evaluate.hpp"
#include "scenario_fixture.hpp"

namespace {

using nlohmann::json;

dtsim::config::Scenario gpt3_175b(std::int64_t tensor) {
  auto s = dtsim::testing::fixture_scenario();
  s.model.layers = 96;
  s.model.hidden_size = 12288;
  s.model.heads = 96;
  s.model.kv_heads = 96;
  s.model.ffn_hidden_size = 4 * 12288;
  s.parallelism.tensor = tensor;
  s.parallelism.data = 32 / tensor;
  s.parallelism.zero_stage = 3;
  return s;
}

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// GPT-1.3B, data parallel over 16 A100 (2 DGX nodes), ZeRO-3, two micro-batches per rank.
json zero3_scenario() {
  return json::parse(R"({
    "schema_version": 1, "name": "zero3",
    "model": {"preset": "gpt-1.3b"},
    "cluster": {"node": "dgx-a100", "nodes": 2},
    "parallelism": {"data": 16, "zero_stage": 3},
    "training": {"global_batch_size": 64, "micro_batch_size": 2, "precision": "fp16",
                 "activation_recompute": "full"}
  })");
}

// Total span time per label, over the trace of rank 0.
std::map<std::string, double> seconds_by_label(const dtsim::results::Result& r) {
  REQUIRE(r.trace.has_value());
  std::map<std::string, double> out;
  for (const auto& span : r.trace->spans) {
    if (r.trace->tracks[span.track].rank != 0) continue;
    out[r.trace->labels[span.label]] += static_cast<double>(span.end_ns - span.start_ns) * 1e-9;
  }
  return out;
}

double compute_seconds(const dtsim::results::Breakdown& b) { return b.compute_s() + b.optimizer_s; }

}  // namespace

TEST_CASE("a layer's parameter tensors: Megatron's 12 h^2 + 13 h, and a Llama-style layer's") {
  // GPT-style (fixture: h = 2048, f = 4h, no GQA), a weight and a bias each: norm h + h, QKV 3h^2 + 3h,
  // output h^2 + h, norm h + h, up 4h^2 + 4h, down 4h^2 + h: twelve tensors, 12 h^2 + 13 h (Narayanan
  // et al. SC'21, Sec. 5.1).
  auto s = dtsim::testing::fixture_scenario();
  const double h = 2048;
  const auto gpt = dtsim::models::layer_parameter_tensors(s.model);
  CHECK(gpt.size() == 12);
  CHECK(sum(gpt) == doctest::Approx(12 * h * h + 13 * h).epsilon(1e-12));
  CHECK(dtsim::models::parameters_per_layer(s.model) == sum(gpt));
  // Llama-style (SwiGLU, 4 KV heads of d = 128, f = 8192): RMSNorm h, QKV h (h + 2 x 4 x 128), output
  // h^2, RMSNorm h, gate and up 2 h f, down f h; no biases.
  s.model.mlp = dtsim::config::MlpKind::swiglu;
  s.model.kv_heads = 4;
  const double f = 8192;
  const auto llama = dtsim::models::layer_parameter_tensors(s.model);
  CHECK(llama.size() == 6);
  CHECK(sum(llama) == doctest::Approx(2 * h + h * (h + 2 * 4 * 128) + h * h + 3 * h * f).epsilon(1e-12));
}

TEST_CASE(
    "tensor granularity: GPT-3 175B's layer in four collectives, norms and biases with the next weight") {
  // Forward order (h = 12288): norm 2h | QKV 3h^2, bias 3h | output h^2, bias h | norm 2h | up 4h^2,
  // bias 4h | down 4h^2, bias h. Only the four weights exceed 1e5 elements, so the groups are
  //   2h + 3h^2,  3h + h^2,  h + 2h + 4h^2,  4h + 4h^2 + h   (sum 12h^2 + 13h, the layer).
  auto s = gpt3_175b(1);
  const double h = 12288;
  CHECK(dtsim::parallel::zero3_layer_groups(s) ==
        std::vector<double>{dtsim::models::parameters_per_layer(s.model)});
  s.parallelism.zero3.granularity = dtsim::config::Zero3Granularity::tensor;
  const auto groups = dtsim::parallel::zero3_layer_groups(s);
  REQUIRE(groups.size() == 4);
  CHECK(groups[0] == doctest::Approx(2 * h + 3 * h * h));
  CHECK(groups[1] == doctest::Approx(3 * h + h * h));
  CHECK(groups[2] == doctest::Approx(3 * h + 4 * h * h));
  CHECK(groups[3] == doctest::Approx(5 * h + 4 * h * h));
  // Tensor parallelism cuts every tensor first (t = 8): the same four groups, an eighth each.
  auto tp = gpt3_175b(8);
  tp.parallelism.zero3.granularity = dtsim::config::Zero3Granularity::tensor;
  const auto shards = dtsim::parallel::zero3_layer_groups(tp);
  REQUIRE(shards.size() == 4);
  CHECK(shards[2] == doctest::Approx(groups[2] / 8));
  // A threshold above every tensor leaves one group, the layer.
  s.parallelism.zero3.persistence_threshold = 1e12;
  CHECK(dtsim::parallel::zero3_layer_groups(s).size() == 1);
}

TEST_CASE("gathered parameters: two layers when prefetching, the largest tensor group on demand") {
  auto s = gpt3_175b(1);
  const double layer = dtsim::models::parameters_per_layer(s.model);
  CHECK(dtsim::parallel::zero3_gathered_parameters(s) == doctest::Approx(2 * layer));
  s.parallelism.zero3.fetch = dtsim::config::Zero3Fetch::on_demand;
  CHECK(dtsim::parallel::zero3_gathered_parameters(s) == doctest::Approx(layer));
  s.parallelism.zero3.granularity = dtsim::config::Zero3Granularity::tensor;
  const double h = 12288;
  CHECK(dtsim::parallel::zero3_gathered_parameters(s) == doctest::Approx(5 * h + 4 * h * h));
  // List buffers: the flat buffer NCCL gathers into and the per-rank tensors, at once.
  auto list = s;
  list.parallelism.zero3.buffers = dtsim::config::CollectiveBuffers::list;
  CHECK(dtsim::parallel::zero3_gathered_parameters(list) == doctest::Approx(2 * (5 * h + 4 * h * h)));
  // The memory model adds them to the rank's shard of the weights (2 bytes each under fp16), or the
  // embedding (gathered whole for its use: the fixture's vocabulary 51200 and positions 2048, x h) where
  // that is more: on demand it is, beside
  // no layer; prefetching, two layers are more than the embedding and one layer.
  auto prefetch = gpt3_175b(1);
  const double embedding = dtsim::models::embedding_parameters(s.model);
  CHECK(embedding == (51200.0 + 2048) * h);
  REQUIRE(embedding > 5 * h + 4 * h * h);
  REQUIRE(embedding < layer);
  const double difference = dtsim::parallel::memory_per_gpu(prefetch).weights_bytes -
                            dtsim::parallel::memory_per_gpu(s).weights_bytes;
  CHECK(difference == doctest::Approx(2 * (2 * layer - embedding)));
}

TEST_CASE("an explicit default zero3 block is the same as none") {
  json s = zero3_scenario();
  const auto without = dtsim::testing::evaluate_json(s);
  s["parallelism"]["zero3"] = {{"fetch", "prefetch"}, {"granularity", "layer"}, {"buffers", "flat"}};
  const auto with = dtsim::testing::evaluate_json(s);
  REQUIRE(without.status == dtsim::results::Status::ok);
  CHECK(with.iteration_time_s == without.iteration_time_s);
  CHECK(with.engine.tasks == without.engine.tasks);
}

TEST_CASE("on-demand fetching serializes every gather with the compute and the reductions before it") {
  // On demand, a layer's gather starts after the compute before it and after the rank's reductions so
  // far (a device synchronization), and the layer waits for it: compute and gathers never overlap, so
  //   compute + gathers <= iteration <= compute + gathers + reductions + waiting for the host.
  // Prefetching hides gathers behind the previous layer, so it is never slower.
  json s = zero3_scenario();
  const auto prefetch = dtsim::testing::evaluate_json(s);
  s["parallelism"]["zero3"] = {{"fetch", "on_demand"}};
  const auto on_demand = dtsim::testing::evaluate_json(s, true);
  REQUIRE(on_demand.status == dtsim::results::Status::ok);
  const auto by_label = seconds_by_label(on_demand);
  const double gathers = by_label.at("zero3_param_all_gather");
  const double reductions = by_label.at("zero3_grad_reduce_scatter");
  const double compute = compute_seconds(on_demand.breakdown);
  MESSAGE("compute " << compute << " s, gathers " << gathers << " s, reductions " << reductions
                     << " s, iteration " << on_demand.iteration_time_s << " s (prefetch "
                     << prefetch.iteration_time_s << " s)");
  CHECK(on_demand.iteration_time_s >= (compute + gathers) * (1 - 1e-9));
  CHECK(on_demand.iteration_time_s <=
        (compute + gathers + reductions + on_demand.breakdown.host_wait_s) * (1 + 1e-9));
  CHECK(on_demand.iteration_time_s > prefetch.iteration_time_s);
}

TEST_CASE(
    "tensor granularity pays one collective latency per tensor; list buffers one copy kernel per rank") {
  json s = zero3_scenario();
  s["parallelism"]["zero3"] = {{"fetch", "on_demand"}};
  const auto layer = dtsim::testing::evaluate_json(s, true);
  s["parallelism"]["zero3"]["granularity"] = "tensor";
  const auto tensor = dtsim::testing::evaluate_json(s, true);
  REQUIRE(tensor.status == dtsim::results::Status::ok);
  // GPT-1.3B layers (h = 2048, GELU) have four weights above 1e5 elements: four gathers where there was
  // one, the same bytes, so more ring latency: (gathers) grows, and the iteration with it.
  CHECK(seconds_by_label(tensor).at("zero3_param_all_gather") >
        seconds_by_label(layer).at("zero3_param_all_gather"));
  CHECK(tensor.iteration_time_s > layer.iteration_time_s);

  s["parallelism"]["zero3"]["buffers"] = "list";
  const auto list = dtsim::testing::evaluate_json(s, true);
  REQUIRE(list.status == dtsim::results::Status::ok);
  // Each gather and each reduce-scatter copies its bytes once through HBM (read and write) in one kernel
  // per rank of the 16, inside the call. With the A100 profile (hardware_profiles/gpus/a100-sxm4-80gb:
  // HBM 2039 GB/s x memory_efficiency 0.84, kernel_launch_us 3): per layer and pass
  // 2 x 2 bytes x params / (2039 GB/s x 0.84) + 4 calls x 16 x 3 us, over 24 layers x 2 micro-batches
  // x 4 passes (forward, recompute and backward gathers, reduce-scatter).
  const double params = dtsim::models::parameters_per_layer(
      dtsim::config::load_scenario_text(s.dump(), "test", dtsim::config::default_data_paths()).model);
  const double expected = 24 * 2 * 4 * (2 * 2 * params / (2039e9 * 0.84) + 4 * 16 * 3e-6);
  const auto comm = [](const dtsim::results::Result& r) {
    const auto by_label = seconds_by_label(r);
    return by_label.at("zero3_param_all_gather") + by_label.at("zero3_grad_reduce_scatter");
  };
  const double copies = comm(list) - comm(tensor);
  CHECK(copies == doctest::Approx(expected).epsilon(0.01));
  // Every copy is on the critical path: a gather's sit between the compute before it and its layer, a
  // reduction's are waited for by the next gather's device synchronization (the last ones of a
  // micro-batch by the next micro-batch's first gather, the very last by the optimizer step). Only the
  // embedding's backward, beside the last reduction of each micro-batch, could hide some.
  const double added = list.iteration_time_s - tensor.iteration_time_s;
  MESSAGE("list copies " << copies << " s in all; the iteration grew by " << added << " s");
  CHECK(added == doctest::Approx(copies).epsilon(0.02));
  CHECK(added <= copies * (1 + 1e-9));
}

TEST_CASE("per-parameter buffers (FSDP2): one copy kernel per call, moving the bytes once") {
  json s = zero3_scenario();
  s["parallelism"]["zero3"] = {{"fetch", "on_demand"}, {"granularity", "tensor"}};
  const auto flat = dtsim::testing::evaluate_json(s, true);
  s["parallelism"]["zero3"]["buffers"] = "per_parameter";
  const auto fsdp2 = dtsim::testing::evaluate_json(s, true);
  REQUIRE(fsdp2.status == dtsim::results::Status::ok);
  // A gather's copy-out reads and writes the gathered weights (2 x 2 bytes x params); a reduction's
  // copy-in reads the fp16 gradients and writes the fp16 buffer (2 + 2 bytes x params): 4 bytes per
  // parameter either way, at 2039 GB/s x 0.84, plus one 3 us launch per call (4 tensor groups per
  // layer), over 24 layers x 2 micro-batches x 4 passes (forward, recompute and backward gathers,
  // reduce-scatter).
  const double params = dtsim::models::parameters_per_layer(
      dtsim::config::load_scenario_text(s.dump(), "test", dtsim::config::default_data_paths()).model);
  const double expected = 24 * 2 * 4 * (4 * params / (2039e9 * 0.84) + 4 * 3e-6);
  const auto comm = [](const dtsim::results::Result& r) {
    const auto by_label = seconds_by_label(r);
    return by_label.at("zero3_param_all_gather") + by_label.at("zero3_grad_reduce_scatter");
  };
  CHECK(comm(fsdp2) - comm(flat) == doctest::Approx(expected).epsilon(0.01));
  CHECK(fsdp2.iteration_time_s > flat.iteration_time_s);
}

TEST_CASE("on demand, a full recompute gathers the weights again - a selective one does not") {
  // GPT-1.3B: 24 layers, 4 tensor groups per layer at tensor granularity, 2 micro-batches per rank.
  // Full recompute: forward, recompute and backward each gather: 24 x 4 x 2 x 3 = 576 gathers; selective
  // recompute (the attention core has no weights) and prefetch gather twice: 384. Besides, per
  // micro-batch, the embedding and the output layer are gathered for the forward and the backward (not
  // recomputed): 2 x 4 = 8 more; prefetching keeps the output layer from its forward through its
  // backward: 2 x 3 = 6.
  const auto gathers = [](const dtsim::results::Result& r) {
    std::size_t n = 0;
    for (const auto& span : r.trace->spans) {
      if (r.trace->tracks[span.track].rank == 0 && r.trace->labels[span.label] == "zero3_param_all_gather")
        ++n;
    }
    return n;
  };
  json s = zero3_scenario();
  s["parallelism"]["zero3"] = {{"fetch", "on_demand"}, {"granularity", "tensor"}};
  CHECK(gathers(dtsim::testing::evaluate_json(s, true)) == 576 + 8);
  s["training"]["activation_recompute"] = "selective";
  CHECK(gathers(dtsim::testing::evaluate_json(s, true)) == 384 + 8);
  s["training"]["activation_recompute"] = "full";
  s["parallelism"]["zero3"]["fetch"] = "prefetch";
  CHECK(gathers(dtsim::testing::evaluate_json(s, true)) == 384 + 6);
}

TEST_CASE("reports name a ZeRO-3 implementation only when it is not the default") {
  auto s = gpt3_175b(1);
  CHECK(dtsim::config::zero3_label(s.parallelism).empty());
  CHECK(dtsim::config::zero_stage_label(s.parallelism) == "3");
  s.parallelism.zero3.fetch = dtsim::config::Zero3Fetch::on_demand;
  s.parallelism.zero3.buffers = dtsim::config::CollectiveBuffers::list;
  CHECK(dtsim::config::zero3_label(s.parallelism) == "on_demand/layer/list");
  // Every report shows the stage this one way (text summary after "ZeRO-", compare, HTML table).
  CHECK(dtsim::config::zero_stage_label(s.parallelism) == "3 (on_demand/layer/list)");
  s.parallelism.zero3.granularity = dtsim::config::Zero3Granularity::tensor;
  s.parallelism.zero3.persistence_threshold = 1e6;
  CHECK(dtsim::config::zero3_label(s.parallelism) == "on_demand/tensor/list (persistence 1e+06)");
  s.parallelism.zero_stage = 2;  // the block only describes stage 3
  CHECK(dtsim::config::zero3_label(s.parallelism).empty());
  CHECK(dtsim::config::zero_stage_label(s.parallelism) == "2");
}

TEST_CASE("the host calls every ZeRO-3 gather and reduction before it issues the compute after it") {
  // Data parallel only (no tensor- or context-parallel collectives), symmetric: the host calls of the
  // graph (TaskGraph::host_calls, one kernel launch of host time each) are its ZeRO-3 collectives, one
  // per gather and reduction task, each before the next compute task of its rank.
  const auto scenario = dtsim::config::load_scenario_text(zero3_scenario().dump(), "test",
                                                          dtsim::config::default_data_paths());
  const auto lowered = dtsim::parallel::lower(scenario, {});
  const auto& g = lowered.graph;
  std::size_t collectives = 0;
  for (const auto& task : g.tasks()) {
    const std::string& label = g.labels()[task.label];
    collectives += label == "zero3_param_all_gather" || label == "zero3_grad_reduce_scatter";
  }
  std::size_t calls = 0;
  for (const auto& c : g.host_calls()) {
    calls += c.calls;
    CHECK(g.streams()[g.tasks()[c.task].stream].kind == dtsim::graph::StreamKind::compute);
  }
  CHECK(collectives > 0);
  CHECK(calls == collectives);
}
