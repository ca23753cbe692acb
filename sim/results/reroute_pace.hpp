// The pace of a job whose down nodes' work is re-routed to data-parallel peers (recovery "reroute",
// config/failures.hpp; the plan: parallel/reroute.hpp): the failure-free iteration over the iteration
// the engine gives with those nodes down, every rank simulated, on the scenario's network level.
//
// n failures stand for n nodes down spread evenly over the cluster (nodes floor(i x nodes / n), i < n),
// since the whole-run simulation (models/failures/goodput.hpp) asks for a pace by the number of nodes
// down, not by which: a stage whose replicas are all down makes it wait there instead.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/scenario.hpp"

namespace dtsim::results {

struct Result;

// Why the plan's work cannot be re-routed; std::nullopt when it can: a transformer or MLP model with
// data-parallel replicas (data > 1) that each hold their stage's whole state (ZeRO stage 0 without a
// distributed optimizer), one model chunk per stage, and no expert parallelism.
std::optional<std::string> reroute_refusal(const config::Scenario& s);

// The down nodes that stand for `down` failures among `nodes`.
std::vector<std::int64_t> spread_down_nodes(std::int64_t nodes, std::int64_t down);

// Paces by the number of nodes down, each simulated once.
class ReroutePaces {
 public:
  // `fault_free`: the plan's result without failures (status ok); must outlive this object.
  explicit ReroutePaces(const Result& fault_free) : fault_free_(fault_free) {}
  // In (0, 1]: the failure-free iteration over the re-routed one (at most 1: a re-routed job never
  // runs faster than it did); 0 when the re-routed plan cannot run (a stage without a live replica,
  // a graph too large to simulate).
  double operator()(std::int64_t down);
  // (nodes down, pace) of every count asked for, fewest down first.
  std::vector<std::pair<std::int64_t, double>> asked() const { return {paces_.begin(), paces_.end()}; }

 private:
  const Result& fault_free_;
  std::map<std::int64_t, double> paces_;
};

}  // namespace dtsim::results
