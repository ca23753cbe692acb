// The pace of a job whose down nodes' work is re-routed to data-parallel peers (recovery "reroute",
// config/failures.hpp; the plan: parallel/reroute.hpp): the failure-free iteration over the iteration
// the engine gives with those nodes down, every rank simulated, on the scenario's network level.
//
// The whole-run simulation (models/failures/goodput.hpp) asks for the nodes its runs have down, which take
// down the stage replicas with a rank on them. A case is how many replicas are down on each stage that has
// any, most first ({2, 1}: two replicas of one stage and one of another), simulated once on a canonical
// layout: the stage with the most down replicas is stage 0, the next stage 1, ..., and the down replicas
// take consecutive data coordinates from 0 across those stages (one per pipeline while there are
// pipelines enough), as failures spread at random over many replicas mostly fall. Which stages and which
// pipelines are down moves the pace by a few percent (first and last stages hold the embedding and output
// layer; two down replicas of one pipeline leave it waiting on two sets of peers); the case does not say.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/scenario.hpp"
#include "models/failures/goodput.hpp"

namespace dtsim::results {

struct Result;

// Why the plan's work cannot be re-routed; std::nullopt when it can: a transformer or MLP model with
// data-parallel replicas (data > 1) that each hold their stage's whole state (ZeRO stage 0 without a
// distributed optimizer), one model chunk per stage, no expert parallelism, at most kMaxReroutedGpus.
std::optional<std::string> reroute_refusal(const config::Scenario& s);

// The most GPUs a re-routed iteration is simulated on (every rank, once per case): reroute_refusal() refuses
// larger plans.
inline constexpr std::int64_t kMaxReroutedGpus = 4096;

// Paces by the down replicas per stage, each simulated once.
class ReroutePaces {
 public:
  // `fault_free`: the plan's result without failures (status ok); must outlive this object.
  explicit ReroutePaces(const Result& fault_free);
  // In (0, 1]: the failure-free iteration over the re-routed one (at most 1: a re-routed job never
  // runs faster than it did); 0 when the re-routed plan cannot run (reason()).
  double operator()(const std::vector<std::int64_t>& down_nodes);
  // The cases simulated, fewest replicas down first.
  std::vector<models::ReroutedCase> cases() const;
  // Why a re-routed iteration could not be simulated; empty when every one was.
  const std::string& reason() const { return reason_; }

 private:
  const Result& fault_free_;
  std::int64_t stages_ = 1;
  std::vector<std::vector<std::int32_t>>
      node_replicas_;  // per node: its stage replicas (data x stages + stage)
  std::int64_t data_ = 1;
  // By (replicas down, down_per_stage).
  std::map<std::pair<std::int64_t, std::vector<std::int64_t>>, double> paces_;
  std::string reason_;
};

}  // namespace dtsim::results
