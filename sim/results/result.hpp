// The plain record of one evaluated scenario (Result v1; README.md documents the JSON form). Reports
// render it; they compute nothing. Every number here comes from the engine, the models and the profiles.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/scenario.hpp"
#include "engine/simulate.hpp"
#include "graph/task_graph.hpp"
#include "models/dlrm/remote_servers.hpp"
#include "results/data_parallel_result.hpp"
#include "results/expected_error.hpp"
#include "models/failures/goodput.hpp"
#include "models/input/input_pipeline.hpp"

namespace dtsim::results {

enum class Status { ok, infeasible };

struct Throughput {
  double samples_per_s = 0.0;
  double tokens_per_s = 0.0;
};

// FLOP rates per GPU. Model FLOPs exclude recompute; hardware FLOPs include it. Peaks are dense and
// match the training precision.
struct Flops {
  double model_tflops_per_gpu = 0.0;
  double hardware_tflops_per_gpu = 0.0;
  double mfu = 0.0;
  double hfu = 0.0;
  double peak_tflops_per_gpu = 0.0;
};

// Where one iteration's time goes (mean over the simulated ranks); the parts sum to the iteration time.
struct Breakdown {
  double forward_s = 0.0;
  double backward_s = 0.0;
  double recompute_s = 0.0;
  double optimizer_s = 0.0;
  double exposed_tensor_comm_s = 0.0;
  double exposed_context_comm_s = 0.0;
  double exposed_pipeline_comm_s = 0.0;
  double exposed_data_comm_s = 0.0;
  double exposed_embedding_comm_s = 0.0;  // sharded embeddings' exchanges (models/dlrm)
  double exposed_expert_comm_s = 0.0;     // mixture-of-experts token dispatch and combine
  double pipeline_bubble_s = 0.0;  // idle: nothing to run (pipeline fill/drain, waiting on peers)
  double host_wait_s = 0.0;        // idle: the next kernel not yet issued by the host
  double data_stall_s = 0.0;       // idle but for the input pipeline's load (models/input)
  double compute_s() const { return forward_s + backward_s + recompute_s; }
  double exposed_comm_s() const {
    return exposed_tensor_comm_s + exposed_context_comm_s + exposed_pipeline_comm_s + exposed_data_comm_s +
           exposed_embedding_comm_s + exposed_expert_comm_s;
  }
};

// One part of a breakdown, as every report names it: `key` in JSON (CSV adds "_s"), `label` in the
// text summary, `short_label` in the HTML report's chart and table. `optional`: the text summary leaves
// the row out while it is 0 (parts only some workloads have).
struct BreakdownPart {
  double Breakdown::* value;
  const char* key;
  const char* label;
  const char* short_label;
  bool optional = false;
};

// Every part of a breakdown, in the order reports list them; code that treats them alike (weighted
// sums of several breakdowns, report columns) iterates this table.
inline constexpr std::array<BreakdownPart, 13> kBreakdownParts{{
    {&Breakdown::forward_s, "forward", "forward", "forward"},
    {&Breakdown::backward_s, "backward", "backward", "backward"},
    {&Breakdown::recompute_s, "recompute", "recompute", "recompute"},
    {&Breakdown::optimizer_s, "optimizer", "optimizer", "optimizer"},
    {&Breakdown::exposed_tensor_comm_s, "exposed_tensor_comm", "exposed tensor comm", "exposed TP comm"},
    {&Breakdown::exposed_context_comm_s, "exposed_context_comm", "exposed context comm", "exposed CP comm"},
    {&Breakdown::exposed_pipeline_comm_s, "exposed_pipeline_comm", "exposed pipeline comm",
     "exposed PP comm"},
    {&Breakdown::exposed_data_comm_s, "exposed_data_comm", "exposed data comm", "exposed DP comm"},
    {&Breakdown::exposed_embedding_comm_s, "exposed_embedding_comm", "exposed embedding comm",
     "exposed embedding comm", true},
    {&Breakdown::exposed_expert_comm_s, "exposed_expert_comm", "exposed expert comm", "exposed EP comm",
     true},
    {&Breakdown::pipeline_bubble_s, "pipeline_bubble", "pipeline bubble", "pipeline bubble"},
    {&Breakdown::host_wait_s, "host_wait", "waiting for the host", "waiting for the host", true},
    {&Breakdown::data_stall_s, "data_stall", "waiting for input data", "data stall", true},
}};

// Per-GPU memory of the most loaded rank (the first pipeline stage), by part.
struct Memory {
  double weights_bytes = 0.0;
  double gradients_bytes = 0.0;
  double optimizer_bytes = 0.0;
  double activations_bytes = 0.0;
  double buffers_bytes = 0.0;
  double peak_bytes_per_gpu = 0.0;
  double capacity_bytes_per_gpu = 0.0;
  bool fits = true;
};

struct EngineStats {
  std::uint64_t events = 0;
  std::uint64_t tasks = 0;
  std::uint32_t simulated_ranks = 0;
  double wall_s = 0.0;
};

// A timeline of the run for Chrome-trace/Perfetto output: one track per simulated rank and stream.
struct TraceTrack {
  std::uint32_t rank = 0;  // process id in the trace
  std::string name;        // thread name: the stream
};
struct TraceSpan {
  std::uint32_t track = 0;
  std::uint32_t label = 0;  // index into Trace::labels
  graph::Category category = graph::Category::forward;
  std::int32_t micro_batch = -1;
  core::TimeNs start_ns = 0;
  core::TimeNs end_ns = 0;
};
struct Trace {
  std::vector<std::string> rank_names;  // per simulated rank
  std::vector<TraceTrack> tracks;
  std::vector<std::string> labels;
  std::vector<TraceSpan> spans;
};

// Iteration time at the slow and fast ends of the calibration spread (results/interval.hpp).
struct Interval {
  double low_s = 0.0;   // profiles at their 90th-percentile throughput
  double high_s = 0.0;  // profiles at their 10th-percentile throughput
};

// Compute durations calibrated to a measured one-GPU throughput (training.measured_single_gpu;
// results/compute_calibration.hpp): every compute duration of the run was divided by `factor`.
struct ComputeCalibration {
  double factor = 1.0;                   // predicted / measured one-GPU time per iteration
  double measured_samples_per_s = 0.0;   // the scenario's measurement
  double predicted_samples_per_s = 0.0;  // the one-GPU copy as profiled (before the factor)
  std::string source;                    // the measurement's source, as given
};

// Iteration to iteration spread under jittery GPUs (cluster.speed_factors jitter_cv): the sampled
// iterations' times; the result's iteration time, throughput, FLOP rates and breakdown are their means.
struct Jitter {
  std::int64_t iterations = 0;
  Distribution iteration_s;  // mean, nearest-rank p50 and p99, max over the samples
};

// A DLRM's embedding tables as the plan placed them (parallel/embedding_shards.hpp).
struct EmbeddingSummary {
  // Tables by sharding type, in the order of config::kEmbeddingShardings.
  std::array<std::int64_t, config::kEmbeddingShardings.size()> tables{};
  double ids_per_gpu_max = 0.0;   // ids looked up per iteration on the busiest GPU
  double ids_per_gpu_mean = 0.0;  // and on the mean GPU (max / mean: the lookup imbalance)
  double hbm_bytes_max = 0.0;     // embedding shards' weights, states and caches on the fullest GPU
  double host_bytes_per_node_max = 0.0;  // shards in host memory on the fullest node
  double cache_hit_rate = 1.0;    // ids served from HBM over all ids (1 without a host tier)
  double pooled_alltoall_bytes = 0.0;   // the pooled values' all-to-all (CommOp bytes), each way
  // The remote placement (models/dlrm/remote_servers.hpp): the tables on the parameter servers (not
  // counted in `tables`), each GPU's traffic with them, its exchanges' times and what limits them, and
  // the servers the plan needs.
  struct Remote {
    std::int64_t tables = 0;
    std::int64_t servers = 0;
    double resident_bytes = 0.0;  // rows and optimizer states on all servers together
    models::RemoteTraffic traffic;
    models::RemoteTiming timing;
    std::vector<models::ResourceNeed> needs;
  };
  std::optional<Remote> remote;
};

struct Result {
  config::Scenario scenario;
  Status status = Status::ok;
  std::string reason;  // why infeasible; empty when ok
  double iteration_time_s = 0.0;
  Throughput throughput;
  Flops flops;
  Breakdown breakdown;
  Memory memory;
  EngineStats engine;
  std::optional<Trace> trace;                      // present when a trace was asked for
  std::optional<DataParallelStats> data_parallel;  // layer-table workloads
  std::optional<ConvergenceResult> convergence;    // layer-table workloads
  std::optional<Interval> interval;                // present when the profiles carry a calibration spread
  std::optional<ComputeCalibration> compute_calibration;  // present with training.measured_single_gpu
  std::optional<Jitter> jitter;                    // present when speed factors state jitter
  std::optional<EmbeddingSummary> embeddings;      // DLRM models
  // The closest validated regime's band (expected_error.hpp): set by the commands that report a
  // prediction (run, compare, sweep), absent where no regime matches or none was looked up.
  std::optional<ExpectedError> expected_error;
  // Goodput and time to train under the scenario's failures (results/goodput.hpp); absent without them.
  std::optional<models::GoodputEstimate> goodput;
  // The input pipeline's rate and what limits it (models/input/input_pipeline.hpp), and what it needs
  // to keep up with the GPUs; absent without one.
  std::optional<models::InputRate> input;
  std::optional<models::InputSizing> input_sizing;
};

const char* to_string(Status s);

}  // namespace dtsim::results
