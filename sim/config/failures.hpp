// Failures over a whole training run (scenario key "failures"; docs/failures.md "Failures and goodput"): how
// often the cluster's parts fail, what a failure costs, how state is checkpointed and how the job recovers.
// models/failures/ turns it into goodput and time to train; this file is the typed form only.
//
// A failure category counts failures per unit and per 1000 days: per GPU, per node, or per job (one
// count for the whole job, whatever its size). A GPU or node failure takes its node out of the job
// until it is repaired; a job failure (a software fault) does not. Every failure stops the job:
//   restart  the job restarts from its last complete checkpoint, on a spare node when one is ready (the
//            failed node goes to repair for repair_hours and then joins the spares), else after a repair
//            completes. Unlimited spares (spare_nodes absent): a replacement is always ready.
//   elastic  a GPU or node failure removes the data-parallel replicas with a rank on that node; the
//            others carry on after reconfigure_s, each at its own pace (the global batch shrinks with
//            them), from their own state where the replicas hold whole copies (ZeRO stage 0 without a
//            distributed optimizer), else from the last checkpoint; the replicas rejoin when the node is
//            repaired. A job failure, or the loss of every replica, restarts as above.
//   reroute  a GPU or node failure re-routes the micro-batches of the failed node's ranks to their
//            data-parallel peers at the same pipeline stage, which run them in their schedule's bubbles
//            (ReCycle: Gandhi et al., SOSP 2024; parallel/reroute.hpp); the job trains on after
//            reconfigure_s at the pace the engine gives the re-routed iteration, with its global batch,
//            from its own state (the plan must keep whole copies of it: ZeRO stage 0 without a
//            distributed optimizer), until the node is repaired; a stage left without a live replica
//            waits for a repair and restarts as above.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::config {

enum class FailureUnit { gpu, node, job };
// What a failure does: stop the job (it recovers as below), or slow it for a while (a GPU held back by
// its clocks, a NIC that came up degraded) until it is fixed, the job running on at the pace the engine
// gives a cluster whose GPUs (or NICs) all run at that factor: a synchronous job waits for its slowest
// GPU at every collective, and a ring or tree across nodes moves at its slowest NIC's pace.
enum class FailureEffect { stop, slow };
enum class Recovery { restart, elastic, reroute };

struct FailureCategory {
  std::string name;
  FailureUnit per = FailureUnit::node;
  double failures_per_1000_days = 0.0;  // per unit
  std::optional<double> restart_s;      // this category's restart time; absent: the block's restart_s
  FailureEffect effect = FailureEffect::stop;
  double compute = 1.0;  // slow: the GPU's speed factor, in (0, 1]
  double nic = 1.0;      // slow: the node's NIC bandwidth factor, in (0, 1]
  double hours = 0.0;    // slow: how long until it is fixed
};

// Where checkpoints go: shared storage, or the host memory of a peer node (each node sends its GPUs'
// states over its NICs to a peer that keeps them beside its own, as Gemini does: Wang et al., "GEMINI:
// Fast Failure Recovery in Distributed Training with In-Memory Checkpoints", SOSP 2023). A peer-memory
// checkpoint is lost only when a node and the peer holding its copy fail together, which is not modelled.
enum class CheckpointTarget { storage, peer_memory };

struct CheckpointSpec {
  CheckpointTarget target = CheckpointTarget::storage;
  std::optional<double> interval_s;  // training time between checkpoints; absent: Daly's optimum
  double write_gbytes_per_s = 0.0;   // storage: aggregate bandwidth the job writes at
  double read_gbytes_per_s = 0.0;    // storage: aggregate bandwidth a restart reads at (default: the write's)
  // Asynchronous: training stalls only while each GPU copies its state to host memory over PCIe; the
  // write to storage runs behind it and the checkpoint counts once written.
  bool asynchronous = false;
  double snapshot_gbytes_per_s = 0.0;  // per GPU, GPU to host memory (PCIe); asynchronous only
};

struct FailureSpec {
  std::string preset;  // hardware_profiles/failures id, "" when none
  std::string preset_source;
  std::vector<FailureCategory> categories;  // the preset's, then the scenario's own
  double restart_s = 0.0;                   // failure to training resumed, checkpoint read excluded
  CheckpointSpec checkpoint;
  Recovery recovery = Recovery::restart;
  std::optional<std::int64_t> spare_nodes;  // absent: a spare is always ready
  std::optional<double> repair_hours;       // required with spare_nodes or elastic
  // Elastic and reroute: the pause per change of the nodes the job runs on. Restart does not use it (a
  // sweep may compare recoveries with it set).
  double reconfigure_s = 0.0;
  // The run's length, one of: failure-free days of training, iterations, or tokens. Absent on a
  // layer-table workload with a convergence target (its time to target), and in a plan (the plan's).
  std::optional<double> train_days;
  std::optional<double> train_steps;
  std::optional<double> train_tokens;
  std::int64_t runs = 200;  // Monte Carlo runs (seeds simulation.seed, +1, ...)
};

const char* to_string(FailureUnit u);
const char* to_string(Recovery r);
const char* to_string(FailureEffect e);
const char* to_string(CheckpointTarget t);

// The most runs a scenario may ask for, and the most failures one run may simulate before it is given
// up as not converging (the failure rate outruns the checkpoint interval).
inline constexpr std::int64_t kMaxFailureRuns = 100000;

}  // namespace dtsim::config
