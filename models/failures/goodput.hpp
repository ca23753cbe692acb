// Goodput over a whole training run: the run simulated at the granularity of failures, checkpoints,
// restarts and repairs (not iterations), many times over seeds (Monte Carlo).
//
// The job must do `failure_free_s` of training at full speed. Failures of each category arrive as a
// Poisson process of rate (failures per unit per 1000 days) x units / 1000 days, where the units are the
// job's GPUs, its nodes, or 1 for the job; the rate holds while the job holds its nodes (not while it waits
// for a spare). A failure of a GPU or a node takes a node, chosen uniformly, out until repair_hours later.
// A category with "effect": "slow" does not stop the job: for its `hours` the job trains at
// category_pace (the engine's iteration time over the iteration with the category's factors; the slowest
// of the episodes under way sets the pace). A stopping failure is followed by config/failures.hpp's
// recovery:
//   restart  the work since the last complete checkpoint is lost; the job waits for a spare node (none
//            when spares are unlimited), then restarts: the category's restart time plus the checkpoint's
//            read time. A failure during a restart starts it over.
//   elastic  the replicas with a rank on a down node stop; the others train on at (active replicas /
//            replicas) of the job's pace after a pause of reconfigure_s (and, when the replicas do not
//            hold whole copies of the state, after rolling back to the last checkpoint and reading it);
//            a repaired node's replicas rejoin with the same pause. A job failure, or one that leaves no
//            replica, restarts as above once a replica's nodes are all up.
//   reroute  as elastic, but the down nodes' work is re-routed to data-parallel peers (stage replicas,
//            parallel/reroute.hpp): the job trains on at reroute_pace(the down nodes) while every pipeline
//            stage keeps a live replica and that pace is positive; otherwise it waits for repairs and
//            restarts as above.
// Training stops for each checkpoint's stall after every `interval_s` of training (synchronous: the write;
// asynchronous: the snapshot, the write running behind it; the checkpoint counts once written).
//
// Each run's wall time splits exactly into
//   wall = failure_free + lost work + degraded + restart + waiting for spares + checkpoint stalls
//          + reconfiguration,
// where lost work is training rolled back and degraded the time training ran below full pace (wall time
// x (1 - pace), pace = active / replicas x the slowest episode's pace). Goodput (effective training time
// ratio) = failure_free / wall. Runs use std::mt19937_64 (its output is fixed by the C++ standard) seeded
// with seed, seed + 1, ...: the same input gives the same numbers everywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "config/failures.hpp"
#include "models/failures/checkpoint.hpp"

namespace dtsim::models {

struct GoodputInput {
  const config::FailureSpec* spec = nullptr;
  double failure_free_s = 0.0;
  double iteration_s = 0.0;  // checkpoints fall between iterations
  std::int64_t gpus = 0;
  std::int64_t nodes = 0;
  // The data-parallel replicas and, per node, the replicas with a rank on it (elastic recovery); for
  // re-routing, the stage replicas (data coordinate x stages + stage) of `stages` pipeline stages.
  std::int64_t replicas = 1;
  std::vector<std::vector<std::int32_t>> node_replicas;
  std::int64_t stages = 1;
  // Re-routing: the job's pace with these nodes down (ascending, at least one, every stage keeping a live
  // replica; 0: it cannot run so). Called at every change of the down nodes.
  std::function<double(const std::vector<std::int64_t>&)> reroute_pace;
  bool replicas_hold_state = false;  // each replica holds a whole copy of weights and optimizer states
  // Per category of spec->categories: the pace while one of its slowdowns lasts (1 for stopping ones).
  std::vector<double> category_pace;
  CheckpointCost checkpoint;
  std::uint64_t seed = 1;
};

// A re-routed job's pace with stage replicas down: `down_per_stage` the counts of down replicas of the
// stages that have any, most first (results/reroute_pace.hpp).
struct ReroutedCase {
  std::vector<std::int64_t> down_per_stage;
  double pace = 0.0;
};

// Percentiles over the runs (nearest rank).
struct Spread {
  double p10 = 0.0;
  double p50 = 0.0;
  double p90 = 0.0;
  double mean = 0.0;
};

struct GoodputEstimate {
  double failure_free_s = 0.0;
  double failures_per_day = 0.0;  // of the whole job, all categories (slowdowns included)
  double mtbf_s = 0.0;            // between failures that stop the job: 1 / their rate
  double interval_s = 0.0;        // training time between checkpoints, whole iterations
  bool interval_optimal = false;  // Daly's optimum (the scenario gave none)
  double restart_s = 0.0;         // mean over failures by rate: restart plus checkpoint read
  CheckpointCost checkpoint;
  double closed_form_ettr = 0.0;  // Kokolis et al.'s E[ETTR] (checkpoint.hpp), restart recovery
  std::int64_t runs = 0;
  // Over the runs.
  Spread wall_s;
  Spread goodput;
  Spread failures;
  // Means over the runs of the parts of the wall time (above).
  double lost_work_s = 0.0;
  double degraded_s = 0.0;
  double restart_total_s = 0.0;
  double spare_wait_s = 0.0;
  double checkpoint_total_s = 0.0;
  double reconfigure_total_s = 0.0;
  std::vector<std::string> category_names;
  std::vector<double> category_failures;  // mean per run, by category
  std::vector<double> category_pace;      // by category: the pace while it lasts (1: a stop)
  // Re-routing: the cases simulated (results/reroute_pace.hpp).
  std::vector<ReroutedCase> reroute_paces;
  std::string reason;                     // why the run does not finish; empty when it does
};

// Throws InternalError on inputs the loader rules out (no categories, zero bandwidths).
GoodputEstimate estimate_goodput(const GoodputInput& in);

}  // namespace dtsim::models
