// From an engine run to a Result's parts (evaluate.cpp, evaluate_dlrm.cpp): the iteration's breakdown
// (the mean over the simulated ranks of their time by category, idle as pipeline bubble), the trace's
// tracks and spans, the message of a plan out of memory, and the result of a plan that cannot run.
#pragma once

#include <string>
#include <vector>

#include "engine/simulate.hpp"
#include "parallel/lower.hpp"
#include "results/result.hpp"

namespace dtsim::results {

Breakdown breakdown_of(const engine::EngineResult& run);
Trace trace_of(const parallel::LoweredGraph& lowered, const engine::EngineResult& run);
// The trace of any task graph whose ranks have these names; the tasks of concurrent streams (delays
// that hold nothing) are left out.
Trace trace_of(const graph::TaskGraph& graph, std::vector<std::string> rank_names, const engine::EngineResult& run);
std::string out_of_memory_reason(const Memory& memory);
// A scenario that cannot run: its reason, nothing simulated.
Result infeasible(const config::Scenario& scenario, std::string reason);

}  // namespace dtsim::results
