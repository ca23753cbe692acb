// The whole pipeline on small scenarios (results/evaluate.hpp), with the shipped profiles.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "core/errors.hpp"
#include "models/transformer/transformer.hpp"
#include "parallel/lower.hpp"
#include "results/evaluate.hpp"
#include "scenario_fixture.hpp"

namespace {

using nlohmann::json;

json base_scenario() {
  return json::parse(R"({
    "schema_version": 1, "name": "small",
    "model": {"preset": "gpt-1.3b"},
    "cluster": {"node": "dgx-a100", "nodes": 2},
    "parallelism": {"data": 4, "tensor": 2, "pipeline": 2},
    "training": {"global_batch_size": 32, "micro_batch_size": 1, "precision": "bf16"}
  })");
}

// Trace spans and their total length on each track named `stream`, by the rank of the track.
struct TrackLoad {
  std::size_t spans = 0;
  std::int64_t ns = 0;
};
std::vector<TrackLoad> load_by_rank(const dtsim::results::Trace& t, const std::string& stream) {
  std::vector<TrackLoad> out(t.rank_names.size());
  for (const auto& span : t.spans) {
    const auto& track = t.tracks[span.track];
    if (track.name != stream) continue;
    ++out[track.rank].spans;
    out[track.rank].ns += span.end_ns - span.start_ns;
  }
  return out;
}

// The base scenario on the interleaved schedule with sequence parallelism, the distributed optimizer
// and full recompute: the case that exercises most of the lowering at once.
json interleaved_scenario() {
  json s = base_scenario();
  s["parallelism"]["schedule"] = "interleaved";
  s["parallelism"]["virtual_stages"] = 2;
  s["parallelism"]["sequence_parallel"] = true;
  s["parallelism"]["distributed_optimizer"] = true;
  s["training"]["activation_recompute"] = "full";
  return s;
}

double breakdown_sum(const dtsim::results::Breakdown& b) {
  return b.compute_s() + b.optimizer_s + b.exposed_comm_s() + b.pipeline_bubble_s + b.host_wait_s;
}

}  // namespace

TEST_CASE("symmetric and every-rank simulations agree when nothing breaks the symmetry") {
  std::vector<json> cases;
  cases.push_back(base_scenario());
  cases.push_back(interleaved_scenario());
  json zero3 = base_scenario();
  zero3["parallelism"] = {{"data", 16}, {"zero_stage", 3}};
  zero3["training"]["micro_batch_size"] = 2;
  cases.push_back(zero3);
  json deepspeed = zero3;  // DeepSpeed's 2021 stage 3: per tensor, on demand, again for the recompute
  deepspeed["parallelism"]["zero3"] = {
      {"fetch", "on_demand"}, {"granularity", "tensor"}, {"buffers", "list"}};
  deepspeed["training"]["activation_recompute"] = "full";
  cases.push_back(deepspeed);
  json context = base_scenario();
  context["parallelism"] = {{"data", 2}, {"tensor", 2}, {"context", 2}, {"pipeline", 2}};
  cases.push_back(context);
  for (auto s : cases) {
    CAPTURE(s.dump());
    s["simulation"] = {{"ranks", "symmetric"}};
    const auto symmetric = dtsim::testing::evaluate_json(s);
    s["simulation"] = {{"ranks", "all"}};
    const auto all = dtsim::testing::evaluate_json(s);
    REQUIRE(symmetric.status == dtsim::results::Status::ok);
    CHECK(all.engine.simulated_ranks == 16);
    CHECK(symmetric.iteration_time_s == doctest::Approx(all.iteration_time_s).epsilon(1e-12));
    CHECK(symmetric.flops.hardware_tflops_per_gpu ==
          doctest::Approx(all.flops.hardware_tflops_per_gpu).epsilon(1e-12));
    CHECK(symmetric.breakdown.pipeline_bubble_s ==
          doctest::Approx(all.breakdown.pipeline_bubble_s).epsilon(1e-9));
  }
}

TEST_CASE("every-rank traces: a collective on every member's track, fused kernels in fewer spans") {
  // Every-rank mode runs each collective as one gang task over its group and each run of kernels with
  // nothing between them as one task: the trace shows the collective on the tensor track of each
  // member with the same spans and times as the symmetric trace shows for the member's stage, and the
  // compute track of each rank busy as long as its stage's, in fewer spans.
  json s = base_scenario();
  s["simulation"] = {{"ranks", "symmetric"}};
  const auto symmetric = dtsim::testing::evaluate_json(s, true);
  s["simulation"] = {{"ranks", "all"}};
  const auto all = dtsim::testing::evaluate_json(s, true);
  REQUIRE(symmetric.trace.has_value());
  REQUIRE(all.trace.has_value());
  const auto sym_tensor = load_by_rank(*symmetric.trace, "tensor_comm");
  const auto sym_compute = load_by_rank(*symmetric.trace, "compute");
  const auto all_tensor = load_by_rank(*all.trace, "tensor_comm");
  const auto all_compute = load_by_rank(*all.trace, "compute");
  REQUIRE(all_tensor.size() == 16);
  // Ranks are numbered tensor fastest, then data, then pipeline: rank r is in stage r / 8.
  for (std::size_t r = 0; r < all_tensor.size(); ++r) {
    CAPTURE(r);
    const std::size_t stage = r / 8;
    CHECK(sym_tensor[stage].spans > 0);
    CHECK(all_tensor[r].spans == sym_tensor[stage].spans);
    CHECK(all_tensor[r].ns == sym_tensor[stage].ns);
    CHECK(all_compute[r].ns == sym_compute[stage].ns);
    CHECK(all_compute[r].spans < sym_compute[stage].spans);
  }
}

TEST_CASE("the breakdown sums to the iteration time") {
  const auto r = dtsim::testing::evaluate_json(base_scenario());
  CHECK(breakdown_sum(r.breakdown) == doctest::Approx(r.iteration_time_s).epsilon(1e-9));
}

// Forward FLOPs per token of a GPT scenario (FFN 4h): a layer's 24 h^2 + 4 s h, of which the attention
// core is 4 s h, and the logits' 2 h V. The model FLOPs of an iteration count layers and logits 3 times.
struct ForwardFlopsPerToken {
  double layers = 0, layer = 0, attention_core = 0, logits = 0;
  double model() const { return 3 * layers * layer + 3 * logits; }
};
ForwardFlopsPerToken forward_flops_per_token(const json& s) {
  const auto spec =
      dtsim::config::load_scenario_text(s.dump(), "t", dtsim::config::default_data_paths()).model;
  const double h = static_cast<double>(spec.hidden_size), sq = static_cast<double>(spec.seq_length);
  return {static_cast<double>(spec.layers), 24 * h * h + 4 * sq * h, 4 * sq * h,
          2 * h * static_cast<double>(spec.vocab_size)};
}

TEST_CASE("hardware FLOPs equal model FLOPs without recompute, and include the recompute pass") {
  // Without recompute every executed FLOP is a model FLOP; full recompute replays each layer's forward:
  // layers count 4 times instead of 3 (logits 3 times in both).
  json s = base_scenario();
  const auto plain = dtsim::testing::evaluate_json(s);
  CHECK(plain.flops.hardware_tflops_per_gpu ==
        doctest::Approx(plain.flops.model_tflops_per_gpu).epsilon(1e-9));
  s["training"]["activation_recompute"] = "full";
  const auto full = dtsim::testing::evaluate_json(s);
  const auto f = forward_flops_per_token(s);
  const double expected_ratio = (f.model() + f.layers * f.layer) / f.model();
  CHECK(full.flops.hfu / full.flops.mfu == doctest::Approx(expected_ratio).epsilon(1e-9));
}

TEST_CASE("selective recompute reruns the attention core, fused or not") {
  // Megatron-Core checkpoints the core attention whatever its kernel, so with flash attention the
  // backward reruns the kernel's forward: the attention core's 4 s h per layer and token count once
  // more in hardware FLOPs, and the recompute time is not zero.
  json s = base_scenario();
  s["training"]["activation_recompute"] = "selective";
  const auto r = dtsim::testing::evaluate_json(s);
  REQUIRE(
      dtsim::config::load_scenario_text(s.dump(), "t", dtsim::config::default_data_paths()).model.attention ==
      dtsim::config::AttentionKind::flash);
  const auto f = forward_flops_per_token(s);
  const double expected_ratio = (f.model() + f.layers * f.attention_core) / f.model();
  CHECK(r.flops.hfu / r.flops.mfu == doctest::Approx(expected_ratio).epsilon(1e-9));
  CHECK(r.breakdown.recompute_s > 0.0);
}

TEST_CASE("same scenario, same numbers") {
  const auto a = dtsim::testing::evaluate_json(base_scenario());
  const auto b = dtsim::testing::evaluate_json(base_scenario());
  CHECK(a.iteration_time_s == b.iteration_time_s);
  CHECK(a.engine.events == b.engine.events);
  CHECK(a.breakdown.exposed_data_comm_s == b.breakdown.exposed_data_comm_s);
}

TEST_CASE("indivisible dimensions are an infeasible result with the reason") {
  json s = base_scenario();
  s["training"]["global_batch_size"] = 30;  // not divisible by data 4 x micro-batch 1
  const auto r = dtsim::testing::evaluate_json(s);
  CHECK(r.status == dtsim::results::Status::infeasible);
  CHECK(r.reason.find("global_batch_size 30 is not divisible") != std::string::npos);
  json t = base_scenario();
  t["parallelism"] = {{"tensor", 16}, {"data", 1}};  // 2 nodes hold 16 GPUs
  t["model"]["heads"] = 8;                           // 8 heads over 16 tensor ranks is not
  t["model"]["kv_heads"] = 8;
  const auto u = dtsim::testing::evaluate_json(t);
  CHECK(u.status == dtsim::results::Status::infeasible);
  CHECK(u.reason.find("heads 8 are not divisible by tensor parallel 16") != std::string::npos);
}

TEST_CASE("plans whose products pass 64 bits are infeasible results, not crashes") {
  constexpr std::int64_t huge = std::int64_t{1} << 62;
  json s = base_scenario();
  s["parallelism"]["virtual_stages"] = huge;  // pipeline 2 x 2^62 chunks passes 64 bits
  s["parallelism"]["schedule"] = "interleaved";
  const auto r = dtsim::testing::evaluate_json(s);
  CHECK(r.status == dtsim::results::Status::infeasible);
  CHECK(r.reason ==
        "layers 24 are fewer than pipeline x virtual_stages = 2 x 4611686018427387904 model chunks less the "
        "two ends (the first and the last chunk may hold only the embedding and the output layer)");
  json t = base_scenario();
  t["training"]["micro_batch_size"] = huge;  // data 4 x 2^62 passes 64 bits
  const auto u = dtsim::testing::evaluate_json(t);
  CHECK(u.status == dtsim::results::Status::infeasible);
  CHECK(
      u.reason ==
      "global_batch_size 32 is not divisible by data parallel x micro_batch_size = 4 x 4611686018427387904");
  // micro-batch 2^34 x seq_length 2^30 = 2^64 tokens: costed in doubles (memory_model.hpp) and GEMM
  // dimensions saturated (transformer.hpp); far out of memory, and its operations far beyond the
  // engine's clock.
  json v = base_scenario();
  v["model"]["seq_length"] = std::int64_t{1} << 30;
  v["training"]["micro_batch_size"] = std::int64_t{1} << 34;
  v["training"]["global_batch_size"] = std::int64_t{1} << 36;  // data 4 x micro-batch
  const auto w = dtsim::testing::evaluate_json(v);
  CHECK(w.status == dtsim::results::Status::infeasible);
  CHECK(w.reason.find("one operation would take") == 0);
  CHECK_FALSE(w.memory.fits);
}

TEST_CASE("an iteration too large to simulate is an infeasible result with the sizes") {
  // Layer passes = 2 (forward, backward) x micro-batches x layers, one simulated rank per stage:
  // global batch 2^31 over data 4 x micro-batch 1 = 2^29 micro-batches; x 24 layers x 2 = 2.58e10,
  // over the limit of 2e8, refused before anything is built.
  json s = base_scenario();
  s["training"]["global_batch_size"] = std::int64_t{1} << 31;
  const auto r = dtsim::testing::evaluate_json(s);
  CHECK(r.status == dtsim::results::Status::infeasible);
  CHECK(r.reason ==
        "too large to simulate: 2.58e+10 layer passes (536870912 micro-batches x 24 layers x forward and "
        "backward), "
        "over dtsim's limit of 200000000; use a smaller global batch");
  CHECK(r.engine.tasks == 0);
  // With every rank simulated, each of the 4 GPUs per stage counts: 8 micro-batches x 24 layers x 2 x 4
  // = 1536 passes, within the limit.
  json t = base_scenario();
  t["simulation"] = {{"ranks", "all"}};
  CHECK(dtsim::testing::evaluate_json(t).status == dtsim::results::Status::ok);
}

TEST_CASE("a flow-level plan past the flow level's size limit is an infeasible result with the reason") {
  // 4,096 DGX A100 nodes are 32,768 GPUs, over the flow level's 16,384 (network/flow_model.hpp).
  json s = base_scenario();
  s["cluster"]["nodes"] = 4096;
  s["parallelism"]["data"] = 8192;
  s["training"]["global_batch_size"] = 8192;
  s["simulation"] = {{"network", "flow"}};
  const auto r = dtsim::testing::evaluate_json(s);
  CHECK(r.status == dtsim::results::Status::infeasible);
  CHECK(r.reason.find("too large to simulate on the flow level: 32768 GPUs (4096 nodes x 8 GPUs)") == 0);
  CHECK(r.engine.tasks == 0);
}

TEST_CASE("a task graph that passes its task limit while it is built is infeasible") {
  const auto scenario =
      dtsim::config::load_scenario_text(base_scenario().dump(), "test", dtsim::config::default_data_paths());
  const auto full = dtsim::parallel::lower(scenario);
  dtsim::parallel::LowerOptions limited;
  limited.max_tasks = static_cast<std::int64_t>(full.graph.tasks().size()) - 1;
  CHECK_THROWS_WITH_AS(
      dtsim::parallel::lower(scenario, limited),
      doctest::Contains("too large to simulate: the iteration's task graph passed dtsim's limit of"),
      dtsim::core::InfeasibleError);
  limited.max_tasks = static_cast<std::int64_t>(full.graph.tasks().size());
  CHECK(dtsim::parallel::lower(scenario, limited).graph.tasks().size() == full.graph.tasks().size());
}

TEST_CASE("the host calls each tensor-parallel collective of the layer programs once") {
  // gpt-1.3b (24 layers), tensor parallel 2 without sequence parallelism, one micro-batch per rank:
  // per layer two all-reduces forward and two backward (attention and MLP; each column-parallel
  // backward reduction beside its weight-gradient GEMM is one call), the embedding's all-reduce, the
  // cross-entropy's three and the logits' gradient reduction: 4 x 24 + 1 + 3 + 1 = 101 calls, each
  // before the compute task after it (none ends a step).
  json s = base_scenario();
  s["parallelism"] = {{"data", 8}, {"tensor", 2}, {"sequence_parallel", false}};
  s["training"]["global_batch_size"] = 8;
  const auto scenario =
      dtsim::config::load_scenario_text(s.dump(), "test", dtsim::config::default_data_paths());
  const auto lowered = dtsim::parallel::lower(scenario);
  std::uint32_t calls = 0;
  for (const auto& c : lowered.graph.host_calls()) calls += c.calls;
  CHECK(calls == 101);
}

TEST_CASE("a duration beyond the engine's clock is an infeasible result") {
  // 1e-12 Gb/s NICs: a data-parallel all-reduce of megabytes would take ~1e19 s, beyond 2^56 ns.
  json s = base_scenario();
  s["cluster"]["network"] = {{"nic_gbps", 1e-12}};
  const auto r = dtsim::testing::evaluate_json(s);
  CHECK(r.status == dtsim::results::Status::infeasible);
  CHECK(r.reason.find("one operation would take") == 0);
  CHECK(r.reason.find("beyond the 7.21e+07 s (about 2.3 years) dtsim can time") != std::string::npos);
}

TEST_CASE("GPT-3 175B without model parallelism does not fit on 80 GB GPUs") {
  json s = base_scenario();
  s["model"] = {{"preset", "gpt3-175b"}};
  s["cluster"]["nodes"] = 8;
  s["parallelism"] = {{"data", 64}};
  s["training"] = {{"global_batch_size", 64}, {"activation_recompute", "full"}};
  const auto r = dtsim::testing::evaluate_json(s);
  CHECK(r.status == dtsim::results::Status::infeasible);
  CHECK_FALSE(r.memory.fits);
  CHECK(r.reason.find("out of memory") != std::string::npos);
  // 175e9 parameters x (2 B weights + 4 B gradients + 12 B Adam states) = 3.15 TB, far over 80 GB.
  CHECK(r.memory.peak_bytes_per_gpu > 3e12);
}

TEST_CASE("more pipeline micro-batches shrink the bubble: (p - 1) / m") {
  // 1F1B over p = 2 stages: the idle share falls as the number of micro-batches grows.
  json s = base_scenario();
  s["training"]["global_batch_size"] = 8;  // m = 2 per replica
  const auto few = dtsim::testing::evaluate_json(s);
  s["training"]["global_batch_size"] = 64;  // m = 16
  const auto many = dtsim::testing::evaluate_json(s);
  CHECK(few.breakdown.pipeline_bubble_s / few.iteration_time_s >
        2 * many.breakdown.pipeline_bubble_s / many.iteration_time_s);
}

TEST_CASE("rank placement: tensor groups spread over nodes pay for the network") {
  // Default order tp-cp-dp-pp keeps the 8 tensor ranks of a group on one node's NVSwitch and puts
  // the 2 pipeline stages on different nodes; with pp-tp-cp-dp the stages come first, so each tensor
  // group spans 2 nodes and its all-reduces cross InfiniBand: the iteration is slower. Micro-batches of
  // 8 sequences make the all-reduces 67 MB, where bandwidth rather than per-step latency decides.
  json s = base_scenario();
  s["parallelism"] = {{"data", 1}, {"tensor", 8}, {"pipeline", 2}};
  s["training"]["micro_batch_size"] = 8;
  const auto inside = dtsim::testing::evaluate_json(s);
  s["parallelism"]["order"] = "pp-tp-cp-dp";
  const auto spread = dtsim::testing::evaluate_json(s);
  CHECK(spread.breakdown.exposed_tensor_comm_s > inside.breakdown.exposed_tensor_comm_s);
  CHECK(spread.iteration_time_s > inside.iteration_time_s);
  // Every-rank mode follows the same placement.
  s["simulation"] = {{"ranks", "all"}};
  CHECK(dtsim::testing::evaluate_json(s).iteration_time_s ==
        doctest::Approx(spread.iteration_time_s).epsilon(1e-12));
}

TEST_CASE("blocking pipeline transfers hold the sender back - every schedule stays free of deadlock") {
  for (const char* schedule : {"1f1b", "gpipe", "interleaved"}) {
    CAPTURE(schedule);
    json s = base_scenario();
    s["parallelism"] = {{"data", 2}, {"tensor", 2}, {"pipeline", 4}, {"schedule", schedule}};
    if (std::string(schedule) == "interleaved") s["parallelism"]["virtual_stages"] = 2;
    const auto overlapped = dtsim::testing::evaluate_json(s);
    s["parallelism"]["pipeline_comm"] = "blocking";
    const auto blocking = dtsim::testing::evaluate_json(s);
    REQUIRE(blocking.status == dtsim::results::Status::ok);
    CHECK(blocking.iteration_time_s >= overlapped.iteration_time_s);
    s["simulation"] = {{"ranks", "all"}};
    CHECK(dtsim::testing::evaluate_json(s).status == dtsim::results::Status::ok);
  }
}

// On the 2-node layout above, stages 0-1 and 2-3 share a node and only the transfers between stages 1
// and 2 cross nodes. Symmetric mode costs each stage's transfers by the slowest of that stage's own
// (group_layouts.hpp); it once started that comparison from the first layout of the table (stage 0's
// transfer back to stage 3, across nodes), so stage 1's gradients to stage 0 were costed across nodes
// (1.65 against 1.17 ms of exposed transfers, 0.3% on the iteration). The two modes agree exactly.
TEST_CASE("blocking pipeline transfers: every-rank mode agrees with symmetric mode") {
  for (const char* schedule : {"1f1b", "gpipe", "interleaved"}) {
    CAPTURE(schedule);
    json s = base_scenario();
    s["parallelism"] = {{"data", 2}, {"tensor", 2}, {"pipeline", 4}, {"schedule", schedule},
                        {"pipeline_comm", "blocking"}};
    if (std::string(schedule) == "interleaved") s["parallelism"]["virtual_stages"] = 2;
    const auto symmetric = dtsim::testing::evaluate_json(s);
    s["simulation"] = {{"ranks", "all"}};
    CHECK(dtsim::testing::evaluate_json(s).iteration_time_s ==
          doctest::Approx(symmetric.iteration_time_s).epsilon(1e-12));
  }
}

TEST_CASE("backward tensor-parallel collectives beside the GEMMs hide behind them - every-rank mode agrees") {
  // A column-parallel backward's data-gradient all-reduce (with sequence parallelism: the input
  // re-gather and the reduce-scatter) runs beside a GEMM that does not need it, instead of after both
  // GEMMs: the tensor-parallel time left exposed shrinks and the iteration cannot grow. The same holds
  // with every rank simulated, to the nanosecond.
  for (const bool sp : {false, true}) {
    CAPTURE(sp);
    json s = base_scenario();
    s["parallelism"]["sequence_parallel"] = sp;
    s["parallelism"]["tp_comm_overlap"] = false;
    const auto beside = dtsim::testing::evaluate_json(s);
    s["parallelism"]["tp_backward_overlap"] = false;
    const auto blocking = dtsim::testing::evaluate_json(s);
    REQUIRE(beside.status == dtsim::results::Status::ok);
    CHECK(beside.iteration_time_s <= blocking.iteration_time_s);
    CHECK(beside.breakdown.exposed_tensor_comm_s < blocking.breakdown.exposed_tensor_comm_s);
    s["parallelism"]["tp_backward_overlap"] = true;
    s["simulation"] = {{"ranks", "all"}};
    CHECK(dtsim::testing::evaluate_json(s).iteration_time_s ==
          doctest::Approx(beside.iteration_time_s).epsilon(1e-12));
  }
}

TEST_CASE("fused kernels in symmetric mode: the same iteration, breakdown and FLOPs in fewer tasks") {
  // parallel::LowerOptions::fuse_kernels runs each run of back-to-back kernels as one task whose
  // kernels the engine times one by one (overlap slowdown included): every start and end on every
  // stream is the same, so the makespan and each category's busy and exposed time are equal to the
  // nanosecond; only the task and event counts shrink. Cases cover the overlapped TP communication
  // (sequence parallel, userbuffers), recompute, the sharded optimizer's overlapped gathers, ZeRO-3
  // gathers per layer and, on demand, per tensor, blocking pipeline transfers and the interleaved schedule.
  std::vector<json> cases;
  cases.push_back(base_scenario());
  cases.push_back(interleaved_scenario());
  json overlap = base_scenario();
  overlap["parallelism"]["sequence_parallel"] = true;
  overlap["parallelism"]["tp_comm_overlap"] = true;
  overlap["parallelism"]["pipeline_comm"] = "blocking";
  overlap["parallelism"]["distributed_optimizer"] = true;
  overlap["training"]["activation_recompute"] = "selective";
  overlap["model"]["attention"] = "standard";
  cases.push_back(overlap);
  json zero3 = base_scenario();
  zero3["parallelism"] = {{"data", 16}, {"zero_stage", 3}};
  zero3["training"]["micro_batch_size"] = 2;
  cases.push_back(zero3);
  json deepspeed = zero3;  // DeepSpeed's 2021 stage 3: per tensor, on demand, again for the recompute
  deepspeed["parallelism"]["zero3"] = {
      {"fetch", "on_demand"}, {"granularity", "tensor"}, {"buffers", "list"}};
  deepspeed["training"]["activation_recompute"] = "full";
  cases.push_back(deepspeed);
  json context = base_scenario();
  context["parallelism"] = {{"data", 2}, {"tensor", 2}, {"context", 2}, {"pipeline", 2}};
  cases.push_back(context);
  // Small kernels the host cannot issue as fast as they run (Megatron-DeepSpeed's scripted kernels
  // and per-tensor gradient additions): fused runs pause for the host inside.
  json host_bound = base_scenario();
  host_bound["software"] = "megatron-deepspeed-2023";
  host_bound["parallelism"] = {{"data", 4}, {"tensor", 2}, {"pipeline", 2}};
  host_bound["training"]["activation_recompute"] = "full";
  cases.push_back(host_bound);
  for (const auto& s : cases) {
    CAPTURE(s.dump());
    const auto scenario =
        dtsim::config::load_scenario_text(s.dump(), "test", dtsim::config::default_data_paths());
    const auto plain = dtsim::results::evaluate(scenario, {});
    const auto fused = dtsim::results::evaluate(scenario, {.trace = false, .fuse_kernels = true});
    REQUIRE(plain.status == dtsim::results::Status::ok);
    CHECK(fused.iteration_time_s == plain.iteration_time_s);
    const auto& a = plain.breakdown;
    const auto& b = fused.breakdown;
    CHECK(b.forward_s == a.forward_s);
    CHECK(b.backward_s == a.backward_s);
    CHECK(b.recompute_s == a.recompute_s);
    CHECK(b.optimizer_s == a.optimizer_s);
    CHECK(b.exposed_tensor_comm_s == a.exposed_tensor_comm_s);
    CHECK(b.exposed_context_comm_s == a.exposed_context_comm_s);
    CHECK(b.exposed_pipeline_comm_s == a.exposed_pipeline_comm_s);
    CHECK(b.exposed_data_comm_s == a.exposed_data_comm_s);
    CHECK(b.pipeline_bubble_s == a.pipeline_bubble_s);
    CHECK(fused.flops.hfu == doctest::Approx(plain.flops.hfu).epsilon(1e-12));
    CHECK(fused.engine.tasks < plain.engine.tasks);
  }
}
