// The pace of a job whose down nodes' work is re-routed to data-parallel peers (recovery "reroute",
// config/failures.hpp; the plan: parallel/reroute.hpp): the failure-free iteration over the iteration
// the engine gives with those nodes down, every rank simulated, on the scenario's network level.
//
// The whole-run simulation (models/failures/goodput.hpp) asks for the nodes its runs have down. Data-parallel
// replicas are alike, so the pace depends on how many replicas of each stage are down: the first set of
// nodes with a given count per stage is simulated, and the others with the same counts take its pace.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
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

// For each node, the stage replicas (data coordinate x stages + stage) with a rank on it.
std::vector<std::vector<std::int32_t>> node_stage_replicas(const config::Scenario& s);

// Paces by the down replicas per stage, each simulated once.
class ReroutePaces {
 public:
  // `fault_free`: the plan's result without failures (status ok); must outlive this object.
  explicit ReroutePaces(const Result& fault_free);
  // In (0, 1]: the failure-free iteration over the re-routed one (at most 1: a re-routed job never
  // runs faster than it did); 0 when the re-routed plan cannot run (reason()).
  double operator()(const std::vector<std::int64_t>& down_nodes);
  // The cases simulated, fewest nodes down first.
  std::vector<models::ReroutedCase> cases() const;
  // Why a re-routed iteration could not be simulated; empty when every one was.
  const std::string& reason() const { return reason_; }

 private:
  const Result& fault_free_;
  std::int64_t stages_ = 1;
  std::vector<std::vector<std::int32_t>>
      node_replicas_;  // per node: its stage replicas (data x stages + stage)
  std::map<std::vector<std::int64_t>, models::ReroutedCase> cases_;
  std::string reason_;
};

}  // namespace dtsim::results
